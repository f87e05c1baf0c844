"""Checking a capture against a baseline: one verdict per kernel, each with its metric
comparisons and the root causes of what changed (like asv compare, every comparison ends in an
explicit state, and the exit code follows from the states alone).

check() matches the capture's launches to the baseline's kernels and hands each kernel found to
the one route of a kernel's judgement (perfgate.verdicts.kernel.judge_kernel, with the rules of
perfgate.judge.rules); a kernel split into work classes, or of another scope or time basis, goes
there too, on part of its entry (perfgate.verdicts.split). The kernels missing and new, and
the changes that explain them, are perfgate.verdicts.absent's."""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.identity.grouping import group_launches, new_ids
from perfgate.identity.matching import SPLIT, Matching, match
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.common_mode import CommonFactor
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.metrics.columns import LaunchTable
from perfgate.metrics.stalls import FAMILY_MISMATCH
from perfgate.verdicts.absent import change_findings, missing_verdict, new_verdict, notice
from perfgate.verdicts.common_mode import process_factors, time_bounds
from perfgate.verdicts.kernel import CHANGED, Judging, judge_kernel, per_configuration
from perfgate.verdicts.metric import BoundsMemo
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict
from perfgate.verdicts.passing import Passing
from perfgate.verdicts.program import judge_program
from perfgate.verdicts.split import Reason, judge_out_of_scope, judge_split


@dataclass(frozen=True)
class CheckSettings:
    report_new_kernels: bool = True
    extra_warnings: tuple[str, ...] = field(default_factory=tuple)
    # Why the capture's launch counts do not compare with the baseline's (it was scoped by
    # other ncu launch filters); "": they do. Then the counts are skipped, not judged.
    other_scope: str = ""
    # Why the capture's durations do not compare with the baseline's (a gate capture against
    # a baseline of full captures, or the reverse: perfgate.ingest.meta.time_basis); "": they
    # do. Then the time metrics and the program time are skipped, not judged.
    other_basis: str = ""
    # The reasons the user waived by name (check --waive, a baseline's `waive:`): a gate not
    # judged for one of them is SKIPPED and passes; for any other, UNJUDGED, which fails.
    waived: frozenset[Skip] = frozenset()


# What depends on how many launches the capture holds (perfgate.ingest.scope).
SCOPED_METRICS = ("launches", "total_time")
# What depends on the metric set the durations were measured under (the time basis).
TIME_METRICS = ("duration", "total_time")
# What else a gate capture reads otherwise than a full capture: DRAM bytes, 2-8% fewer in
# gate captures of the same kernels (H100, measured), and the rate derived from them.
CAPTURE_TYPE_METRICS = ("dram_bytes", "dram_throughput")
OTHER_CAPTURE_TYPE = "DRAM traffic of gate and full captures of one kernel differs by 2-8%"


def _not_compared(settings: CheckSettings) -> dict[str, Reason]:
    """The metrics a check cannot judge, each with its reason: launch counts of another
    scope, durations and DRAM bytes of another time basis. A metric with two reasons is
    decided by the first one not waived (both must be waived for it to pass)."""
    found: dict[str, list[tuple[Skip, str]]] = {}
    if settings.other_basis:
        for m in TIME_METRICS:
            found.setdefault(m, []).append((Skip.TIME_BASIS, settings.other_basis))
        for m in CAPTURE_TYPE_METRICS:
            found.setdefault(m, []).append((Skip.CAPTURE_TYPE, OTHER_CAPTURE_TYPE))
    if settings.other_scope:
        for m in SCOPED_METRICS:
            found.setdefault(m, []).append((Skip.SCOPE, settings.other_scope))
    out: dict[str, Reason] = {}
    for m, reasons in found.items():
        deciding = next((r for r, _ in reasons if r not in settings.waived), reasons[0][0])
        out[m] = (deciding, "not compared: " + "; ".join(text for _, text in reasons))
    return out


def _family_warning(verdicts: Sequence[KernelVerdict]) -> str:
    """One warning for every stall metric the capture's stall family could not give: the
    families (the metrics' own message), how many metrics of how many kernels, the lever."""
    hit = [
        (v.kernel, c.message)
        for v in verdicts
        for c in v.comparisons
        if c.message.startswith(FAMILY_MISMATCH)
    ]
    if not hit:
        return ""
    kernels = len({k for k, _ in hit})
    return (
        f"{hit[0][1]}: {len(hit)} stall metrics of {kernels} kernel{'s' if kernels != 1 else ''}"
        " not compared; recapture with perfgate capture -b BASELINE"
    )


def check(
    baseline: Baseline, capture: Capture, settings: CheckSettings | None = None
) -> CheckResult:
    # The comparisons make ~10 objects per metric, none in a reference cycle: the cyclic
    # collector, run every 700 of them, would walk the capture's launches and the baseline
    # again each time it reached its oldest generation (docs/scale.md). Paused, as yamlload
    # pauses it while building a baseline.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check(baseline, capture, settings or CheckSettings())
    finally:
        if collecting:
            gc.enable()


def _check(baseline: Baseline, capture: Capture, settings: CheckSettings) -> CheckResult:
    groups = group_launches(capture.launches, by_nvtx=baseline.by_nvtx)
    matching = match(baseline, groups)
    ids = new_ids([g.key for g in matching.unclaimed], (k.id for k in baseline.kernels))
    matched = [matching.launches(kernel.id) for kernel in baseline.kernels]
    # Every kernel's metrics from the capture's columns at once (perfgate.metrics.columns).
    table = LaunchTable(capture.launches, matched)
    memo: BoundsMemo = {}
    passing = Passing(table, baseline, capture.columns, memo)
    judging = Judging(capture, baseline, settings.waived, memo, passing)
    reasons = _not_compared(settings)
    factors = _factors(baseline, matching, matched, capture, reasons)
    verdicts = [
        _found(index, kernel, launches, matching, judging, table, reasons, factors)
        if launches
        else missing_verdict(kernel, matching, ids, capture)
        for index, (kernel, launches) in enumerate(zip(baseline.kernels, matched, strict=True))
    ]
    if settings.report_new_kernels:
        for group in matching.unclaimed:
            replaced = tuple(kid for kid, (gs, _) in matching.replaced_by.items() if group in gs)
            verdicts.append(new_verdict(group, ids[group.key], replaced, capture))
    missing = [
        k
        for k, launches in zip(baseline.kernels, matched, strict=True)
        if not launches and (k.seen_in is None or k.id in matching.replaced_by)
    ]
    # With no baselined kernel left in the capture it may be another program's capture (the
    # notice says so): only a change of the whole program (its dtype, its math mode) is told.
    unchanged = len(missing) < len(baseline.kernels)
    changes = change_findings(missing, matching.unclaimed, ids, capture, unchanged, verdicts)
    explained = {m for c in changes for m in c.members}
    said = ""
    if all(k.id in explained for k in missing) and missing:
        pass  # every kernel gone is explained by a change: no other program (the findings say)
    elif baseline.kernels and not matching.groups and groups:
        said = notice(baseline, capture, groups)
    elif baseline.kernels and not capture.launches:
        said = (
            f"no launch in {', '.join(capture.paths)} comes from this baseline's GPU: capture "
            "on that GPU too, or leave its baseline out of this check"
        )
    # Another scope, time basis or capture type is said once per reason by every report
    # (verdicts.model.not_judged), not as a warning here.
    new_launches = [la for group in matching.unclaimed for la in group.launches]
    return CheckResult(
        baseline_path=baseline.path,
        capture_paths=capture.paths,
        verdicts=tuple(verdicts),
        warnings=_warnings(baseline, capture, settings, verdicts),
        devices=capture.devices,
        # Which GPU's launches this baseline judges was decided before
        # (perfgate.baseline.selection).
        baseline_gpu=baseline.gpu.gpu,
        notice=said,
        program=_program(baseline, capture, new_launches, missing, settings),
        changes=changes,
    )


def _found(
    index: int,
    kernel: KernelBaseline,
    launches: list[Launch],
    matching: Matching,
    judging: Judging,
    table: LaunchTable,
    reasons: Mapping[str, Reason],
    factors: Mapping[str, CommonFactor],
) -> KernelVerdict:
    """The verdict of a baselined kernel the capture holds (`index`: its place in the
    baseline and in `table`), on the one route of a kernel's judgement."""
    how = matching.how[kernel.id]
    if how.startswith(SPLIT):
        return judge_split(kernel, matching.groups[kernel.id], judging, reasons)
    if reasons:
        return judge_out_of_scope(kernel, launches, how, judging, reasons)
    configured = per_configuration(kernel, launches)
    # The capture files its launches come from: its time is the fastest launch of them all.
    runs = len({la.source for la in launches})
    bounds = time_bounds(configured, factors.get(kernel.id), judging.baseline.gpu.gpu, runs)
    cc = next((la.cc for la in launches if la.cc), None)
    return judge_kernel(
        bounds.kernel, launches, how, judging, table.kernel(index, cc), bounds.factor,
        recorded=kernel, two_run=bounds.two_run, runs=bounds.runs, as_measured=bounds.as_measured,
    )  # fmt: skip


def _warnings(
    baseline: Baseline,
    capture: Capture,
    settings: CheckSettings,
    verdicts: Sequence[KernelVerdict],
) -> tuple[str, ...]:
    warnings = list(capture.warnings) + list(settings.extra_warnings) + list(baseline.warnings)
    mismatch = _family_warning(verdicts)
    if mismatch:
        warnings.append(mismatch)
    return tuple(warnings)


def _factors(
    baseline: Baseline,
    matching: Matching,
    matched: Sequence[Sequence[Launch]],
    capture: Capture,
    not_compared: Mapping[str, Any],
) -> dict[str, CommonFactor]:
    """Each kernel's common factor (perfgate.verdicts.common_mode); none where durations are
    not compared at all."""
    if any(m in not_compared for m in TIME_METRICS):
        return {}
    plain = [not matching.how.get(k.id, "").startswith((SPLIT, *CHANGED)) for k in baseline.kernels]
    return process_factors(baseline.kernels, matched, plain, capture)


def _program(
    baseline: Baseline,
    capture: Capture,
    new_launches: list[Launch],
    missing: list[KernelBaseline],
    settings: CheckSettings,
) -> ProgramVerdict | None:
    """The whole-program time, a sum over the captured launches: of another scope or time
    basis it is not judged, like the kernels' launch counts and durations, and fails
    (UNJUDGED) unless every reason was waived by name."""
    program = judge_program(baseline, capture, new_launches, missing)
    reasons = [
        (skip, text)
        for skip, text in (
            (Skip.TIME_BASIS, settings.other_basis),
            (Skip.SCOPE, settings.other_scope),
        )
        if text
    ]
    if program.skip is not None:  # the capture could not give it: judged below like the rest
        reasons = [(program.skip, program.reason), *reasons]
    elif program.state is KernelState.SKIPPED or not reasons:
        return program  # judged, or no program time recorded: nothing the baseline gates
    deciding = next((r for r, _ in reasons if r not in settings.waived), None)
    return replace(
        program,
        state=KernelState.SKIPPED if deciding is None else KernelState.UNJUDGED,
        skip=deciding or reasons[0][0],
        reason="not compared: " + "; ".join(text for _, text in reasons),
    )
