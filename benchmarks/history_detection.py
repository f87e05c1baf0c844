"""Change points and drift over main's history, on series built from real unchanged re-captures.

For every kernel of the corpus (tests/data/field: the field workloads on H100 and H200, the
gate captures, the seven families), each metric is measured per capture file as `perfgate
baseline record` measures it (benchmarks/noise_model.kernels_of: perfgate.metrics.measure).
Only kernels present in every run of every start are used (an autotuned choice that differs
between runs is another kernel, not noise). A series of main's history is built by resampling
the machine starts in order: a start is drawn at random (the one just drawn included), and 1
to all of its runs follow in the order they were captured, as a CI runner kept for a few merges
would give them; then another start. So every series holds the real cross-start noise.

Into such a series one change is injected at run T0 = 40, in the metric's worse direction: a
step of +3% or +5% (every run from T0 on), or a drift of +1% per merge (run T0 + i is
(1 + 0.01 (i + 1)) times its real value). Then `perfgate history detect` is replayed as main
grows: after each run from T0 on, the change points of the series so far
(perfgate.history.changepoints.change_points) and the drift rule on the newest run (its
last N runs before it). A change is caught when a change point at T0 - 2 or later is found
(or the drift rule flags a run from T0 on); the delay is the number of runs of the new level
kept when it was caught (1: the first run after the change). False alarms: on unchanged
series of 20 + 100 runs, each change point that appears as the history grows from 20 to 120
runs (one that moves by 2 runs or less is the same), and each run the drift rule flags, per
100 runs.

One start per GPU kind and corpus is held back while the parameters are chosen (h100-f,
h200-c, gate h100-l, gate h200-f, families fam-d); `--held-back` builds the series from every
start, the held-back one included, and reports apart.

`--held-back-gate`: a second held-back set, the gate starts of two runs that no corpus above
uses (HELD_BACK_GATE: H100 h100-o, h100-p, h100-s, h100-t, h100-u; H200 h200-g to h200-l),
none of them used to choose the parameters. The series are drawn from these starts alone (no
tuning start among them), the gate corpora only; a start that did not capture a workload is
left out of that workload's series (h100-o and h100-p hold 5 workloads, h100-s to h100-u
all but compile-max-autotune).

`--runs-per-point 2`: each point of main's history is a check given two capture files of one
machine start (`perfgate check -c run1.csv -c run2.csv`), so its value is what such a check
measures and stores: both runs' launches measured as one kernel (perfgate.metrics.measure:
the fastest launch of both runs for `duration`, the median launch of both for a median
metric, the median of the two runs' counts for a count). Only starts of two runs or more are
used, and a corpus only where two such starts or more are left (one start alone holds no
noise between machine starts). A point is two consecutive runs of the drawn start (runs r and
r + 1, wrapping); a start of 3 runs holds 3 such points and a start of 2 runs one, and a block
is 1 to all of the start's points. The same draws give a one-run arm beside it (each point's
first run alone), so the tables compare one run per point against two on the same starts,
the same kernels and the same sequence of machine starts, side by side. A recorded start of 2
runs holds a single pair, which every point of that start repeats: those points lack the
run-to-run noise a CI capturing twice per merge would see. So two more arms (`drawn`, for a
metric whose value is its best launch, as `duration`) keep each drawn start's level (the mean
of its runs) and draw every point's run-to-run part afresh from the kernel's pooled
deviations (drawn_series): one deviation for one run per point, the best of two for two.

    python benchmarks/history_detection.py                 # tuning starts, default parameters
    python benchmarks/history_detection.py --held-back     # every start, the held-back ones in
    python benchmarks/history_detection.py --metric dram_bytes --metric instructions_executed
    python benchmarks/history_detection.py --quick         # every 4th kernel (a smoke run)
    python benchmarks/history_detection.py --cost          # seconds per series of 100 to 3000 runs
    python benchmarks/history_detection.py --noise         # one run's spread per duration band
    python benchmarks/history_detection.py --drift-only    # the drift rule alone, in seconds
    python benchmarks/history_detection.py --runs-per-point 2   # one run per point against two
    python benchmarks/history_detection.py --held-back-gate     # the second held-back set alone
    python benchmarks/history_detection.py --four-run-cards --runs-per-point 4   # the third
    python benchmarks/history_detection.py --four-run-cards --runs-per-point 4 --model-check
    python benchmarks/history_detection.py --runs-per-point 2 --drawn-four --drawn-centre best
    python benchmarks/history_detection.py --drift-level-runs 1   # the value alone, as before
    python benchmarks/history_detection.py --held-back-cards --runs-per-point 2 --drawn-four \
        --drawn-centre best                                        # the fourth held-back set

`--drawn-centre best`: the drawn arms take each start's level at its best run (the fastest
time) and draw every point's runs from the kernel's deviations from their start's best run
(best_deviations), rather than the start's mean and the deviations from it: a mean carries the
start's slow runs, so a level taken there with a fresh deviation on top counts the run-to-run
noise twice. `--model-check` measures both against the recorded points of starts of four runs
(docs/history.md). `--drawn-four`: with `--runs-per-point 2`, an arm of four drawn runs per
point beside them, on the tuning starts (none of which holds four runs).

`--held-back-cards`: a fourth held-back set, the eight cards of two H100 hosts captured while
the level of the newest runs was chosen (HELD_BACK_CARDS), read only after it was committed;
2 to 4 runs of each workload per card (`--runs-per-point 2 --drawn-four`).

`--four-run-cards`: a third held-back set, the cards captured with four runs each of four
workloads (FOUR_RUN_CORPORA), none of them used to choose the parameters until they were
evaluated; then the level of the newest runs (DriftRule.level_runs, level_spreads) was chosen
on them and the tuning starts, with `--drawn-centre best`; with
`--runs-per-point 4` each point is a check of four capture files (the Action's default
`program-runs`). Every card holds exactly four runs, so the recorded four-run arm repeats one
point per card; the drawn arms (one, two and four runs per point, on the same draws) are the
fair comparison.
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from noise_model import band_of, kernels_of  # noqa: E402

from perfgate.history import changepoints  # noqa: E402
from perfgate.history.changepoints import (  # noqa: E402
    DEFAULT,
    DEFAULT_DRIFT,
    Detection,
    DriftRule,
    change_points,
    drift,
)
from perfgate.identity.grouping import KernelKey, group_launches  # noqa: E402
from perfgate.ingest import read_capture  # noqa: E402
from perfgate.ingest.launches import merge  # noqa: E402
from perfgate.metrics.catalog import Aggregate, lookup  # noqa: E402
from perfgate.metrics.measure import Measured, measure  # noqa: E402
from perfgate.metrics.thresholds import Direction, Noise  # noqa: E402

FIELD = ROOT / "tests" / "data" / "field"
FIELD_H100 = ("hf-decoder", "hf-encoder", "cnn-fp32", "cnn-tf32", "cnn-bf16-cl",
              "compile-default", "compile-max-autotune", "cuda-graph", "gemms", "reductions",
              "triton-autotune")  # fmt: skip
FIELD_H200 = ("hf-encoder", "cuda-graph", "gemms", "reductions", "triton-autotune")
FAMILIES = ("moe", "train-step", "cub", "nvrtc", "vit", "jax-train", "triton-sizes")

T0 = 40  # runs of history before the injected change
WARMUP = 20  # runs kept before the unchanged series is first looked at
UNCHANGED = 100  # runs looked at on the unchanged series
HORIZON = 15  # runs after T0 looked at
TOLERANCE = 2  # a change point this close to one already found is the same one


@dataclass(frozen=True)
class Corpus:
    label: str  # "H100 field"
    gpu: str
    folder: Path
    starts: tuple[str, ...]
    held_back: str  # "": none (a held-back set of its own)
    workloads: tuple[str, ...]
    # A start may lack a workload: it is left out of that workload's series (a workload needs
    # two starts). Otherwise a workload is used only where every start captured it.
    partial: bool = False


CORPORA = (
    Corpus("H100 field", "H100", FIELD / "h100",
           ("h100-a", "h100-b", "h100-c", "h100-d", "h100-e", "h100-f"), "h100-f", FIELD_H100),
    Corpus("H200 field", "H200", FIELD / "h200", ("h200-a", "h200-b", "h200-c"), "h200-c",
           FIELD_H200),
    Corpus("H100 gate", "H100", FIELD / "gate", ("h100-j", "h100-k", "h100-l"), "h100-l",
           FIELD_H100),
    Corpus("H200 gate", "H200", FIELD / "gate", ("h200-e", "h200-f"), "h200-f", FIELD_H200),
    Corpus("H100 families", "H100", FIELD / "families", ("fam-a", "fam-b", "fam-c", "fam-d"),
           "fam-d", FAMILIES),
)  # fmt: skip

# The second held-back set (--held-back-gate): the gate starts with two runs of a field workload
# that no corpus above uses, never used to choose the parameters (tests/data/field/gate/
# README.md); tests/history/test_history_detection_points.py holds that the list is every
# such start.
HELD_BACK_GATE = (
    Corpus("H100 gate, second held-back set", "H100", FIELD / "gate",
           ("h100-o", "h100-p", "h100-s", "h100-t", "h100-u"), "", FIELD_H100, partial=True),
    Corpus("H200 gate, second held-back set", "H200", FIELD / "gate",
           ("h200-g", "h200-h", "h200-i", "h200-j", "h200-k", "h200-l"), "", FIELD_H200,
           partial=True),
)  # fmt: skip


# A third held-back set (--four-run-cards): the cards captured with four runs each of four
# workloads (benchmarks/pooled.py FOUR_RUN_CARDS, FOUR_RUN_SEALED, PROGRAM_SEALED), every card
# its own machine start, none read while the parameters were chosen; tests/history/
# test_history_detection_points.py holds that the lists are every such card.
FOUR_RUN_WORKLOADS = ("gemms", "hf-encoder", "reductions", "cuda-graph")
FOUR_RUN_CORPORA = (
    Corpus("H100 four-run cards", "H100", FIELD / "gate",
           (*(f"h100-xag{i}" for i in range(4)), *(f"h100-xbg{i}" for i in range(4)),
            "h100-xhg0"), "", FOUR_RUN_WORKLOADS),
    Corpus("H200 four-run cards", "H200", FIELD / "gate",
           ("h200-xdg0", "h200-xdg1", *(f"h200-xcg{i}" for i in range(4)),
            *(f"h200-xfg{i}" for i in range(4)), "h200-xgg0", "h200-xig0"), "",
           FOUR_RUN_WORKLOADS),
)  # fmt: skip


# A fourth held-back set (--held-back-cards): the eight cards of two H100 hosts of four GPUs
# (tests/data/field/history-cards/README.md), captured while the level of the newest runs was
# being chosen and not read until it was committed; every card its own machine start. Each
# workload from the cards that captured it.
HELD_BACK_CARDS = (
    Corpus("H100 cards, fourth held-back set", "H100", FIELD / "history-cards",
           (*(f"h100-xjg{i}" for i in range(4)), *(f"h100-xkg{i}" for i in range(4))), "",
           ("hf-decoder", "hf-encoder", "cnn-tf32", "cnn-bf16-cl", "gemms", "reductions",
            "moe", "train-step"), partial=True),
)  # fmt: skip


# A fifth held-back set (--held-back-starts): four H100 cards of one host, a dozen runs or more
# of each workload per card in one machine start each (tests/data/field/history-starts/
# README.md), captured while a run's own start's series was being built and not read until it
# was committed. With --per-start, each card's runs are a series of their own: main's history
# as a runner that keeps its card and boot makes it (perfgate.history.detect.held_points).
HELD_BACK_STARTS = (
    Corpus("H100 cards, fifth held-back set", "H100", FIELD / "history-starts",
           tuple(f"h100-xmg{i}" for i in range(4)), "", ("hf-decoder", "reductions", "gemms"),
           partial=True),
)  # fmt: skip


@dataclass(frozen=True)
class KernelSeries:
    """One kernel's values of one metric, per machine start, runs in capture order. `pairs`
    (--runs-per-point 2): per start, the value of a check given runs r and r + 1 (wrapping)
    as two capture files, for each run r; empty when not asked."""

    gpu: str
    corpus: str
    workload: str
    kernel: str
    metric: str
    band: str
    starts: tuple[tuple[float, ...], ...]
    pairs: tuple[tuple[float, ...], ...] = ()

    def table(self, runs_per_point: int) -> tuple[tuple[float, ...], ...]:
        """Per start, the value of the point that begins at each run."""
        return self.starts if runs_per_point == 1 else self.pairs


def _runs(folder: Path, workload: str) -> list[Path]:
    return sorted(
        (p for p in folder.glob(f"{workload}-run*.csv.gz") if "crashed" not in p.name),
        key=lambda p: p.name,
    )


@cache
def merged_values(
    paths: tuple[Path, ...], metrics: tuple[str, ...]
) -> dict[KernelKey, dict[str, float]]:
    """Each kernel's metrics over several capture files read as one, as `perfgate check -c
    run1.csv -c run2.csv` measures them: the launches of every file grouped and measured
    together (perfgate.metrics.measure), in the same way benchmarks/noise_model.kernels_of
    measures one file. Only numbers are kept."""
    capture = merge([read_capture(p) for p in paths])
    out: dict[KernelKey, dict[str, float]] = {}
    for group in group_launches(capture.launches):
        values: dict[str, float] = {}
        for metric in metrics:
            got = measure(lookup(metric), group.launches, capture.columns)
            if isinstance(got, Measured) and isinstance(got.value, float):
                values[metric] = got.value
        out[group.key] = values
    return out


def point_files(files: Sequence[Path], runs_per_point: int) -> list[tuple[Path, ...]]:
    """The capture files of the point that begins at each run: runs r .. r + k - 1, wrapping."""
    n = len(files)
    return [tuple(sorted(files[(r + j) % n] for j in range(runs_per_point))) for r in range(n)]


def kernel_series(
    corpus: Corpus, metrics: Sequence[str], held_back: bool, runs_per_point: int = 1
) -> list[KernelSeries]:
    """The corpus' kernel series. runs_per_point 2: only its starts of two runs or more, with
    the two-run points measured (none where fewer than two such starts are left). A partial
    corpus: each workload from the starts that captured it, two at least."""
    out = []
    for workload in corpus.workloads:
        files = {s: _runs(corpus.folder / s, workload) for s in corpus.starts}
        if corpus.partial:
            files = {s: runs for s, runs in files.items() if runs}
        if not files or not all(files.values()):
            continue
        chosen = [s for s in files if held_back or s != corpus.held_back]
        starts = [s for s in chosen if len(files[s]) >= runs_per_point]
        if len(starts) < 2 and (runs_per_point > 1 or corpus.partial):
            continue
        # Present in every run of every start, held-back ones included: one kernel set for
        # both evaluations.
        every = [kernels_of(p) for s in files for p in files[s]]
        keys = set(every[0]).intersection(*every[1:])
        for key in sorted(keys, key=repr):
            durations = [d for k in every if (d := k[key].duration_ns) is not None]
            band = band_of(statistics.median(durations) if durations else None)
            for metric in metrics:
                per_start = []
                for s in starts:
                    values = [kernels_of(p)[key].values.get(metric) for p in files[s]]
                    per_start.append(tuple(v for v in values if isinstance(v, float)))
                counts = [len(files[s]) for s in starts]
                if [len(v) for v in per_start] != counts:
                    continue
                pairs: list[tuple[float, ...]] = []
                if runs_per_point > 1:
                    for s in starts:
                        got = [merged_values(f, tuple(metrics)).get(key, {}).get(metric)
                               for f in point_files(files[s], runs_per_point)]  # fmt: skip
                        pairs.append(tuple(v for v in got if v is not None))
                    if [len(v) for v in pairs] != counts:
                        continue  # the runs read as one group the kernel otherwise: left out
                out.append(KernelSeries(corpus.gpu, corpus.label, workload, key.name[:40],
                                        metric, band, tuple(per_start), tuple(pairs)))  # fmt: skip
    return out


def per_start(all_series: Sequence[KernelSeries]) -> list[KernelSeries]:
    """Each kernel series split into one per machine start (--per-start): main's points drawn
    from that start's runs alone, as a runner that keeps its card and boot records them."""
    return [
        replace(ks, starts=(runs,), pairs=(ks.pairs[i],) if ks.pairs else ())
        for ks in all_series
        for i, runs in enumerate(ks.starts)
    ]


Draw = tuple[int, int]  # (start, the run the point begins at)


def draw(
    sizes: Sequence[int], length: int, rng: np.random.Generator, runs_per_point: int = 1
) -> list[Draw]:
    """Main's history over machine starts, as the place of each point: a start at random (the
    same one again included), then 1 to all of its points in capture order (from a random
    run, wrapping), then the next. A start of n runs holds n points of one run, n points of
    two (runs r and r + 1) when n > 2, and one when n = 2."""
    out: list[Draw] = []
    while len(out) < length:
        start = int(rng.integers(0, len(sizes)))
        n = sizes[start]
        points = n if n > runs_per_point else 1
        block = int(rng.integers(1, points + 1))
        first = int(rng.integers(0, n))
        out += [(start, (first + j) % n) for j in range(block)]
    return out[:length]


def series_of(table: Sequence[Sequence[float]], at: Sequence[Draw]) -> list[float]:
    """Main's values at the drawn places: table[start][run] (KernelSeries.table)."""
    return [table[start][run] for start, run in at]


def resample(
    starts: Sequence[Sequence[float]], length: int, rng: np.random.Generator
) -> list[float]:
    """Main's history of one run per point (draw)."""
    return series_of(starts, draw([len(runs) for runs in starts], length, rng))


@dataclass(frozen=True, order=True)
class Arm:
    """How main's points are made: runs per point; `drawn`, the run-to-run part drawn afresh
    for every point (drawn_series) rather than the start's recorded runs taken again."""

    runs: int
    drawn: bool = False

    def __str__(self) -> str:
        return f"{self.runs}{', drawn' if self.drawn else ''}"


def deviations(starts: Sequence[Sequence[float]]) -> list[float]:
    """Every run's relative deviation from its start's mean, over the starts of two runs or
    more, scaled by sqrt(n / (n - 1)) so that a start of n runs does not understate the spread
    (the modified residuals of the bootstrap: Davison and Hinkley 1997, 6.2.3)."""
    out: list[float] = []
    for runs in starts:
        n = len(runs)
        mean = statistics.fmean(runs)
        if n > 1 and mean:
            out += [(v / mean - 1) * math.sqrt(n / (n - 1)) for v in runs]
    return out


def best_deviations(
    starts: Sequence[Sequence[float]], best: Callable[[Sequence[float]], float] = min
) -> list[float]:
    """Every run's relative deviation from its start's best run (`best`: the fastest time),
    over the starts of two runs or more: 0 for that run, and how much worse each other run
    was. A start's mean carries its slow runs, so a level taken there and a fresh deviation
    added to it count the run-to-run noise twice; a point that keeps the fastest of several
    runs is what the best run is the level of (--model-check measures both against the
    cards' real points)."""
    out: list[float] = []
    for runs in starts:
        centre = best(runs)
        if len(runs) > 1 and centre:
            out += [v / centre - 1 for v in runs]
    return out


def distinct(rng: np.random.Generator, size: int, k: int) -> list[int]:
    """k distinct indices of range(size), drawn one after another without replacement: the
    j-th uniform over the size - j indices left (for k = 2: the first, then the second
    shifted past it)."""
    out: list[int] = []
    for j in range(k):
        pick = int(rng.integers(0, size - j))
        for taken in sorted(out):
            pick += pick >= taken
        out.append(pick)
    return out


def drawn_series(
    starts: Sequence[Sequence[float]],
    at: Sequence[Draw],
    runs_per_point: int,
    rng: np.random.Generator,
    best: Callable[[Sequence[float]], float] = min,
    draws: int = 2,
    centre: str = "mean",
) -> list[float]:
    """Main's points at the drawn starts, each the start's mean times (1 + a deviation), the
    deviation the best (`best`: the fastest time) of `runs_per_point` deviations drawn from
    the kernel's pooled ones (deviations) without replacement. A recorded start of 2 runs
    holds one pair of runs, which every point of that start would repeat; here each point
    gets fresh runs, as a CI capturing twice per merge does. `draws` (at least
    `runs_per_point`) deviations are drawn per point whatever the arm, so the arms of one
    evaluation share the stream: one run per point takes the first of them, two the first
    two. `centre` "best": each start's level is its best run and the deviations are
    best_deviations (--drawn-centre best); "mean", its mean and `deviations`."""
    if centre == "best":
        pool = best_deviations(starts, best)
        levels = [best(runs) for runs in starts]
    else:
        pool = deviations(starts)
        levels = [statistics.fmean(runs) for runs in starts]
    out = []
    for start, _ in at:
        picks = [pool[i] for i in distinct(rng, len(pool), max(draws, runs_per_point))]
        out.append(levels[start] * (1 + best(picks[:runs_per_point])))
    return out


DRAWN_CENTRE = "mean"  # --drawn-centre


def arm_series(
    ks: KernelSeries, arm: Arm, at: Sequence[Draw], seed: Sequence[int], draws: int = 2
) -> list[float]:
    """The series of one arm at the drawn places; `seed`, the drawn arms' deviations' stream,
    `draws` deviations per point (drawn_series), centred as DRAWN_CENTRE says."""
    if not arm.drawn:
        return series_of(ks.table(arm.runs), at)
    direction = lookup(ks.metric).direction
    best = max if direction is Direction.LOWER_IS_WORSE else min
    rng = np.random.default_rng(seed)
    return drawn_series(ks.starts, at, arm.runs, rng, best, draws, DRAWN_CENTRE)


def injected(values: Sequence[float], kind: str, direction: Direction) -> list[float]:
    sign = -1.0 if direction is Direction.LOWER_IS_WORSE else 1.0
    out = list(values)
    for i in range(T0, len(out)):
        factor = 0.01 * (i - T0 + 1) if kind == "drift" else STEPS[kind]
        out[i] = values[i] * (1 + sign * factor)
    return out


STEPS = {"step3": 0.03, "step5": 0.05}
Finder = Callable[[Sequence[float]], list[int]]


def _new(found: Sequence[int], known: list[int]) -> list[int]:
    fresh = [c for c in found if all(abs(c - k) > TOLERANCE for k in known)]
    known.extend(fresh)
    return fresh


PERSIST = 1  # --drift-persist: runs in a row the drift rule must flag (1: the run alone)


def flagged(values: Sequence[float], t: int, rule: DriftRule, direction: Direction) -> bool:
    """Whether the drift rule flags run t (1-based) of main, and each of the PERSIST - 1 runs
    before it against its own recent history."""
    for j in range(t - PERSIST, t):
        got = drift(values[:j], values[j], direction, rule) if j >= 0 else None
        if got is None or not got.drifted:
            return False
    return True


def mean_absolute_spread(values: Sequence[float]) -> float:
    """--drift-spread mean-absolute: sqrt(pi)/2 times the mean absolute difference of
    consecutive runs, the estimator the mean square one replaced (docs/history.md)."""
    if len(values) < 2:
        return 0.0
    return (
        math.sqrt(math.pi) / 2 * statistics.fmean(abs(b - a) for a, b in itertools.pairwise(values))
    )


def false_alarms(
    values: Sequence[float], find: Finder, rule: DriftRule, direction: Direction
) -> tuple[int, int]:
    """(change points, drift flags) over runs WARMUP+1 .. WARMUP+UNCHANGED."""
    known: list[int] = []
    points = flags = 0
    for t in range(WARMUP + 1, WARMUP + UNCHANGED + 1):
        points += len(_new(find(values[:t]), known))
        flags += flagged(values, t, rule, direction)
    return points, flags


def delays(
    values: Sequence[float], find: Finder, rule: DriftRule, direction: Direction
) -> tuple[int | None, int | None]:
    """Runs of the new level kept when a change point (resp. the drift rule) caught it."""
    point = flag = None
    for t in range(T0 + 1, T0 + HORIZON + 1):
        if point is None and any(c >= T0 - TOLERANCE for c in find(values[:t])):
            point = t - T0
        if flag is None and flagged(values, t, rule, direction):
            flag = t - T0
        if point is not None and flag is not None:
            break
    return point, flag


KINDS = ("step3", "step5", "drift")
KIND_TITLES = {"step3": "+3% step", "step5": "+5% step", "drift": "+1%/merge drift"}
GOALS = {"step3": None, "step5": 3, "drift": 10}


METHODS = ("change points", "drift rule", "either")


def _first(a: int | None, b: int | None) -> int | None:
    return min((d for d in (a, b) if d is not None), default=None)


@dataclass
class Tally:
    series: int = 0
    runs: int = 0
    alarms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(METHODS, 0))
    # method -> kind of change -> per series, the delay (None: not caught in HORIZON runs)
    delays: dict[str, dict[str, list[int | None]]] = field(
        default_factory=lambda: {m: {k: [] for k in KINDS} for m in METHODS}
    )


Key = tuple[str, str, str, Arm]  # GPU, metric, duration band, how points are made


def evaluate(
    all_series: Sequence[KernelSeries],
    detection: Detection,
    rule: DriftRule,
    seed: int,
    with_points: bool = True,
    arms: Sequence[Arm] = (Arm(1),),
) -> dict[Key, Tally]:
    """with_points=False (--drift-only): no change points looked for; the drift rule alone.
    arms: the ways of making points to evaluate, each on the same draws of machine starts
    (shaped for the most runs per point: draw)."""
    tallies: dict[Key, Tally] = {}
    shape = max(arm.runs for arm in arms)
    for i, ks in enumerate(all_series):
        defn = lookup(ks.metric)
        exact = defn.noise is Noise.EXACT

        def find(v: Sequence[float], exact: bool = exact) -> list[int]:
            return change_points(v, exact=exact, detection=detection) if with_points else []

        rng = np.random.default_rng([seed, i])
        sizes = [len(runs) for runs in ks.starts]
        plain_at = draw(sizes, WARMUP + UNCHANGED, rng, shape)
        base_at = draw(sizes, T0 + HORIZON, rng, shape)
        for arm in arms:
            plain = arm_series(ks, arm, plain_at, (seed, i, 1), max(2, shape))
            base = arm_series(ks, arm, base_at, (seed, i, 2), max(2, shape))
            _tally(tallies, ks, arm, plain, base, find, rule, defn.direction)
    return tallies


def _tally(
    tallies: dict[Key, Tally],
    ks: KernelSeries,
    arm: Arm,
    plain: Sequence[float],
    base: Sequence[float],
    find: Finder,
    rule: DriftRule,
    direction: Direction,
) -> None:
    """One series' false alarms (on `plain`) and delays (changes injected into `base`)."""
    keys = ((ks.gpu, ks.metric, ks.band, arm), (ks.gpu, ks.metric, "all", arm))
    points, flags = false_alarms(plain, find, rule, direction)
    caught = {k: delays(injected(base, k, direction), find, rule, direction) for k in KINDS}
    for key in keys:
        t = tallies.setdefault(key, Tally())
        t.series += 1
        t.runs += UNCHANGED
        # Either rule's alarm is an alarm: a run both flag counts twice (an upper bound).
        for method, n in zip(METHODS, (points, flags, points + flags), strict=True):
            t.alarms[method] += n
        for k in KINDS:
            point, flag = caught[k]
            for method, d in zip(METHODS, (point, flag, _first(point, flag)), strict=True):
                t.delays[method][k].append(d)


def _caught(delay_list: Sequence[int | None], goal: int | None) -> str:
    got = [d for d in delay_list if d is not None]
    n = len(delay_list)
    rate = f"{len(got) / n:.0%}" if n else "-"
    if not got:
        return f"{rate} (-)"
    median = statistics.median(got)
    within = f", {sum(d <= goal for d in got) / n:.0%} within {goal}" if goal else ""
    return f"{rate}{within} (median {median:g}, max {max(got)})"


ORDER = {"all": 0, "< 5 us": 1, "5-20 us": 2, ">= 20 us": 3, "unknown": 4}


def report(tallies: dict[Key, Tally], out: Callable[[str], None]) -> None:
    """One row per GPU, metric, band and method; with more than one arm, a column of runs per
    point and the arms' rows side by side."""
    arms = list(dict.fromkeys(key[3] for key in tallies))
    head = " | ".join(f"{KIND_TITLES[k]}: caught (delay in runs)" for k in KINDS)
    per_point = " runs per point |" if len(arms) > 1 else ""
    out(f"| GPU | metric | duration band | series | method |{per_point} {head} | "
        "false alarms per 100 runs |")  # fmt: skip
    out("|---|---|---|---|---|" + "---|" * (len(KINDS) + (len(arms) > 1)) + "---|")
    groups = sorted({key[:3] for key in tallies}, key=lambda k: (k[0], k[1], ORDER.get(k[2], 9)))
    for gpu, metric, band in groups:
        for method in METHODS:
            for arm in arms:
                t = tallies[gpu, metric, band, arm]
                per100 = 100.0 / t.runs if t.runs else 0.0
                cells = " | ".join(_caught(t.delays[method][k], GOALS[k]) for k in KINDS)
                runs = f" {arm} |" if len(arms) > 1 else ""
                out(f"| {gpu} | `{metric}` | {band} | {t.series} | {method} |{runs} {cells} | "
                    f"{t.alarms[method] * per100:.2f} |")  # fmt: skip


def noise(
    all_series: Sequence[KernelSeries],
    seed: int,
    out: Callable[[str], None],
    arms: Sequence[Arm] = (Arm(1),),
) -> None:
    """Per GPU and duration band: one point's spread (the drift rule's, over main's resampled
    history of WARMUP + UNCHANGED points) relative to the kernel's median, and the share of
    series a +5% step moves beyond 3 such spreads; per arm of runs per point, on one draw."""
    runs = " runs per point |" if len(arms) > 1 else ""
    out(f"| GPU | duration band | series |{runs} spread: median | 75th percentile | "
        "+5% beyond 3 spreads |")  # fmt: skip
    out("|---|---|---|" + "---|" * (len(arms) > 1) + "---|---|---|")
    spreads: dict[tuple[str, int, str, Arm], list[float]] = {}
    for i, ks in enumerate(all_series):
        rng = np.random.default_rng([seed, i])
        at = draw([len(r) for r in ks.starts], WARMUP + UNCHANGED, rng, max(a.runs for a in arms))
        for arm in arms:
            values = arm_series(ks, arm, at, (seed, i, 1), max(2, *(a.runs for a in arms)))
            relative = changepoints.spread(values) / abs(statistics.median(values))
            spreads.setdefault((ks.gpu, ORDER.get(ks.band, 9), ks.band, arm), []).append(relative)
    for (gpu, _, band, arm), got in sorted(spreads.items()):
        beyond = sum(3 * r < 0.05 for r in got) / len(got)
        column = f" {arm} |" if len(arms) > 1 else ""
        out(f"| {gpu} | {band} | {len(got)} |{column} {statistics.median(got):.2%} | "
            f"{float(np.percentile(got, 75)):.2%} | {beyond:.0%} |")  # fmt: skip


MODEL_DRAWS = 3000  # points per kernel and k in --model-check


def model_check(all_series: Sequence[KernelSeries], seed: int, out: Callable[[str], None]) -> None:
    """How faithful the drawn arms are: per GPU, duration band and runs per point k, the spread
    across starts (relative standard deviation) of a point of k runs as recorded (the best of
    k distinct runs of a start drawn at random, real runs only) against the same point drawn
    from the start's mean and `deviations` and from its best run and `best_deviations`, on the
    same draws of starts. Medians over the kernels, and of each kernel's ratio to the real
    spread. Starts of four runs or more only: every k of 1, 2 and 4 is then a real point."""
    out("| GPU | duration band | series | runs per point | recorded | drawn from the mean "
        "| drawn from the best run | ratio, mean | ratio, best run |")  # fmt: skip
    out("|---|---|---|---|---|---|---|---|---|")
    rows: dict[tuple[str, int, str, int], list[tuple[float, float, float]]] = {}
    for i, ks in enumerate(all_series):
        starts = [runs for runs in ks.starts if len(runs) >= 4]
        if len(starts) < 2:
            continue
        best = max if lookup(ks.metric).direction is Direction.LOWER_IS_WORSE else min
        for k in (1, 2, 4):
            rng = np.random.default_rng([seed, i, k])
            at = [(int(rng.integers(0, len(starts))), 0) for _ in range(MODEL_DRAWS)]
            real = [best([starts[s][j] for j in distinct(rng, len(starts[s]), k)]) for s, _ in at]
            centre = statistics.median(real)
            got = [float(np.std([v / centre - 1 for v in real]))]
            for how in ("mean", "best"):
                drawn = drawn_series(starts, at, k, np.random.default_rng([seed, i, k, 1]),
                                     best, 4, how)  # fmt: skip
                got.append(float(np.std([v / centre - 1 for v in drawn])))
            key = (ks.gpu, ORDER.get(ks.band, 9), ks.band, k)
            rows.setdefault(key, []).append((got[0], got[1], got[2]))
    for (gpu, _, band, k), got in sorted(rows.items()):
        a = np.array(got)
        real = a[:, 0]
        ratios = [float(np.median(a[real > 0, j] / real[real > 0])) for j in (1, 2)]
        out(f"| {gpu} | {band} | {len(got)} | {k} | {np.median(a[:, 0]):.2%} | "
            f"{np.median(a[:, 1]):.2%} | {np.median(a[:, 2]):.2%} | {ratios[0]:.2f} | "
            f"{ratios[1]:.2f} |")  # fmt: skip


def cost(out: Callable[[str], None]) -> None:
    """Seconds for change_points on series of n runs: unchanged (real H100 decoder-kernel
    noise shape: Student t, 3 degrees of freedom, 0.5%) and with two levels."""
    out("| runs | no change | two changes (+5% at n/3, -4% at 2n/3) |")
    out("|---|---|---|")
    rng = np.random.default_rng(11)
    for n in (100, 300, 1000, 3000):
        flat = list(1000 * (1 + 0.005 * rng.standard_t(3, size=n)))
        stepped = [v * (1.05 if i >= n // 3 else 1) * (0.96 if i >= 2 * n // 3 else 1)
                   for i, v in enumerate(flat)]  # fmt: skip
        cells = []
        for values in (flat, stepped):
            began = time.perf_counter()
            found = change_points(values)
            cells.append(f"{time.perf_counter() - began:.3f} s ({len(found)} found)")
        out(f"| {n} | {cells[0]} | {cells[1]} |")


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--held-back", action="store_true")
    which.add_argument(
        "--held-back-gate",
        action="store_true",
        help="the second held-back set alone: the two-run gate starts no corpus uses",
    )
    which.add_argument(
        "--held-back-cards",
        action="store_true",
        help="the fourth held-back set alone: the cards sealed while the level of the newest "
        "runs was chosen",
    )
    which.add_argument(
        "--held-back-starts",
        action="store_true",
        help="the fifth held-back set alone: cards of a dozen runs or more in one start each",
    )
    which.add_argument(
        "--four-run-cards",
        action="store_true",
        help="the third held-back set alone: the cards captured with four runs each",
    )
    parser.add_argument("--metric", action="append", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--noise", action="store_true", help="one run's spread per band")
    parser.add_argument(
        "--model-check",
        action="store_true",
        help="the drawn arms' spread against the recorded points', on starts of four runs",
    )
    parser.add_argument(
        "--drawn-four",
        action="store_true",
        help="with --runs-per-point 2, an arm of four drawn runs per point beside them (every "
        "arm then on draws shaped for four: a start of fewer runs gives one point at a time)",
    )
    parser.add_argument(
        "--drawn-centre",
        choices=("mean", "best"),
        default="mean",
        help="the drawn arms' level per start: its mean, or its best run (the fastest time)",
    )
    parser.add_argument(
        "--per-start",
        action="store_true",
        help="each machine start's runs a series of their own (a runner that keeps its card)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--significance", type=float, default=DEFAULT.significance)
    parser.add_argument("--min-size", type=int, default=DEFAULT.min_size)
    parser.add_argument("--min-change", type=float, default=DEFAULT.min_change)
    parser.add_argument("--drift-runs", type=int, default=DEFAULT_DRIFT.runs)
    parser.add_argument("--drift-spreads", type=float, default=DEFAULT_DRIFT.spreads)
    parser.add_argument("--drift-floor", type=float, default=DEFAULT_DRIFT.floor)
    parser.add_argument("--drift-persist", type=int, default=1)
    parser.add_argument("--drift-level-runs", type=int, default=DEFAULT_DRIFT.level_runs)
    parser.add_argument("--drift-level-spreads", type=float, default=DEFAULT_DRIFT.level_spreads)
    parser.add_argument(
        "--drift-spread", choices=("mean-square", "mean-absolute"), default="mean-square"
    )
    parser.add_argument(
        "--drift-only", action="store_true", help="the drift rule alone (seconds, not minutes)"
    )
    parser.add_argument(
        "--runs-per-point",
        type=int,
        choices=(1, 2, 4),
        default=1,
        help="2 or 4: each point a check of that many capture files, beside one run per point "
        "on the same starts with that many runs or more",
    )
    args = parser.parse_args(argv)
    global PERSIST, DRAWN_CENTRE
    PERSIST = args.drift_persist
    DRAWN_CENTRE = args.drawn_centre
    if args.drift_spread == "mean-absolute":  # the rule's own estimator, replaced for a run
        changepoints.spread = mean_absolute_spread
    if args.cost:
        cost(print)
        return 0
    metrics = args.metric or ["duration"]
    detection = replace(DEFAULT, significance=args.significance, min_size=args.min_size,
                        min_change=args.min_change)  # fmt: skip
    rule = replace(DEFAULT_DRIFT, runs=args.drift_runs, spreads=args.drift_spreads,
                   floor=args.drift_floor, level_runs=args.drift_level_runs,
                   level_spreads=args.drift_level_spreads)  # fmt: skip
    began = time.monotonic()
    k = args.runs_per_point
    arms: tuple[Arm, ...] = (Arm(1),) if k == 1 else (Arm(1), Arm(k))
    if k > 1 and all(lookup(m).aggregate is Aggregate.FASTEST for m in metrics):
        # drawn_series takes the best of the runs; with four, two beside them on the same draws
        drawn = (1, 2, k) if k > 2 else (1, k, 4) if args.drawn_four else (1, k)
        arms += tuple(Arm(n, True) for n in drawn)
    corpora = (
        HELD_BACK_GATE
        if args.held_back_gate
        else FOUR_RUN_CORPORA
        if args.four_run_cards
        else HELD_BACK_CARDS
        if args.held_back_cards
        else HELD_BACK_STARTS
        if args.held_back_starts
        else CORPORA
    )
    held_back = (args.held_back or args.held_back_gate or args.four_run_cards
                 or args.held_back_cards or args.held_back_starts)  # fmt: skip
    series = [s for c in corpora for s in kernel_series(c, metrics, held_back, k)]
    if args.per_start:
        series = per_start(series)
    if args.quick:
        series = series[::4]
    if args.noise:
        noise(series, args.seed, print, arms)
        return 0
    if args.model_check:
        model_check(series, args.seed, print)
        return 0
    tallies = evaluate(series, detection, rule, args.seed, not args.drift_only, arms)
    used = sorted({s.corpus for s in series}, key=[c.label for c in corpora].index)
    where = (f"; starts of {k} runs or more, one run per point against {k} on the same draws "
             f"({', '.join(used)})" if k > 1 else "")  # fmt: skip
    title = ("the second held-back set alone (gate starts never used to choose the parameters)"
             if args.held_back_gate else
             "the fourth held-back set alone (cards sealed while the level of the newest runs "
             "was chosen)" if args.held_back_cards else
             "the fifth held-back set alone (cards sealed while a run's own start's series was "
             "built)" if args.held_back_starts else
             "the third held-back set alone (cards of four runs: the level of the newest runs "
             "was chosen on them)"
             if args.four_run_cards else
             "every start, the held-back ones in" if args.held_back else "tuning starts")  # fmt: skip
    print(f"{title}: "
          f"{len(series)} kernel series{where}; {detection}; {rule}; spread {args.drift_spread}, "
          f"persist {args.drift_persist}{', drift rule only' if args.drift_only else ''}"
          f"{'; a series per machine start' if args.per_start else ''}; "
          f"{time.monotonic() - began:.0f} s")  # fmt: skip
    report(tallies, print)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
