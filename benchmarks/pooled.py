"""A baseline recorded from several machine starts (perfgate.lifecycle.pooled), against one of a
single start: false alarms and detection of the gate, checks of two runs.

The gate starts with two runs or more of each GPU kind take turns: a baseline from three of
them (each start's runs pooled), checked against every other start (its first two runs
together, `perfgate check -c RUN1 -c RUN2`); and the baseline of the one start of three runs
(h100-j, h200-e) checked against every start the trios are checked against. Injections as in
benchmarks/detection.py: +5% duration on kernels of 20 us or more and on kernels of 10-20 us,
+3% whole-program time (judged where the unchanged check passed).

    python benchmarks/pooled.py                 # tuning starts, every rotation
    python benchmarks/pooled.py --held-back     # the sealed starts against tuning baselines
    python benchmarks/pooled.py --moves         # the floors' data: every trio of tuning starts
    python benchmarks/pooled.py --four-runs [--held-back] [--moves]   # checks of four runs

--moves: every three tuning starts of a kind pool a baseline, checked against every other
tuning start, its first two runs together and each run alone; a move is the check's judged
duration change (after the common factor where it applied), counted where it is past the
kernel's own bound parts (K x the spread within a start, the across-starts term): what the
floor alone must cover. The floors of perfgate.metrics.timefloors are the largest such move
x1.15 or more, one for 10-20 us and one from 20 us.

--four-runs: the cards captured with four runs each (FOUR_RUN_CARDS), checked two and four
runs at a time against the pooled tuning trios and against a baseline of four-run cards (the
other cards of their host; for the sealed cards, the tuning cards of their kind); with
--held-back the sealed cards of other hosts instead (FOUR_RUN_SEALED, evaluated once for the
four-run floor of kernels; PROGRAM_SEALED, for the four-run program floor), and with --moves
the four-run floors' data (perfgate.metrics.timefloors.FOUR_RUN_FLOOR_POINTS, and the
whole program's time of every evaluated four-run card for FOUR_RUN_PROGRAM_FLOORS).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from detection import (  # noqa: E402
    _CLOCK_BASES,
    DURATION,
    GATE,
    Injection,
    RunSet,
    Scale,
    Scope,
    Workload,
    _baseline,
    _duration,
    _injected,
    _read,
    _targets,
    _unchanged,
    baseline_capture,
)

import perfgate.verdicts.check as check_module  # noqa: E402
from perfgate.baseline.model import Baseline  # noqa: E402
from perfgate.judge.comparison import State  # noqa: E402
from perfgate.lifecycle.pooled import starts_of  # noqa: E402
from perfgate.lifecycle.program import record_program  # noqa: E402
from perfgate.metrics.timefloors import four_run_program_floor  # noqa: E402
from perfgate.verdicts.check import check  # noqa: E402
from perfgate.verdicts.model import ProgramVerdict  # noqa: E402
from perfgate.verdicts.program import judge_program  # noqa: E402

# The gate starts of each kind with two runs of the field workloads (tests/data/field/gate):
# every one is tuning data for the pooled rule. h100-l (one run) checks nothing but may pool.
TUNING = {
    "h100": ("h100-j", "h100-k", "h100-o", "h100-p", "h100-s", "h100-t", "h100-u"),
    "h200": ("h200-e", "h200-f", "h200-g", "h200-h", "h200-i", "h200-j", "h200-k", "h200-l"),
}
# The start of three runs of each kind: the baseline of one start that the gate had before.
ONE_START = {"h100": "h100-j", "h200": "h200-e"}
# Captured while the pooled rule was built, sealed until it was fixed: evaluated once.
SEALED = {"h100": ("h100-v", "h100-w"), "h200": ("h200-m", "h200-n", "h200-o")}
MID = Injection(
    "+5% duration (10-20 us)", "duration", Scale(("gpu__time_duration.sum",), 1.05), Scope.LONG
)
PROGRAM_STEP = 1.03
PROGRAM = Injection(
    "+3% program time", "", Scale(("gpu__time_duration.sum",), PROGRAM_STEP), Scope.PROGRAM
)


def runs_of(start: str, workload: str, most: int = 3) -> tuple[Path, ...]:
    return tuple(
        p for i in range(1, most + 1) if (p := GATE / start / f"{workload}-run{i}.csv.gz").exists()
    )


@dataclass
class Tally:
    checks: int = 0
    failed: int = 0  # checks exit != 0 for a false alarm (not an autotuner's choice)
    alarms: int = 0  # kernels failing on an unchanged build, not the autotuner's
    tuned: int = 0  # checks failed by an autotuner's choice alone
    caught: dict[str, list[int]] = field(default_factory=dict)  # injection: [caught, tried]
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, hit: bool) -> None:
        c = self.caught.setdefault(name, [0, 0])
        c[0] += hit
        c[1] += 1


def evaluate(w: Workload, tally: Tally) -> None:
    base = _baseline(w.baseline_runs)
    for runs in w.other_start_runs:
        cap = _read(runs)
        result = check(base, cap)
        alarms, missing, chose, lines = _unchanged(w, cap, result)
        code = int(result.exit_code)
        tally.checks += 1
        tally.alarms += alarms
        tally.failed += code != 0 and (alarms > 0 or (missing == 0 and chose == 0))
        tally.tuned += code != 0 and alarms == 0 and chose > 0
        tally.notes += lines
        if code == 0:
            hit = int(check(base, PROGRAM.change(cap, frozenset())).exit_code) == 1
            tally.add(PROGRAM.name, hit)
            if not hit:
                tally.notes.append(f"- missed: {w.name} {runs.name} {PROGRAM.name}")
        for launches, entry in _targets(base, cap):
            ns = _duration(launches)
            inj = DURATION if ns >= 20_000 else MID if ns >= 10_000 else None
            if inj is None or not any(m.name == "duration" for m in entry.metrics):
                continue
            comp = _injected(base, cap, launches, entry, inj)
            if comp is None:
                continue
            tally.add(inj.name, comp.state is State.REGRESSED)
            if comp.state is not State.REGRESSED:
                tally.notes.append(
                    f"- missed: {w.name} {runs.name} {entry.id} {inj.name}: "
                    f"{comp.relative_change or 0:+.2%} (bound {comp.bound})"
                )


def workloads(
    kind: str,
    base_starts: Sequence[str],
    checked: Iterable[str],
    one_run: bool = False,
    runs: int = 2,
    base_runs: int = 3,
) -> list[Workload]:
    """Each workload of `kind` with a baseline of `base_runs` runs at most of each of
    `base_starts`, checked against `runs` runs of each of `checked` (each run alone where
    `one_run`)."""
    out = []
    for w in _CLOCK_BASES[kind][1]:
        if w == "compile-max-autotune":  # Inductor re-chooses its kernels on every start
            continue
        base = tuple(p for s in base_starts for p in runs_of(s, w, base_runs))
        if len({p.parent for p in base}) < len(base_starts):
            continue
        checks = tuple(
            RunSet(run)
            for s in checked
            if len(two := runs_of(s, w, runs)) == runs
            for run in (((two[0],), (two[1],)) if one_run else (two,))
        )
        if checks:
            out.append(Workload(f"{kind} {w}", base, checks))
    return out


def rotations(kind: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Baselines of three consecutive tuning starts, each checked against the others."""
    starts = TUNING[kind]
    out = []
    for i in range(0, len(starts) - 2, 3):
        trio = starts[i : i + 3]
        out.append((trio, tuple(s for s in starts if s not in trio)))
    return out


HEADS = ("+5% duration (>= 20 us)", "+5% duration (10-20 us)", "+3% program time")


def table(rows: list[tuple[str, Tally]]) -> None:
    print("| baseline | checks | false alarms (checks failed) | autotuner (checks) | "
          + " | ".join(HEADS) + " |")  # fmt: skip
    print("|---|---|---|---|" + "---|" * len(HEADS))
    for title, t in rows:
        cells = " | ".join(
            f"{c}/{n} ({c / n:.0%})"
            if (c := t.caught.get(h, [0, 0])[0]) is not None and (n := t.caught.get(h, [0, 0])[1])
            else "-"
            for h in HEADS
        )
        print(f"| {title} | {t.checks} | {t.alarms} ({t.failed}) | {t.tuned} | {cells} |")


def tallies(
    kind: str,
    pairs: list[tuple[tuple[str, ...], tuple[str, ...]]],
    one_run: bool = False,
    runs: int = 2,
) -> tuple[Tally, Tally]:
    """(the one start of three runs, the pooled trios), each checked against its starts."""
    single, pooled = Tally(), Tally()
    alone = ONE_START[kind]
    others = sorted({s for _, checked in pairs for s in checked} - {alone})
    for w in workloads(kind, (alone,), others, one_run, runs):
        evaluate(w, single)
    for trio, checked in pairs:
        for w in workloads(kind, trio, checked, one_run, runs):
            evaluate(w, pooled)
    return single, pooled


def held_back_pairs(kind: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The tuning trios, each checked against the sealed starts of its kind."""
    sealed = tuple(s for s in SEALED[kind] if (GATE / s).is_dir())
    return [(trio, sealed) for trio, _ in rotations(kind)] if sealed else []


def compare(
    kind: str,
    pairs: list[tuple[tuple[str, ...], tuple[str, ...]]],
    verbose: bool,
    one_run: bool = False,
) -> None:
    single, pooled = tallies(kind, pairs, one_run)
    alone = ONE_START[kind]
    names = "; ".join(f"{'+'.join(t)} vs {len(c)} starts" for t, c in pairs)
    each = "one run per check" if one_run else "two runs per check"
    print(f"\n### {kind.upper()}, {each}: {names}\n")
    table([(f"one start ({alone}, three runs)", single), ("three starts, pooled", pooled)])
    if verbose:
        for title, t in (("one start", single), ("pooled", pooled)):
            print(f"\n{title}:")
            print("\n".join(t.notes))


@dataclass(frozen=True)
class ProgramMove:
    runs: int
    move: float  # the fastest capture file's total against the recorded program time
    bound: float
    where: str


def program_moves(kind: str, size: int = 3) -> list[ProgramMove]:
    """The whole-program time of every check of moves() (autotuned programs aside)."""
    starts = TUNING[kind]
    out = []
    for trio in itertools.combinations(starts, size):
        for w in workloads(kind, trio, [s for s in starts if s not in trio]):
            if "autotune" in w.name:
                continue
            base = _baseline(w.baseline_runs)
            for runs in w.other_start_runs:
                for checked, n in ((runs, 2), (runs[0], 1), (runs[1], 1)):
                    p = check(base, _read(checked)).program
                    if p is None or p.change is None or p.bound is None:
                        continue
                    where = f"{w.name}, {'+'.join(trio)} vs {runs[0].parent.name}"
                    out.append(ProgramMove(n, p.change, p.bound, where))
    return out


@dataclass(frozen=True)
class Move:
    runs: int  # capture files per check
    corrected: bool  # judged after the common factor
    move: float  # the judged relative change
    ns: float  # the recorded duration
    where: str


_OWN = re.compile(
    r"within a start ([\d.]+)% x [\d.]+ = ([\d.]+)%, across starts ([\d.]+)% x ([\d.]+)"
)


def own_part(calibration: str | None) -> float:
    """The part of a pooled bound that is the kernel's own (K x the spread within a start, the
    across-starts term), from its calibration note; 0 where there is none."""
    m = _OWN.search(calibration or "")
    if not m:
        return 0.0
    return max(float(m.group(2)), float(m.group(3)) * float(m.group(4))) / 100


def moves(kind: str, size: int = 3) -> list[Move]:
    starts = TUNING[kind]
    out = []
    for trio in itertools.combinations(starts, size):
        for w in workloads(kind, trio, [s for s in starts if s not in trio]):
            if "autotune" in w.name:  # another configuration's time is no noise
                continue
            base = _baseline(w.baseline_runs)
            own = {
                k.id: own_part(next((m.calibration for m in k.metrics if m.name == "duration"), ""))
                for k in base.kernels
            }
            for runs in w.other_start_runs:
                for checked, n in ((runs, 2), (runs[0], 1), (runs[1], 1)):
                    for v in check(base, _read(checked)).verdicts:
                        for c in v.comparisons:
                            if (
                                c.metric != "duration"
                                or c.relative_change is None
                                or not isinstance(c.baseline, int | float)
                                or c.baseline < 10_000
                                or c.relative_change <= own.get(v.kernel, 0.0)
                            ):
                                continue
                            out.append(Move(
                                n, "common factor" in c.message, c.relative_change,
                                float(c.baseline),
                                f"{v.kernel[:40]} ({w.name}, {'+'.join(trio)} vs "
                                f"{runs[0].parent.name})",
                            ))  # fmt: skip
    return out


def needed(ms: Sequence[Move], margin: float = 1.15) -> tuple[float, float]:
    """The smallest floors (10-20 us, from 20 us; a step at 20 us) that are `margin` x every
    move of their band."""
    mid = max((m.move for m in ms if m.ns < 20_000), default=0.0) * margin
    long = max((m.move for m in ms if m.ns >= 20_000), default=0.0) * margin
    return mid, long


def moves_table(kind: str) -> None:
    ms = moves(kind)
    print(f"\n### {kind.upper()}: moves past a kernel's own bound, every trio of tuning starts\n")
    print("| runs per check | judged | moves | largest 10-20 us | largest from 20 us | "
          "floor needed 10-20 us / from 20 us (x1.15) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for runs, corrected in sorted({(m.runs, m.corrected) for m in ms}):
        mine = [m for m in ms if m.runs == runs and m.corrected == corrected]
        mid = max((m for m in mine if m.ns < 20_000), key=lambda m: m.move, default=None)
        top = max((m for m in mine if m.ns >= 20_000), key=lambda m: m.move, default=None)
        at10, at20 = needed(mine)
        print(
            f"| {runs} | {'after the common factor' if corrected else 'as measured'} | "
            f"{len(mine)} | "
            + (f"{mid.move:.2%} ({mid.ns / 1000:.1f} us {mid.where})" if mid else "-")
            + " | "
            + (f"{top.move:.2%} ({top.ns / 1000:.1f} us {top.where})" if top else "-")
            + f" | {at10:.2%} / {at20:.2%} |"
        )
    print("\n| runs per check | programs checked | largest move | its bound | over the bound |")
    print("|---|---|---|---|---|")
    pm = program_moves(kind)
    for runs in (1, 2):
        mine = [m for m in pm if m.runs == runs]
        top = max(mine, key=lambda m: m.move)
        over = sum(m.move > m.bound for m in mine)
        print(f"| {runs} | {len(mine)} | {top.move:.2%} ({top.where}) | {top.bound:.2%} | {over} |")


# The cards captured with four runs each, one machine start per card (each card of a host of
# several GPUs its own `machine_start`; the cards of one host share a boot): tuning data of the
# four-run floor, and the sealed ones captured with them, not read until that floor was fixed.
FOUR_RUN_CARDS = {
    "h100": tuple(f"h100-xag{i}" for i in range(4)),
    "h200": ("h200-xdg0", "h200-xdg1"),
}
FOUR_RUN_SEALED = {
    "h100": tuple(f"h100-xbg{i}" for i in range(4)),
    "h200": tuple(f"h200-xcg{i}" for i in range(4)),
}
# Captured after the four-run floors, sealed until the four-run program floor was fixed, then
# evaluated once against the trios and against every card above: the four cards of one H200
# host (xf) and three machines of one card (h200-xg, h200-xi, h100-xh), each a fresh boot.
PROGRAM_SEALED = {
    "h100": ("h100-xhg0",),
    "h200": (*(f"h200-xfg{i}" for i in range(4)), "h200-xgg0", "h200-xig0"),
}
# Every start of two runs or more that is tuning data now (the sealed starts of the pooled
# rule were evaluated once): the baselines of the four-run floor's moves.
EVALUATED = {kind: TUNING[kind] + SEALED[kind] for kind in TUNING}


def trio_tally(kind: str, cards: Sequence[str], runs: int) -> Tally:
    """Checks of `runs` runs of each of `cards` against the pooled tuning trios."""
    pairs = [(trio, tuple(cards)) for trio, _ in rotations(kind)]
    return tallies(kind, pairs, runs=runs)[1]


def card_tally(
    kind: str, pairs: Sequence[tuple[tuple[str, ...], tuple[str, ...]]], runs: int
) -> Tally:
    """Baselines of four-run cards (four runs each, pooled over the cards) checked against
    `runs` runs of other cards: a baseline recorded as the checks capture."""
    tally = Tally()
    for base_cards, checked in pairs:
        for w in workloads(kind, base_cards, checked, runs=runs, base_runs=4):
            evaluate(w, tally)
    return tally


def four_run_table(kind: str, cards: Sequence[str]) -> None:
    """Checks of two and of four runs of `cards` against the pooled tuning trios."""
    print(f"\n### {kind.upper()}: {', '.join(cards)} against the pooled trios\n")
    table([(f"{runs} runs per check", trio_tally(kind, cards, runs)) for runs in (2, 4)])


def four_runs(kind: str, held_back: bool) -> None:
    """Checks of two and of four runs: of the tuning four-run cards (against the pooled tuning
    trios, and against the other cards of their host pooled), or of the sealed cards (against
    the trios, and against every tuning four-run card of their kind pooled)."""
    tuning = FOUR_RUN_CARDS[kind]
    if held_back:
        cards = tuple(c for c in FOUR_RUN_SEALED[kind] if (GATE / c).is_dir())
        if not cards:
            print(f"no sealed card of {kind} captured yet")
            return
        four_run_table(kind, cards)
        card_table(kind, [(tuning, cards)])
        program_held_back(kind)
        return
    four_run_table(kind, tuning)
    pairs = [(rest, (c,)) for c in tuning if len(rest := tuple(x for x in tuning if x != c)) >= 2]
    if pairs:
        card_table(kind, pairs)


def card_table(kind: str, pairs: Sequence[tuple[tuple[str, ...], tuple[str, ...]]]) -> None:
    """card_tally of two and of four runs per check."""
    rows = [(f"{runs} runs per check", card_tally(kind, pairs, runs)) for runs in (2, 4)]
    names = "; ".join(f"{'+'.join(b)} vs {'+'.join(c)}" for b, c in pairs)
    print(f"\n### {kind.upper()}, baselines of four-run cards: {names}\n")
    table(rows)


@contextlib.contextmanager
def as_measured() -> Iterator[None]:
    """Checks judged without the common factor (every kernel as measured): what the four-run
    floor of H200 rests on."""
    saved = check_module.process_factors
    check_module.process_factors = lambda *a, **k: {}
    try:
        yield
    finally:
        check_module.process_factors = saved


def four_run_moves(kind: str, runs: int, cards: Sequence[str], measured: bool) -> list[Move]:
    """The whole duration change (no part of it taken off as the kernel's own) of kernels of
    10-20 us in checks of `runs` runs of `cards`, each against every trio of EVALUATED starts
    not among them, autotuned programs aside; every kernel as measured where `measured`, else
    as the gate judges it."""
    out = []
    with as_measured() if measured else contextlib.nullcontext():
        for trio in itertools.combinations(EVALUATED[kind], 3):
            for w in workloads(kind, trio, [c for c in cards if c not in trio], runs=runs):
                if "autotune" in w.name:
                    continue
                base = _baseline(w.baseline_runs)
                for checked in w.other_start_runs:
                    for v in check(base, _read(checked)).verdicts:
                        for c in v.comparisons:
                            if (
                                c.metric == "duration"
                                and c.relative_change is not None
                                and isinstance(c.baseline, int | float)
                                and 10_000 <= c.baseline < 20_000
                            ):
                                where = f"{v.kernel[:40]} ({w.name}, {checked[0].parent.name})"
                                out.append(Move(runs, measured, c.relative_change,
                                                float(c.baseline), where))  # fmt: skip
    return out


def four_run_moves_table(kind: str) -> None:
    """The four-run floor's data: the largest whole change of a 10-20 us kernel."""
    print(
        f"\n### {kind.upper()}: the largest change of a 10-20 us kernel, checks of several runs\n"
    )
    print("| checked | runs per check | judged | checks x kernels | largest change |")
    print("|---|---|---|---|---|")
    cards = FOUR_RUN_CARDS[kind]
    every = EVALUATED[kind] + cards
    rows = [("four-run cards", 4, cards, True), ("four-run cards", 2, cards, True)]
    if kind == "h200":
        rows += [("every start and card", 2, every, True),
                 ("every start and card", 2, every, False)]  # fmt: skip
    for title, runs, checked, measured in rows:
        ms = four_run_moves(kind, runs, checked, measured)
        top = max(ms, key=lambda m: m.move)
        judged = "as measured" if measured else "as the gate judges two runs"
        print(f"| {title} | {runs} | {judged} | {len(ms)} | "
              f"{top.move:.2%} ({top.ns / 1000:.1f} us {top.where}) |")  # fmt: skip


@dataclass(frozen=True)
class CardMove:
    runs: int
    move: float  # the fastest capture file's total against the recorded program time
    bound: float  # what the check judged it under
    where: str


@functools.cache
def program_baseline(runs: tuple[Path, ...]) -> Baseline:
    """The whole-program time `_baseline` records from `runs`, alone (no kernel): its program
    verdict is a check's (tests/real/test_four_run_gate.py holds both equal), at a fraction of
    the cost of recording every kernel."""
    capture = baseline_capture(runs)
    starts, _ = starts_of(capture)
    return Baseline((), program=record_program(capture, starts.by_file if starts else None))


def program_verdict(base_runs: tuple[Path, ...], checked: RunSet) -> ProgramVerdict:
    """The whole-program verdict of checking `checked` against a baseline of `base_runs`."""
    return judge_program(program_baseline(base_runs), _read(checked), (), ())


def four_run_program_moves(kind: str, runs: int, sealed: Sequence[str] = ()) -> list[CardMove]:
    """The whole-program time of `runs` runs of every evaluated four-run card (of `sealed`
    where given), against every trio of EVALUATED starts and against the other evaluated
    four-run cards of its kind pooled (four runs per card), autotuned programs aside."""
    cards = FOUR_RUN_CARDS[kind] + FOUR_RUN_SEALED[kind]
    checked_cards = tuple(sealed) or cards
    bases = [(trio, 3) for trio in itertools.combinations(EVALUATED[kind], 3)]
    bases += [(tuple(c for c in cards if c != card), 4) for card in checked_cards]
    out = []
    for base_starts, base_runs in bases:
        checked = [c for c in checked_cards if c not in base_starts]
        for w in workloads(kind, base_starts, checked, runs=runs, base_runs=base_runs):
            if "autotune" in w.name:
                continue
            for files in w.other_start_runs:
                p = program_verdict(w.baseline_runs, files)
                if p.change is None or p.bound is None:
                    continue
                baseline = "+".join(base_starts) if base_runs == 3 else "the other cards"
                where = f"{w.name}, {files[0].parent.name} vs {baseline}"
                out.append(CardMove(runs, p.change, p.bound, where))
    return out


@dataclass(frozen=True)
class ProgramSummary:
    """A table row of four_run_program_table: the checks, the largest move each way, how many
    were over the bound they were judged under and how many would miss +3%."""

    checks: int
    up: CardMove
    down: CardMove
    over: int
    missed: int


def program_summary(ms: Sequence[CardMove]) -> ProgramSummary:
    return ProgramSummary(
        len(ms),
        max(ms, key=lambda m: m.move),
        min(ms, key=lambda m: m.move),
        sum(m.move > m.bound for m in ms),
        sum((1 + m.move) * PROGRAM_STEP - 1 <= m.bound for m in ms),
    )


def four_run_program_table(kind: str, sealed: Sequence[str] = ()) -> None:
    """The four-run program floor's data (or, with `sealed`, its held-back evaluation): how far
    the whole program moved, both ways, against every baseline of four_run_program_moves."""
    floor = four_run_program_floor(kind.upper())
    cards = ", ".join(sealed) if sealed else "four-run cards"
    print(f"\n### {kind.upper()}: the whole program's time of {cards}\n")
    print("| runs per check | checks | largest slower | largest faster | over its bound | "
          "+3% missed |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for runs in (2, 4):
        t = program_summary(four_run_program_moves(kind, runs, sealed))
        print(f"| {runs} | {t.checks} | {t.up.move:+.2%} ({t.up.where}) | {t.down.move:+.2%} "
              f"({t.down.where}) | {t.over} | {t.missed} |")  # fmt: skip
    print(f"\nThe four-run program floor of {kind.upper()}: {floor:.2%}")


def program_held_back(kind: str) -> None:
    """The cards sealed for the four-run program floor: the gate's tables against the tuning
    trios and against every evaluated four-run card pooled, and their program moves."""
    cards = tuple(c for c in PROGRAM_SEALED[kind] if (GATE / c).is_dir())
    if not cards:
        print(f"no card of {kind} sealed for the program floor captured yet")
        return
    four_run_table(kind, cards)
    card_table(kind, [(FOUR_RUN_CARDS[kind] + FOUR_RUN_SEALED[kind], cards)])
    four_run_program_table(kind, cards)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--held-back", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--kind", choices=("h100", "h200"), action="append")
    parser.add_argument("--moves", action="store_true")
    parser.add_argument("--one-run", action="store_true", help="check each run alone")
    parser.add_argument(
        "--four-runs", action="store_true", help="the cards captured with four runs each"
    )
    args = parser.parse_args(argv)
    for kind in args.kind or ("h100", "h200"):
        if args.four_runs and args.moves:
            four_run_moves_table(kind)
            four_run_program_table(kind)
            continue
        if args.four_runs:
            four_runs(kind, args.held_back)
            continue
        if args.moves:
            moves_table(kind)
            continue
        if args.held_back:
            pairs = held_back_pairs(kind)
            if not pairs:
                print(f"no sealed start of {kind} captured yet")
                continue
            compare(kind, pairs, args.verbose, args.one_run)
        else:
            compare(kind, rotations(kind), args.verbose, args.one_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
