"""Detection limits and false alarms of the gate on real captures from separate machine starts.

For each workload: a baseline recorded from 3 separate ncu runs of one machine start, checked
against every run of the same unchanged build captured on ANOTHER machine start:
- false alarms: kernels of the unchanged build that do not pass (must be 0);
- detection: the same re-captures with one regression injected into one kernel at a time
  (every launch's raw counter scaled: duration x1.05, DRAM bytes x1.03, instructions x1.015);
  a regression is caught when that kernel's verdict is REGRESSED on the metric injected.
Injecting into real re-captures keeps the real cross-start noise and makes the size exact.
It also prints the cross-start drift of each kernel's median per metric class.

    python benchmarks/detection.py            # table for docs/noise.md; exit 1 if the goal fails

Goal (issue 10): caught on every kernel of 10 us or more; no false alarm. Exit 1 on any false
alarm, or on a miss in the H200 captures made for this goal.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.baseline.model import Baseline, KernelBaseline  # noqa: E402
from perfgate.identity.grouping import KernelGroup, group_launches  # noqa: E402
from perfgate.ingest import read_capture  # noqa: E402
from perfgate.ingest.launches import Capture, Launch, merge  # noqa: E402
from perfgate.judge.comparison import Comparison, State  # noqa: E402
from perfgate.judge.states import KernelState  # noqa: E402
from perfgate.lifecycle.record import RecordSettings, record  # noqa: E402
from perfgate.verdicts.check import check  # noqa: E402

H200 = ROOT / "tests" / "data" / "h200" / "real"
H100 = ROOT / "tests" / "data" / "h100"
FIELD = ROOT / "tests" / "data" / "field"
FIELD_H100 = ("hf-decoder", "hf-encoder", "cnn-fp32", "cnn-tf32", "cnn-bf16-cl",
              "compile-default", "compile-max-autotune", "cuda-graph", "gemms", "reductions",
              "triton-autotune")  # fmt: skip
FIELD_H200 = ("hf-encoder", "cuda-graph", "gemms", "reductions", "triton-autotune")


@dataclass(frozen=True)
class Workload:
    name: str
    baseline_runs: tuple[Path, ...]  # one machine start
    other_start_runs: tuple[Path, ...]  # another machine start


WORKLOADS = (
    *(
        Workload(
            f"H200 {w}",
            tuple(H200 / f"{w}-run{i}.csv" for i in (1, 2, 3)),
            tuple(H200 / f"start2-{w}-run{i}.csv" for i in (1, 2, 3)),
        )
        for w in ("torch-flash", "compiled-a", "triton-good", "changes-base")
    ),
    # A third machine start, captured by `perfgate capture` (its own metric list and stall
    # family) rather than by hand: what a team switching to it meets.
    Workload(
        "H200 torch-flash, 3rd start via perfgate capture",
        tuple(H200 / f"torch-flash-run{i}.csv" for i in (1, 2, 3)),
        tuple(H200.parent / "capture" / f"torch-capture{s}.csv" for s in ("", "-2")),
    ),
    Workload(
        "H200 torch-flash, 4th start via perfgate capture",
        tuple(H200 / f"torch-flash-run{i}.csv" for i in (1, 2, 3)),
        tuple(H200.parent / "capture" / f"torch-start4-{i}.csv" for i in (1, 2)),
    ),
    *(
        Workload(
            f"H100 {w}",
            tuple(H100 / f"{w}-run{i}.csv" for i in (1, 2, 3)),
            tuple(
                H100 / s / f"{w}-run{i}.csv.gz" for s in ("session1", "session2") for i in (1, 2, 3)
            ),
        )
        for w in ("zoo-good-short", "torch-short")
    ),
    # Issue 21's field corpus (tests/data/field): baseline from h100-a's 3 runs, checked
    # against h100-b; h200-a's runs have no second tuning start.
    *(
        Workload(
            f"H100 field {w}",
            tuple(FIELD / "h100" / "h100-a" / f"{w}-run{i}.csv.gz" for i in (1, 2, 3)),
            tuple(FIELD / "h100" / "h100-b" / f"{w}-run{i}.csv.gz" for i in (1, 2)),
        )
        for w in FIELD_H100
    ),
)
# Held back (never tuned on): reported separately with `--held-back`.
HELD_BACK = (
    *(
        Workload(
            f"H100 field {w} vs h100-c",
            tuple(FIELD / "h100" / "h100-a" / f"{w}-run{i}.csv.gz" for i in (1, 2, 3)),
            tuple(FIELD / "h100" / "h100-c" / f"{w}-run{i}.csv.gz" for i in (1, 2)),
        )
        for w in FIELD_H100
    ),
    *(
        Workload(
            f"H200 field {w} vs h200-b",
            tuple(FIELD / "h200" / "h200-a" / f"{w}-run{i}.csv.gz" for i in (1, 2, 3)),
            tuple(FIELD / "h200" / "h200-b" / f"{w}-run{i}.csv.gz" for i in (1, 2)),
        )
        for w in FIELD_H200
    ),
    *(
        Workload(
            f"H200 {w} vs start3",
            tuple(H200 / f"{w}-run{i}.csv" for i in (1, 2, 3)),
            tuple(H200 / f"start3-{w}-run{i}.csv" for i in (1, 2)),
        )
        for w in ("torch-flash", "compiled-a", "triton-good", "changes-base")
    ),
)


@dataclass(frozen=True)
class Injection:
    name: str
    metric: str  # the logical metric that must regress
    raw: tuple[str, ...]  # raw counters scaled together
    factor: float


INJECTIONS = (
    Injection("+5% duration", "duration", ("gpu__time_duration.sum",), 1.05),
    Injection(
        "+3% DRAM bytes", "dram_bytes", ("dram__bytes_read.sum", "dram__bytes_write.sum"), 1.03
    ),
    Injection(
        "+1.5% instructions",
        "instructions_executed",
        ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum"),
        1.015,
    ),
)
LONG_NS = 20_000.0  # issue 21: +5% duration must be caught from 20 us (docs/noise.md)


def _scaled(capture: Capture, name: str, grid: object, inj: Injection) -> Capture:
    def scale(la: Launch) -> Launch:
        if la.name != name or la.grid != grid:
            return la
        metrics = dict(la.metrics)
        for raw in inj.raw:
            v = metrics.get(raw)
            if isinstance(v, float):
                metrics[raw] = v * inj.factor
        return replace(la, metrics=metrics)

    return replace(capture, launches=tuple(scale(la) for la in capture.launches))


def _baseline(w: Workload) -> Baseline:
    return record(merge([read_capture(p) for p in w.baseline_runs]), RecordSettings()).baseline


def _targets(base: Baseline, cap: Capture) -> Iterator[tuple[KernelGroup, KernelBaseline]]:
    """The capture's kernels of 20 us or more, each with its baseline entry."""
    kernels = {k.match.name: k for k in base.kernels}
    for group in group_launches(cap.launches):
        entry = kernels.get(group.key.name)
        if entry is None or entry.match.grid != group.key.grid:
            continue
        if _duration(group.launches) >= LONG_NS:
            yield group, entry


def _injected(
    base: Baseline, cap: Capture, group: KernelGroup, entry: KernelBaseline, inj: Injection
) -> Comparison:
    """The injected metric's comparison, after scaling the group's raw counters."""
    result = check(base, _scaled(cap, group.key.name, group.key.grid, inj))
    verdict = next(v for v in result.verdicts if v.kernel == entry.id)
    return next(c for c in verdict.comparisons if c.metric == inj.metric)


def _duration(launches: tuple[Launch, ...]) -> float:
    values = [
        v for la in launches if isinstance(v := la.metrics.get("gpu__time_duration.sum"), float)
    ]
    return statistics.median(values) if values else 0.0


def run(out: Callable[[str], None] = print, workloads: tuple[Workload, ...] = WORKLOADS) -> bool:
    ok = True
    out(
        "| workload | kernels | kernels >= 20 us | false alarms | incomplete | "
        + " | ".join(i.name for i in INJECTIONS)
        + " |"
    )
    out("|---|---|---|---|---|" + "---|" * len(INJECTIONS))
    misses: list[str] = []
    alarms: list[str] = []
    for w in workloads:
        base = _baseline(w)
        captures = [read_capture(p) for p in w.other_start_runs]
        long_ids = set()
        false_alarms = 0
        incomplete = 0
        caught = dict.fromkeys(INJECTIONS, 0)
        tried = dict.fromkeys(INJECTIONS, 0)
        for cap in captures:
            result = check(base, cap)
            for v in result.verdicts:
                if v.state is KernelState.INCOMPLETE and not any(
                    c.state is State.REGRESSED for c in v.comparisons
                ):
                    # The older captures' metric lists lack some metrics: not a verdict on noise.
                    incomplete += 1
                elif v.state not in (KernelState.PASS, KernelState.IMPROVED, KernelState.NEW):
                    false_alarms += 1
                    bad = [
                        f"{c.metric} {c.relative_change and round(c.relative_change * 100, 2)}%"
                        for c in v.failing
                        if c.state is State.REGRESSED
                    ]
                    alarms.append(
                        f"{w.name} {Path(cap.paths[0]).name} {v.kernel}: {v.state.value} {bad}"
                    )
            for group, entry in _targets(base, cap):
                long_ids.add(entry.id)
                for inj in INJECTIONS:
                    if not any(m.name == inj.metric for m in entry.metrics):
                        continue
                    tried[inj] += 1
                    comp = _injected(base, cap, group, entry, inj)
                    if comp.state is State.REGRESSED:
                        caught[inj] += 1
                    else:
                        misses.append(
                            f"{w.name} {Path(cap.paths[0]).name} {entry.id} {inj.name}: "
                            f"{comp.state.value} {comp.relative_change and round(comp.relative_change * 100, 2)}% "
                            f"(bound {comp.bound})"
                        )
        cells = " | ".join(f"{caught[i]}/{tried[i]}" for i in INJECTIONS)
        out(
            f"| {w.name} | {len(base.kernels)} | {len(long_ids)} | {false_alarms} | {incomplete} | {cells} |"
        )
        # The goal holds on the H200 captures made for it; the older H100 sessions' misses are
        # kernels whose own runs are noisier than the injection (docs/noise.md lists them).
        missed = any(caught[i] != tried[i] for i in INJECTIONS)
        ok = ok and false_alarms == 0 and not (missed and w.name.startswith("H200"))
    for line in alarms:
        out(f"- false alarm: {line}")
    for line in misses:
        out(f"- missed: {line}")
    return ok


LADDER = {
    "duration": (1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.08, 1.10, 1.15, 1.20),
    "dram_bytes": (1.005, 1.01, 1.015, 1.02, 1.03, 1.04, 1.05, 1.08, 1.10),
    "instructions_executed": (1.001, 1.0025, 1.005, 1.0075, 1.01, 1.015, 1.02),
}


def limits(out: Callable[[str], None] = print) -> None:
    """Per metric class, the smallest injected change caught on every run of another machine
    start, per kernel of 10 us or more: the median and the worst kernel of each GPU."""
    found: dict[tuple[str, str], list[float]] = {}
    for w in WORKLOADS:
        gpu = w.name.split()[0]
        base = _baseline(w)
        captures = [read_capture(p) for p in w.other_start_runs]
        for inj in INJECTIONS:
            per_kernel: dict[str, float] = {}
            for cap in captures:
                for group, entry in _targets(base, cap):
                    if not any(m.name == inj.metric for m in entry.metrics):
                        continue
                    need = float("inf")
                    for factor in LADDER[inj.metric]:
                        probe = replace(inj, factor=factor)
                        if _injected(base, cap, group, entry, probe).state is State.REGRESSED:
                            need = factor
                            break
                    per_kernel[entry.id] = max(per_kernel.get(entry.id, 0.0), need)
            found.setdefault((gpu, inj.metric), []).extend(per_kernel.values())
    out("| GPU | metric | kernels | median limit | worst kernel |")
    out("|---|---|---|---|---|")
    for (gpu, metric), values in sorted(found.items()):
        ordered = sorted(values)
        worst = ordered[-1]
        text = "not caught at +20%" if worst == float("inf") else f"+{(worst - 1) * 100:.1f}%"
        mid = ordered[len(ordered) // 2]
        mid_text = "-" if mid == float("inf") else f"+{(mid - 1) * 100:.1f}%"
        out(f"| {gpu} | {metric} | {len(values)} | {mid_text} | {text} |")


if __name__ == "__main__":
    if "--limits" in sys.argv:
        limits()
        sys.exit(0)
    if "--held-back" in sys.argv:
        run(workloads=HELD_BACK)  # evaluation only: the goal is judged on the tuning starts
        sys.exit(0)
    sys.exit(0 if run() else 1)
