"""Checking a capture against a baseline. Every comparison ends in an explicit state, and the
exit code follows from the states alone (like asv compare)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NoReturn

from perfgate.baseline import Baseline, KernelBaseline, KernelMatch, MetricBaseline
from perfgate.capture import Capture, Launch
from perfgate.catalog import Aggregate, MetricDef
from perfgate.diagnosis import Diagnosis, diagnose
from perfgate.errors import ExitCode
from perfgate.measure import Measured, Unavailable, measure
from perfgate.thresholds import (
    CategoricalCheck,
    Outcome,
    Threshold,
    judge_categorical,
    judge_numeric,
)


class State(enum.Enum):
    PASS = "pass"  # noqa: S105 (a state, not a password)
    REGRESSED = "regressed"
    IMPROVED = "improved"
    MISSING_KERNEL = "missing kernel"
    MISSING_METRIC = "missing metric"
    NEW_KERNEL = "new kernel"
    SKIPPED = "skipped"
    ERROR = "error"


# The order reports list states in: what blocks a merge first.
SEVERITY: tuple[State, ...] = (
    State.ERROR,
    State.REGRESSED,
    State.MISSING_KERNEL,
    State.MISSING_METRIC,
    State.IMPROVED,
    State.NEW_KERNEL,
    State.SKIPPED,
    State.PASS,
)


def _never(value: NoReturn) -> NoReturn:
    raise AssertionError(f"unhandled state {value!r}")


def state_exit_code(state: State) -> ExitCode:
    """What one state means for the build. Exhaustive: mypy flags a state left out."""
    if state in (State.PASS, State.IMPROVED, State.NEW_KERNEL, State.SKIPPED):
        return ExitCode.OK
    if state is State.REGRESSED or state is State.MISSING_KERNEL or state is State.MISSING_METRIC:
        return ExitCode.GATE_FAILED
    if state is State.ERROR:
        return ExitCode.INPUT_ERROR
    _never(state)


def exit_code(states: Iterable[State]) -> ExitCode:
    worst = ExitCode.OK
    for state in states:
        code = state_exit_code(state)
        # An input error outranks a gate failure: the gate could not judge.
        if code is ExitCode.INPUT_ERROR or (code is ExitCode.GATE_FAILED and worst is ExitCode.OK):
            worst = code
    return worst


@dataclass(frozen=True)
class Comparison:
    kernel: str  # the baseline's kernel id (or the function name of a new kernel)
    kernel_name: str  # the name ncu printed
    metric: str | None  # None for a whole-kernel state (new kernel)
    state: State
    baseline: float | str | None = None
    current: float | str | None = None
    unit: str = ""
    change: float | None = None
    relative_change: float | None = None
    bound: str = ""
    message: str = ""
    launches: int = 0
    baseline_shares: dict[str, float] | None = None
    current_shares: dict[str, float] | None = None


@dataclass(frozen=True)
class CheckResult:
    """One baseline (one GPU) checked against the captures."""

    baseline_path: str
    capture_paths: tuple[str, ...]
    comparisons: tuple[Comparison, ...]
    warnings: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    baseline_gpu: str | None = None
    # What the current capture says about each kernel that regressed (kernel id -> diagnosis).
    diagnoses: Mapping[str, Diagnosis] = field(default_factory=dict)

    @property
    def exit_code(self) -> ExitCode:
        # A check that compared nothing never passes: the schema requires at least one kernel,
        # and a kernel that is not found is MISSING_KERNEL.
        return exit_code(c.state for c in self.comparisons)

    def counts(self) -> dict[State, int]:
        out = dict.fromkeys(State, 0)
        for c in self.comparisons:
            out[c.state] += 1
        return out

    def ordered(self) -> list[Comparison]:
        rank = {s: i for i, s in enumerate(SEVERITY)}
        return sorted(self.comparisons, key=lambda c: rank[c.state])


@dataclass(frozen=True)
class Report:
    """Everything one `perfgate check` found: a result per baseline, or the input problems
    that stopped it before any comparison (then `results` is empty)."""

    results: tuple[CheckResult, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def exit_code(self) -> ExitCode:
        if self.problems:
            return ExitCode.INPUT_ERROR
        return exit_code(c.state for r in self.results for c in r.comparisons)

    @property
    def comparisons(self) -> tuple[Comparison, ...]:
        return tuple(c for r in self.results for c in r.comparisons)

    def counts(self) -> dict[State, int]:
        out = dict.fromkeys(State, 0)
        for c in self.comparisons:
            out[c.state] += 1
        return out


@dataclass(frozen=True)
class CheckSettings:
    report_new_kernels: bool = True
    extra_warnings: tuple[str, ...] = field(default_factory=tuple)


def _bounds(
    defn: MetricDef, metric: MetricBaseline, baseline: Baseline
) -> tuple[Threshold, CategoricalCheck]:
    """Catalog default, then the file's `thresholds:`, then the metric's own override."""
    threshold = defn.threshold.merged(baseline.thresholds.get(defn.name)).merged(metric.threshold)
    check = (defn.check or CategoricalCheck()).merged(baseline.checks.get(defn.name))
    return threshold, check.merged(metric.check)


_NUMERIC_STATE = {
    Outcome.WITHIN: State.PASS,
    Outcome.WORSE: State.REGRESSED,
    Outcome.BETTER: State.IMPROVED,
}


def _compare_metric(
    kernel: KernelBaseline,
    metric: MetricBaseline,
    launches: Sequence[Launch],
    capture: Capture,
    baseline: Baseline,
) -> Comparison:
    defn = metric.definition
    base = Comparison(
        kernel=kernel.id,
        kernel_name=launches[0].name,
        metric=metric.name,
        state=State.PASS,
        baseline=metric.value,
        unit=defn.unit,
        launches=len(launches),
    )
    measured = measure(defn, launches, capture.columns, metric.formula_group)
    if isinstance(measured, Unavailable) and measured.architecture:
        return replace(base, state=State.SKIPPED, message=measured.reason)
    if isinstance(measured, Unavailable):
        needed = ""
        if measured.needed:
            more = ", ..." if len(measured.needed) > 4 else ""
            needed = f" (needs {', '.join(measured.needed[:4])}{more})"
        return replace(base, state=State.MISSING_METRIC, message=measured.reason + needed)
    threshold, check = _bounds(defn, metric, baseline)
    if defn.categorical or isinstance(metric.value, str) or isinstance(measured.value, str):
        return _compare_categorical(defn, metric, measured, check, base)
    verdict = judge_numeric(
        float(metric.value),
        float(measured.value),
        threshold,
        defn.direction,
        measured.unit,
        metric.low,
        metric.high,
    )
    return replace(
        base,
        state=_NUMERIC_STATE[verdict.outcome],
        current=measured.value,
        unit=measured.unit,
        change=verdict.change,
        relative_change=verdict.relative_change,
        bound=verdict.bound,
    )


def _compare_categorical(
    defn: MetricDef,
    metric: MetricBaseline,
    measured: Measured,
    check: CategoricalCheck,
    base: Comparison,
) -> Comparison:
    if not isinstance(metric.value, str) or not isinstance(measured.value, str):
        message = (
            f"cannot compare {metric.value!r} with {measured.value!r}: "
            "one is a number, the other a label"
        )
        return replace(base, state=State.ERROR, current=measured.value, message=message)
    lead = None
    if defn.aggregate is Aggregate.DOMINANT and measured.shares is not None:
        lead = measured.shares.get(measured.value, 0.0) - measured.shares.get(metric.value, 0.0)
    verdict = judge_categorical(metric.value, measured.value, check, lead)
    bound_parts = []
    if check.stable:
        margin = f" (margin {check.margin:g} points)" if check.margin else ""
        bound_parts.append("unchanged" + margin)
    if check.expect:
        bound_parts.append("one of " + ", ".join(check.expect))
    if check.forbid:
        bound_parts.append("not " + ", ".join(check.forbid))
    return replace(
        base,
        state=State.REGRESSED if verdict.outcome is Outcome.WORSE else State.PASS,
        current=measured.value,
        unit="",
        bound="; ".join(bound_parts),
        message=verdict.reason,
        baseline_shares=dict(metric.shares) if metric.shares else None,
        current_shares=measured.shares,
    )


def _new_kernels(unmatched: list[Launch]) -> list[Comparison]:
    seen: dict[str, list[Launch]] = {}
    for launch in unmatched:
        seen.setdefault(launch.name, []).append(launch)
    return [
        Comparison(
            kernel=launches[0].function,
            kernel_name=name,
            metric=None,
            state=State.NEW_KERNEL,
            launches=len(launches),
            message="not in the baseline; record it to gate it",
        )
        for name, launches in seen.items()
    ]


class _LaunchIndex:
    """Launches by function and by exact name, so that matching K baselined kernels against
    N launches costs N + K lookups instead of N x K comparisons (docs/scale.md)."""

    def __init__(self, launches: Sequence[Launch]) -> None:
        self.all = launches
        self.by_function: dict[str, list[Launch]] = {}
        self.by_name: dict[str, list[Launch]] = {}
        for launch in launches:
            self.by_function.setdefault(launch.function, []).append(launch)
            self.by_name.setdefault(launch.name, []).append(launch)

    def candidates(self, match: KernelMatch) -> Sequence[Launch]:
        if match.name is not None:
            return self.by_name.get(match.name, [])
        if match.function is not None:
            return self.by_function.get(match.function, [])
        return self.all  # a regular expression: every launch is a candidate


def check(
    baseline: Baseline, capture: Capture, settings: CheckSettings | None = None
) -> CheckResult:
    settings = settings or CheckSettings()
    comparisons: list[Comparison] = []
    diagnoses: dict[str, Diagnosis] = {}
    matched: set[int] = set()
    index = _LaunchIndex(capture.launches)
    for kernel in baseline.kernels:
        launches = [la for la in index.candidates(kernel.match) if kernel.match.matches(la)]
        matched.update(id(launch) for launch in launches)
        if not launches:
            for metric in kernel.metrics:
                comparisons.append(
                    Comparison(
                        kernel=kernel.id,
                        kernel_name=kernel.name or kernel.id,
                        metric=metric.name,
                        state=State.MISSING_KERNEL,
                        baseline=metric.value,
                        unit=metric.definition.unit,
                        message=f"no launch in the capture matches {kernel.match.describe()}",
                    )
                )
            continue
        compared = [
            _compare_metric(kernel, metric, launches, capture, baseline)
            for metric in kernel.metrics
        ]
        comparisons.extend(compared)
        if any(c.state is State.REGRESSED for c in compared):
            diagnoses[kernel.id] = diagnose(kernel.id, launches, capture.columns)
    if settings.report_new_kernels:
        comparisons.extend(
            _new_kernels([launch for launch in capture.launches if id(launch) not in matched])
        )
    gpu = (
        (baseline.provenance.get("gpu") or {}).get("name")
        if isinstance(baseline.provenance.get("gpu"), dict)
        else None
    )
    warnings = list(capture.warnings) + list(settings.extra_warnings)
    devices = capture.devices
    if gpu and devices and gpu not in devices:
        warnings.append(
            f"the baseline was recorded on {gpu}, the capture comes from {', '.join(devices)}: "
            "counters differ between GPUs, keep one baseline per GPU"
        )
    return CheckResult(
        baseline_path=baseline.path,
        capture_paths=capture.paths,
        comparisons=tuple(comparisons),
        warnings=tuple(warnings),
        devices=devices,
        baseline_gpu=gpu,
        diagnoses=diagnoses,
    )
