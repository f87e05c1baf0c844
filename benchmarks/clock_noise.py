"""Does the clock a duration ran at explain its cross-start noise? (docs/noise.md "The clock
behind a duration")

Gate captures record, beside each launch's duration, the SM cycles it took
(`sm__cycles_elapsed.max`) and the SM and DRAM clock rates (`sm__cycles_elapsed.avg.per_second`,
`dram__cycles_elapsed.avg.per_second`). For each pair of machine starts holding the same
workload, every kernel of 10 us or more is compared by its fastest launch per capture file:
the ratio of durations and the ratio of SM cycles between the two starts. If clocks moved
and the kernel is clock-bound, cycles move less than nanoseconds; if it is memory-bound, the
reverse. Printed: per start, the median SM clock; per start pair, the spread (median and 90th
percentile of |ratio - 1|) of durations and of cycles, and of the two for compute-bound and
memory-bound kernels apart (DRAM bytes per SM cycle above or below the median).

    python benchmarks/clock_noise.py
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.ingest import read_captures  # noqa: E402

GATE = ROOT / "tests" / "data" / "field" / "gate"
STARTS = ("h100-m", "h100-n", "h100-o", "h100-p", "h200-g", "h200-h")
TIME = "gpu__time_duration.sum"
CYCLES = "sm__cycles_elapsed.max"
SM_HZ = "sm__cycles_elapsed.avg.per_second"
DRAM_HZ = "dram__cycles_elapsed.avg.per_second"
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
MIN_NS = 10_000.0


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, float | int) else None


def fastest(start: str, workload: str) -> dict[tuple[str, int], tuple[float, float, float, float]]:
    """(kernel name, launch order among its name) -> (ns, cycles, sm Hz, DRAM bytes) of the
    fastest run of the start, per kernel launch position."""
    out: dict[tuple[str, int], tuple[float, float, float, float]] = {}
    for path in sorted((GATE / start).glob(f"{workload}-run*.csv.gz")):
        cap = read_captures([str(path)])
        seen: dict[str, int] = {}
        for la in cap.launches:
            n = seen.get(la.name, 0)
            seen[la.name] = n + 1
            ns, cyc, hz = (_num(la.metrics.get(m)) for m in (TIME, CYCLES, SM_HZ))
            dram = sum(_num(la.metrics.get(m)) or 0.0 for m in DRAM)
            if ns is None or cyc is None or hz is None:
                continue
            key = (la.name, n)
            if key not in out or ns < out[key][0]:
                out[key] = (ns, cyc, hz, dram)
    return out


def _spread(xs: Sequence[float]) -> str:
    if not xs:
        return "-"
    s = sorted(abs(x - 1) for x in xs)
    return f"{statistics.median(s) * 100:.2f}% / {s[int(0.9 * (len(s) - 1))] * 100:.2f}%"


def main() -> int:
    workloads = sorted(
        {p.name.rsplit("-run", 1)[0] for s in STARTS for p in (GATE / s).glob("*.csv.gz")}
    )
    clocks: dict[str, list[float]] = {s: [] for s in STARTS}
    data = {(s, w): fastest(s, w) for s in STARTS for w in workloads}
    for (s, _), kernels in data.items():
        clocks[s].extend(hz for ns, _, hz, _ in kernels.values() if ns >= MIN_NS)
    print("| start | kernels >= 10 us | SM clock, median (min-max) |")
    print("|---|---|---|")
    for s in STARTS:
        c = clocks[s]
        if c:
            print(f"| {s} | {len(c)} | {statistics.median(c) / 1e9:.3f} GHz "
                  f"({min(c) / 1e9:.3f}-{max(c) / 1e9:.3f}) |")  # fmt: skip
    print("\n| starts | kernels | duration: median / p90 move | SM cycles: median / p90 move | "
          "memory-bound: ns / cycles | compute-bound: ns / cycles |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for a, b in itertools.combinations(STARTS, 2):
        if a[:4] != b[:4]:
            continue  # another GPU kind: not the same kernels' noise
        rows = []
        for w in workloads:
            ka, kb = data[(a, w)], data[(b, w)]
            for key in ka.keys() & kb.keys():
                (na, ca, _, da), (nb, cb, _, _) = ka[key], kb[key]
                if na >= MIN_NS and ca > 0:
                    rows.append((nb / na, cb / ca, da / ca))
        if not rows:
            continue
        mid = statistics.median(r[2] for r in rows)
        mem = [r for r in rows if r[2] >= mid]
        cpu = [r for r in rows if r[2] < mid]
        print(f"| {a} vs {b} | {len(rows)} | {_spread([r[0] for r in rows])} | "
              f"{_spread([r[1] for r in rows])} | {_spread([r[0] for r in mem])} vs "
              f"{_spread([r[1] for r in mem])} | {_spread([r[0] for r in cpu])} vs "
              f"{_spread([r[1] for r in cpu])} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
