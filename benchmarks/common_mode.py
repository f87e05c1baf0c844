"""How much of a kernel's cross-start time change is common to its whole process.

For every unchanged re-capture of the corpus (each file one ncu process), each kernel's
duration ratio r = now / recorded (the check's own duration comparison: fastest launch
against the baseline's value) is set beside the common factor of the OTHER kernels of the
same process: the time-weighted median of their ratios, over peers of 10 us or more whose
configuration the baseline saw (perfgate.judge.common_mode). The corrected ratio r / factor
is what is left when the process as a whole ran slow or fast.

Prints, per GPU kind and duration band, the largest upward raw and corrected moves and the
share of +5% slowdowns a floor would catch, so that each floor can be read off the data.

    python benchmarks/common_mode.py              # every start of the corpus
"""

from __future__ import annotations

import contextlib
import math
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from detection import GATE_CORPUS, HELD_BACK, WORKLOADS, Workload, _baseline, _read  # noqa: E402

from perfgate.judge.common_mode import Timed, common_factors  # noqa: E402
from perfgate.judge.comparison import State  # noqa: E402
from perfgate.lifecycle.calibrate import K  # noqa: E402
from perfgate.metrics import timefloors  # noqa: E402
from perfgate.verdicts.check import check  # noqa: E402


@dataclass(frozen=True)
class Point:
    kind: str
    workload: str
    file: str
    kernel: str
    recorded_ns: float
    ratio: float
    factor: float | None
    peers: int
    own: float  # K x the spread of the baseline's own runs: the bound's part a floor adds to


def _kind(name: str) -> str:
    return name.split()[0]


@contextlib.contextmanager
def _uncorrected() -> Iterator[None]:
    """The check as it judges without a common factor: the ratios here are the raw ones."""
    saved = dict(timefloors.CORRECTED_FLOOR_POINTS)
    timefloors.CORRECTED_FLOOR_POINTS.clear()
    try:
        yield
    finally:
        timefloors.CORRECTED_FLOOR_POINTS.update(saved)


def points(workloads: Iterable[Workload]) -> list[Point]:
    with _uncorrected():
        return _points(workloads)


def _points(workloads: Iterable[Workload]) -> list[Point]:
    out: list[Point] = []
    for w in workloads:
        base = _baseline(w.baseline_runs)
        tuned = {k.id for k in base.kernels if k.tuned}
        own = {}
        for k in base.kernels:
            m = next((m for m in k.metrics if m.name == "duration"), None)
            got = re.search(r"spread ([0-9.]+)%", (m.calibration or "") if m else "")
            own[k.id] = K * float(got.group(1)) / 100 if got else 0.0
        for path in w.other_start_runs:
            result = check(base, _read(path))
            timed: list[Timed] = []
            for v in result.verdicts:
                c = next((c for c in v.comparisons if c.metric == "duration"), None)
                if c is None or c.state not in (State.PASS, State.REGRESSED, State.IMPROVED):
                    continue
                if not isinstance(c.baseline, float | int) or not isinstance(
                    c.current, float | int
                ):
                    continue
                if c.baseline <= 0 or v.kernel in tuned:
                    continue
                launches = next((x.current for x in v.comparisons if x.metric == "launches"), None)
                n = float(launches) if isinstance(launches, float | int) else 1.0
                timed.append(Timed(v.kernel, float(c.baseline), float(c.current), n))
            factors = common_factors(timed)
            for t in timed:
                f = factors.get(t.kernel)
                out.append(
                    Point(
                        _kind(w.name),
                        w.name,
                        path.name,
                        t.kernel,
                        t.recorded_ns,
                        t.current_ns / t.recorded_ns,
                        f.factor if f else None,
                        f.peers if f else 0,
                        own.get(t.kernel, 0.0),
                    )
                )
    return out


BANDS = ((2_000.0, "< 2 us"), (10_000.0, "2-10 us"), (20_000.0, "10-20 us"), (math.inf, ">= 20 us"))


def band(ns: float) -> str:
    return next(name for top, name in BANDS if ns < top)


def _pct(x: float) -> str:
    return f"{x * 100:+.2f}%"


def caught(ratios: Sequence[float], floor: float) -> float:
    return sum(r * 1.05 > 1 + floor for r in ratios) / len(ratios) if ratios else math.nan


def table(pts: Sequence[Point]) -> None:
    groups: dict[tuple[str, str], list[Point]] = defaultdict(list)
    for p in pts:
        groups[(p.kind, band(p.recorded_ns))].append(p)
    print("| GPU | band | kernels x files | corrected (>= 6 peers) | largest up, raw | "
          "largest up, corrected | where (corrected) | largest common factor |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for (kind, b), ps in sorted(groups.items()):
        corr = [p for p in ps if p.factor is not None]
        raw_up = max(p.ratio for p in ps) - 1
        if corr:
            worst = max(corr, key=lambda p: p.ratio / (p.factor or 1))
            c_up = _pct(worst.ratio / (worst.factor or 1) - 1)
            where = f"{worst.workload} {worst.file} {worst.kernel[:40]}"
            fmax = max(abs((p.factor or 1) - 1) for p in corr)
            fs = f"{fmax * 100:.2f}%"
        else:
            c_up, where, fs = "-", "-", "-"
        print(
            f"| {kind} | {b} | {len(ps)} | {len(corr)} | {_pct(raw_up)} | {c_up} | {where} | {fs} |"
        )


def floors(pts: Sequence[Point]) -> None:
    print("\nshare of +5% caught at a floor, kernels >= 20 us (raw | corrected where it applies):")
    for kind in sorted({p.kind for p in pts}):
        ps = [p for p in pts if p.kind == kind and p.recorded_ns >= 20_000]
        raw = [p.ratio for p in ps]
        mixed = [p.ratio / p.factor if p.factor else p.ratio for p in ps]
        for fl in (0.025, 0.03, 0.035, 0.04, 0.045, 0.055):
            print(f"  {kind} floor {fl:.3f}: raw {caught(raw, fl):.0%}  corrected {caught(mixed, fl):.0%}"
                  f"  (n={len(ps)})")  # fmt: skip


def main() -> int:
    pts = points((*WORKLOADS, *HELD_BACK, *GATE_CORPUS))
    table(pts)
    floors(pts)
    spread = [abs(p.ratio / p.factor - 1) for p in pts if p.factor]
    if spread:
        print(
            f"\n{len(spread)} corrected points; median |corrected move| {statistics.median(spread):.3%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
