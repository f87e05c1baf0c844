"""Judging the whole-program GPU time of a check (docs/check.md "Whole-program time"): the
fastest capture file's total over every launch against the baseline's recorded total, and how
much of it the kernels new to the baseline and the missing ones account for."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.program import check_bound, program_state
from perfgate.judge.states import KernelState
from perfgate.metrics.program import time_in, time_per_run
from perfgate.verdicts.model import ProgramVerdict

RE_RECORD = "re-record the baseline (perfgate baseline record -c CAPTURE...) to gate it"


def recorded_time(kernel: KernelBaseline) -> float:
    """A baselined kernel's time per run as recorded: its total_time where it was gated, else
    launches x its duration (both the fastest launch: docs/noise.md "The rule")."""
    total = kernel.value("total_time")
    if isinstance(total, float):
        return total
    duration = kernel.value("duration")
    if isinstance(duration, float):
        return duration * (kernel.launches or 1)
    return 0.0


def judge_program(
    baseline: Baseline,
    capture: Capture,
    new_launches: Sequence[Launch],
    missing: Sequence[KernelBaseline],
) -> ProgramVerdict:
    runs = time_per_run(capture.launches, capture.paths)
    recorded = baseline.program
    if recorded is None:
        return ProgramVerdict(
            KernelState.SKIPPED,
            runs=runs,
            reason=f"the baseline holds no whole-program GPU time; {RE_RECORD}",
        )
    judged = [(t, p) for t, p in zip(runs, capture.paths, strict=True) if t is not None]
    if not capture.launches:
        # No launch of this baseline's GPU: every kernel of it is missing, which fails.
        return ProgramVerdict(
            KernelState.SKIPPED,
            baseline=recorded.value,
            runs=runs,
            bound=recorded.relative,
            reason="no launch of this baseline's GPU in the captures",
        )
    if not judged:
        # The baseline gates it and the captures lack the metric: incomplete, as a kernel
        # whose gated metric is absent (it fails under --fail-on missing, the default).
        return ProgramVerdict(
            KernelState.INCOMPLETE,
            baseline=recorded.value,
            runs=runs,
            bound=recorded.relative,
            reason="no capture file has gpu__time_duration.sum for every launch",
        )
    current, path = min(judged)
    gpu = next(iter(capture.devices), None)
    bound, floor_runs = check_bound(recorded.relative, gpu, len(judged))
    return ProgramVerdict(
        program_state(recorded.value, current, bound),
        baseline=recorded.value,
        current=current,
        runs=runs,
        bound=bound,
        floor_runs=floor_runs,
        new_time=time_in(new_launches, path),
        missing_time=sum(recorded_time(k) for k in missing),
    )
