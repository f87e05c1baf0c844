"""`perfgate check`'s judgement on plain data: the baselines loaded, the captures read, each
capture judged by the baseline of its GPU, and what `baseline update --ratchet` would tighten.
No report is written here (check_command.py, outputs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from perfgate.baseline.load import load_baseline
from perfgate.baseline.model import Baseline
from perfgate.baseline.selection import assign, expand
from perfgate.causes.without_baseline import raw_inputs
from perfgate.common.errors import (
    BaselineError,
    CaptureError,
    PerfgateError,
    UsageError,
)
from perfgate.ingest import MetricSelection, read_captures
from perfgate.ingest.launches import Capture
from perfgate.judge.skips import Skip, parse_waivers
from perfgate.metrics.thresholds import ThresholdOverride
from perfgate.metrics.values import check_values
from perfgate.verdicts.check import CheckSettings, check
from perfgate.verdicts.model import CheckResult, Report


@dataclass(frozen=True)
class CheckRequest:
    baselines: tuple[str, ...]  # files and directories of baselines
    capture_files: tuple[str, ...]
    report_new_kernels: bool = True
    allow_other_gpu: bool = False  # one baseline may judge captures from another GPU
    # Reasons a gate may go unjudged without failing, by name (check --waive; docs/check.md).
    waived: frozenset[Skip] = frozenset()
    # check --threshold METRIC=BOUND: a metric's bound for every kernel, this run only.
    thresholds: Mapping[str, ThresholdOverride] = field(default_factory=dict)
    # perfgate compare: the baseline is recorded from these captures, in memory.
    recorded_from: tuple[str, ...] = ()


def run_check(request: CheckRequest) -> Report:
    try:
        return _run_check(request)
    except (BaselineError, CaptureError) as exc:
        from perfgate.baseline.swapped import hinted

        # A capture given as the baseline (or the other way round): said as that.
        better = hinted(exc, compare=bool(request.recorded_from))
        if better is None:
            raise
        raise better from exc


def _run_check(request: CheckRequest) -> Report:
    paths = expand(request.baselines)
    baselines = [load_baseline(p.path) for p in paths]
    named = [not p.from_directory for p in paths]
    if request.recorded_from:  # perfgate compare: BEFORE is the baseline, named as a file
        from perfgate.lifecycle.compare import recorded

        baselines.append(recorded(request.recorded_from))
        named.append(True)
    notes: list[str] = []
    files = {b.path: b for b in baselines}  # as the ratchet reads them: without --threshold
    if request.thresholds:
        from perfgate.baseline.overrides import unused, with_thresholds

        for b in baselines:
            notes.extend(
                f"--threshold {name}: {b.path} gates no {name}; it changes nothing there"
                for name in unused(b, request.thresholds)
            )
        baselines = [with_thresholds(b, request.thresholds) for b in baselines]
    if request.allow_other_gpu and len(baselines) > 1:
        raise UsageError(
            "--allow-other-gpu lets one baseline judge another GPU's captures; "
            f"{len(baselines)} baselines were given (pass the one to compare against)"
        )
    # Read only the columns the baselines and the diagnosis can use: --set full has ~2,200.
    wanted: set[str] = raw_inputs()
    for baseline in baselines:
        wanted |= baseline.raw_metrics()
    capture = read_captures(request.capture_files, MetricSelection(wanted))
    check_values(capture)
    plan = assign(baselines, named, capture, request.allow_other_gpu)
    results = tuple(
        check(
            a.baseline,
            a.capture,
            CheckSettings(
                report_new_kernels=request.report_new_kernels,
                extra_warnings=a.warnings,
                other_scope=a.other_scope,
                other_basis=a.other_basis,
                waived=request.waived | _allowed_by(request) | parse_waivers(a.baseline.waive),
            ),
        )
        for a in plan.assignments
    )
    if not request.recorded_from and not request.allow_other_gpu:
        # perfgate compare's baseline is no file to ratchet; the ratchet refuses another GPU.
        results = tuple(
            _with_ratchet(r, files[a.baseline.path], a.capture, request)
            for r, a in zip(results, plan.assignments, strict=True)
        )
    return Report(results, notes=(*plan.notes, *notes))


def _with_ratchet(
    result: CheckResult, baseline: Baseline, capture: Capture, request: CheckRequest
) -> CheckResult:
    """The result with what `baseline update --ratchet` would tighten from these captures,
    worked out by the ratchet's own plan where something improved beyond its bound (the
    reports suggest the ratchet only for that, and name it)."""
    if not result.improved() and not request.thresholds:
        return result  # it takes only improvements (--threshold may have hidden one)
    from perfgate.lifecycle.plan import plan_ratchet, ratchet_takes

    # The ratchet judges by the file's own bounds and no waiver: this check's result is its
    # own where no --threshold changed a bound and nothing went unjudged, else it checks anew.
    unjudged = any(c.skip is not None for v in result.verdicts for c in v.comparisons) or (
        result.program is not None and result.program.skip is not None
    )
    same = not request.thresholds and not unjudged
    plan = plan_ratchet(baseline, capture, judged=result if same else None)
    return replace(result, ratchet=ratchet_takes(plan))


def _allowed_by(request: CheckRequest) -> frozenset[Skip]:
    """--allow-other-gpu names what it lets go unjudged: the metrics the other GPU's
    architecture lacks."""
    return frozenset({Skip.ARCHITECTURE}) if request.allow_other_gpu else frozenset()


def check_inputs(request: CheckRequest) -> list[str]:
    """Every file a check reads: the baselines (each *.yaml/*.yml of a directory given) and
    the captures with their sidecars."""
    from perfgate.ingest.meta import sidecar_path

    try:
        baselines = [p.path for p in expand(request.baselines)]
    except PerfgateError:  # an empty directory: run_check says so
        baselines = []
    from perfgate.ingest.phases import linked

    files = linked((*request.capture_files, *request.recorded_from))
    sidecars = [str(sidecar_path(c)) for c in files]
    return [*request.baselines, *baselines, *files, *sidecars]
