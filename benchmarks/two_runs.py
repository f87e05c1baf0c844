"""How far a kernel's time moves in a check of two runs of one machine start, against a check of
each run alone: the data behind perfgate.metrics.timefloors.TWO_RUN_FLOOR_POINTS and
TWO_RUN_CORRECTED_FLOOR_POINTS.

Every start of the corpus with two runs or more (the tuning and held-back field starts, the
gate corpus, the gate starts with the clock and the first two-run starts h100-s and h200-i:
all of them tuning data for the two-run floors)
is checked against its workload's baseline from another start, its first two runs together
(`perfgate check -c RUN1 -c RUN2`) and each run alone. A move is the check's own duration
comparison (the fastest launch against the recorded value, after the common factor where it
applied); the floor has to cover a move past K x the kernel's own spread (a bound of that is
kept). The autotuned kernels (compile-max-autotune, Triton's autotuner) are aside: another
configuration's time is no noise.

    python benchmarks/two_runs.py
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from detection import (  # noqa: E402
    GATE_CLOCK_HELD_BACK,
    GATE_CORPUS,
    GATE_TWO_RUN_TUNING,
    HELD_BACK,
    WORKLOADS,
    Workload,
    _baseline,
    _read,
    one_run_checks,
    two_run_checks,
)

from perfgate.judge.comparison import State  # noqa: E402
from perfgate.lifecycle.calibrate import K  # noqa: E402
from perfgate.verdicts.check import check  # noqa: E402

# Every start of the corpus with two runs: the data the two-run floors were set from.
CORPUS = (*WORKLOADS, *HELD_BACK, *GATE_CORPUS, *GATE_CLOCK_HELD_BACK, *GATE_TWO_RUN_TUNING)
BANDS = ((10_000.0, 20_000.0, "10-20 us"), (20_000.0, math.inf, ">= 20 us"))


@dataclass(frozen=True)
class Move:
    kind: str  # H100, H200
    runs: int  # capture files per check
    workload: str
    file: str
    kernel: str
    recorded_ns: float
    move: float  # the judged duration's relative change
    own: float  # K x the relative spread of the baseline's own runs
    bound: float  # the bound it was judged under
    corrected: bool = False  # judged after its process's common factor

    @property
    def past_own(self) -> bool:
        return self.move > self.own


def _own(calibration: str | None) -> float:
    got = re.search(r"spread ([0-9.]+)%", calibration or "")
    return K * float(got.group(1)) / 100 if got else 0.0


def moves(workloads: Iterable[Workload]) -> list[Move]:
    """Each judged duration of each check, the autotuned kernels aside."""
    out: list[Move] = []
    for w in workloads:
        if "autotune" in w.name:
            continue
        base = _baseline(w.baseline_runs)
        own = {
            k.id: _own(next((m.calibration for m in k.metrics if m.name == "duration"), None))
            for k in base.kernels
        }
        tuned = {k.id for k in base.kernels if k.tuned}
        for path in w.other_start_runs:
            runs = len(path) if isinstance(path, tuple) else 1
            for v in check(base, _read(path)).verdicts:
                c = next((c for c in v.comparisons if c.metric == "duration"), None)
                if c is None or c.state not in (State.PASS, State.REGRESSED, State.IMPROVED):
                    continue
                if v.kernel in tuned or not isinstance(c.baseline, float | int):
                    continue
                if not isinstance(c.current, float | int) or c.baseline <= 0:
                    continue
                recorded = next(k for k in base.kernels if k.id == v.kernel).value("duration")
                bound = float(c.bound.strip("+%")) / 100 if c.bound else 0.0
                out.append(
                    Move(w.name.split()[0], runs, w.name, path.name, v.kernel,
                         float(recorded) if isinstance(recorded, float | int) else 0.0,
                         c.current / c.baseline - 1.0, own.get(v.kernel, 0.0), bound,
                         "judged against the recorded time x" in c.message)
                )  # fmt: skip
    return out


def both(workloads: Sequence[Workload] = CORPUS) -> list[Move]:
    """The same runs, each alone (runs 1) and the first two of a start together (runs 2)."""
    return moves(one_run_checks(tuple(workloads))) + moves(two_run_checks(tuple(workloads)))


def in_band(ms: Iterable[Move], kind: str, runs: int, low: float, high: float) -> list[Move]:
    return [m for m in ms if m.kind == kind and m.runs == runs and low <= m.recorded_ns < high]


@dataclass(frozen=True)
class ProgramMove:
    kind: str
    runs: int
    workload: str
    file: str
    move: float  # the fastest file's total against the recorded fastest run's
    bound: float  # the bound it was judged under
    recorded_bound: float  # the baseline's own


def program_moves(workloads: Iterable[Workload]) -> list[ProgramMove]:
    """The whole program's time in each check, the autotuned programs aside."""
    out: list[ProgramMove] = []
    for w in workloads:
        if "autotune" in w.name:
            continue
        base = _baseline(w.baseline_runs)
        if base.program is None:
            continue
        for path in w.other_start_runs:
            runs = len(path) if isinstance(path, tuple) else 1
            p = check(base, _read(path)).program
            if p is None or p.change is None or p.bound is None:
                continue
            out.append(
                ProgramMove(w.name.split()[0], runs, w.name, path.name, p.change, p.bound,
                            base.program.relative)
            )  # fmt: skip
    return out


def both_programs(workloads: Sequence[Workload] = CORPUS) -> list[ProgramMove]:
    return program_moves(one_run_checks(tuple(workloads))) + program_moves(
        two_run_checks(tuple(workloads))
    )


def main() -> int:
    print("| GPU | runs per check | programs judged | largest upward move | where | caught +3% |")
    print("|---|---|---|---|---|---|")
    programs = both_programs()
    for kind in ("H100", "H200"):
        for runs in (1, 2):
            got = [m for m in programs if m.kind == kind and m.runs == runs]
            worst = max(got, key=lambda m: m.move, default=None)
            caught = sum((1 + m.move) * 1.03 - 1 > m.bound for m in got)
            where = f"{worst.workload} {worst.file}" if worst else "-"
            top = f"{worst.move * 100:+.2f}%" if worst else "-"
            print(f"| {kind} | {runs} | {len(got)} | {top} | {where} | {caught}/{len(got)} |")
    print()
    ms = both()
    print("| GPU | band | runs per check | durations judged | past own spread | largest move "
          "past its own spread | where | caught +5% |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("H100", "H200"):
        for low, high, name in BANDS:
            for runs in (1, 2):
                got = in_band(ms, kind, runs, low, high)
                past = [m for m in got if m.past_own]
                worst = max(past, key=lambda m: m.move, default=None)
                where = f"{worst.workload} {worst.kernel[:40]}" if worst else "-"
                top = f"{worst.move * 100:+.2f}%" if worst else "-"
                caught = sum((1 + m.move) * 1.05 - 1 > m.bound for m in got)
                print(f"| {kind} | {name} | {runs} | {len(got)} | {len(past)} | {top} | {where} "
                      f"| {caught}/{len(got)} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
