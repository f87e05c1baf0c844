"""Recording a baseline from one or more captures of a known-good build.

Each capture file counts as one separate ncu run. A metric's value is the median over all the
kernel's launches; with three runs or more, its bound is calibrated from the spread of the
per-run medians (perfgate.lifecycle.calibrate) and the rule that gave it is written beside it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate import __version__
from perfgate.baseline.fingerprint import Fingerprint, for_record
from perfgate.baseline.model import (
    Baseline,
    KernelBaseline,
    KernelMatch,
    LaunchConfig,
    MetricBaseline,
)
from perfgate.causes import measure_all
from perfgate.causes import metrics as diagnosis_metrics
from perfgate.common.errors import UsageError
from perfgate.identity.configs import (
    CONFIG_INDEPENDENT,
    config_of,
    configurations,
    merge_tuned,
    records_configuration,
    tuned_warning,
    with_durations,
    with_traffic,
)
from perfgate.identity.families import family_of
from perfgate.identity.grouping import (
    KernelGroup,
    KernelKey,
    group_launches,
    readable_ids,
    select,
)
from perfgate.ingest.launches import Capture, Launch, per_file
from perfgate.ingest.meta import GATE
from perfgate.lifecycle.calibrate import (
    MIN_RUNS,
    VARIES_SPREAD,
    calibrate,
    calibrate_pooled,
    floor_for,
    kernel_varies,
    lookback_floor,
    relative_spread,
)
from perfgate.lifecycle.pooled import CROSS_K, PooledValue, Starts, pooled_value, starts_of
from perfgate.lifecycle.program import record_program
from perfgate.metrics.catalog import Aggregate, MetricDef, StallKind, default_metrics, lookup
from perfgate.metrics.measure import Measured, Unavailable, measure, rule_speedups
from perfgate.metrics.stalls import present_reasons, stall_family_report
from perfgate.metrics.thresholds import Noise, ThresholdOverride


@dataclass(frozen=True)
class RecordSettings:
    kernel_patterns: tuple[str, ...] = ()  # regexes over the kernel name; none: every kernel
    metrics: tuple[str, ...] = ()  # metric names; none: the catalog's default set
    reason: str | None = None
    by_nvtx: bool = False  # the NVTX range is part of a kernel's identity


@dataclass(frozen=True)
class RecordResult:
    baseline: Baseline
    skipped: tuple[str, ...]  # "kernel: metric: why" for metrics a kernel could not record
    notes: tuple[str, ...] = ()
    # Kernels recorded as autotuned (perfgate.identity.configs), how to pin each one.
    warnings: tuple[str, ...] = ()


def _sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _per_run(defn: MetricDef, launches: Sequence[Launch], columns: frozenset[str]) -> list[float]:
    """The metric's value in each capture file (one separate ncu run) on its own."""
    by_file: dict[str, list[Launch]] = {}
    for launch in launches:
        by_file.setdefault(launch.source, []).append(launch)
    out = []
    for members in by_file.values():
        m = measure(defn, members, columns)
        if isinstance(m, Measured) and isinstance(m.value, float):
            out.append(m.value)
    return out


def _reuse(launches: Sequence[Launch], columns: frozenset[str]) -> float | None:
    """How many times over a kernel reads its DRAM bytes from L2: its L2 sectors x 32 bytes over
    its DRAM bytes (calibrate.reuse_floor); None where the capture lacks either."""
    values = []
    for name in ("l2_sectors", "dram_bytes"):
        got = measure(lookup(name), launches, columns)
        if not isinstance(got, Measured) or not isinstance(got.value, float):
            return None
        values.append(got.value)
    l2_sectors, dram = values
    return l2_sectors * 32.0 / dram if dram > 0 else None


def _metric_baseline(
    m: Measured,
    defn: MetricDef,
    per_run: list[float],
    duration: float | None,
    gpu: str | None = None,
    not_exact: bool = False,
    reuse: float | None = None,
) -> MetricBaseline:
    threshold = None
    note = None
    shares_metric = defn.stall is not None and defn.stall is not StallKind.CPI
    numeric = isinstance(m.value, float) and not defn.categorical and not defn.raw
    # Fewer runs say nothing about the spread: the catalog's defaults stand (and a note says
    # so). An exact metric whose runs agree stays exact without a line in the file, unless the
    # kernel is not exact (`not_exact`: calibrate.lookback_floor).
    if (
        numeric
        and len(per_run) >= MIN_RUNS
        and (
            defn.noise is Noise.NOISY
            or len(set(per_run)) > 1
            or lookback_floor(defn.name, not_exact) is not None
        )
    ):
        launch_range = 0.0
        if defn.aggregate is Aggregate.MEDIAN and m.low is not None and m.high is not None:
            value = float(m.value)
            launch_range = (m.high - m.low) / abs(value) if value else 0.0
        calibration = calibrate(defn, per_run, duration, launch_range, gpu, not_exact, reuse)
        threshold = ThresholdOverride(
            relative=round(calibration.relative, 4), absolute=calibration.absolute
        )
        note = calibration.rule
    return MetricBaseline(
        name=m.metric,
        value=m.value,
        low=m.low,
        high=m.high,
        unit=m.unit,
        source=m.source,
        group=m.group,
        shares=m.shares,
        threshold=threshold,
        # Shares depend on the reason set they are taken over; cycles per instruction of one
        # reason do not, and the same quantity in every counter family: not written for them.
        reasons=(m.reasons or None) if shares_metric else None,
        family=(m.family or None) if shares_metric else None,
        calibration=note,
    )


def _pooled(
    defn: MetricDef, launches: Sequence[Launch], columns: frozenset[str], starts: Starts
) -> tuple[PooledValue, list[float]] | None:
    """The metric over each start's launches, pooled (perfgate.lifecycle.pooled), and every
    run's value; None where fewer than two starts give it a number."""
    values: list[float] = []
    ranges: list[tuple[float | None, float | None]] = []
    spreads: list[float] = []
    every_run: list[float] = []
    for members in starts.split(launches):
        got = measure(defn, members, columns)
        if not isinstance(got, Measured) or not isinstance(got.value, float):
            continue
        values.append(got.value)
        ranges.append((got.low, got.high))
        runs = _per_run(defn, members, columns)
        every_run += runs
        if len(runs) >= 2:
            spreads.append(relative_spread(runs))
    if len(values) < 2:
        return None
    return pooled_value(values, ranges, spreads), every_run


def _pooled_metric(
    m: Measured,
    defn: MetricDef,
    launches: Sequence[Launch],
    columns: frozenset[str],
    starts: Starts,
    noise: tuple[float | None, str | None, bool, float | None],
) -> MetricBaseline:
    """A metric recorded from several machine starts: the median of the starts' values, the
    bound from calibrate_pooled. `noise`: the kernel's duration, GPU, whether it is not exact,
    and its L2 reuse (what the floors read)."""
    duration, gpu, not_exact, reuse = noise
    numeric = isinstance(m.value, float) and not defn.categorical and not defn.raw
    got = _pooled(defn, launches, columns, starts) if numeric else None
    if got is None:
        return _metric_baseline(
            m, defn, _per_run(defn, launches, columns), duration, gpu, not_exact, reuse
        )
    pooled, every_run = got
    base = _metric_baseline(m, defn, [], duration, gpu, not_exact, reuse)
    kept = replace(base, value=pooled.value, low=pooled.low, high=pooled.high)
    if len(every_run) < MIN_RUNS or not (
        defn.noise is Noise.NOISY
        or len(set(every_run)) > 1
        or lookback_floor(defn.name, not_exact) is not None
    ):
        return kept
    launch_range = 0.0
    if defn.aggregate is Aggregate.MEDIAN and pooled.low is not None and pooled.high is not None:
        launch_range = (pooled.high - pooled.low) / abs(pooled.value) if pooled.value else 0.0
    calibration = calibrate_pooled(
        defn, len(every_run), pooled.within, pooled.across, pooled.value, duration,
        launch_range, gpu, not_exact, reuse, pooled.starts,
        relative_spread(every_run) >= VARIES_SPREAD, CROSS_K,
    )  # fmt: skip
    return replace(
        kept,
        threshold=ThresholdOverride(
            relative=round(calibration.relative, 4), absolute=calibration.absolute
        ),
        calibration=calibration.rule,
    )


def _duration(launches: Sequence[Launch], capture: Capture) -> float | None:
    got = measure(lookup("duration"), launches, capture.columns)
    return float(got.value) if isinstance(got, Measured) and isinstance(got.value, float) else None


def _pins(group: KernelGroup, seen: Sequence[LaunchConfig]) -> bool:
    """A Triton/Inductor kernel at one configuration records it (perfgate.identity.configs)."""
    return len(seen) == 1 and records_configuration(group.key.name)


def _tuned_duration(
    m: Measured,
    defn: MetricDef,
    launches: Sequence[Launch],
    common: LaunchConfig,
    capture: Capture,
    duration: float | None,
    gpu: str | None = None,
) -> MetricBaseline:
    """An autotuned entry's duration is judged per configuration (each one's best duration in
    `configurations:`), so its bound is the noise of one configuration: the spread of the
    configuration most runs used where 3 runs used it, else the calibrated floor, never the
    spread across configurations (54.9% for perfgate_autotuned_mm, triton-autotune h100-a)."""
    same = [la for la in launches if config_of(la).shape == common.shape]
    per_run = _per_run(defn, same, capture.columns)
    if len(per_run) >= MIN_RUNS:
        base = _metric_baseline(m, defn, per_run, duration, gpu)
        return replace(base, calibration=f"per configuration: {base.calibration}")
    floor = floor_for(defn, duration, gpu)
    return replace(
        _metric_baseline(m, defn, [], duration),
        threshold=ThresholdOverride(relative=round(floor.relative, 4), absolute=floor.absolute),
        calibration=f"per configuration: {len(per_run)} run(s) at one configuration: floor "
        f"{floor.relative:.2%} ({floor.why})",
    )


def record_kernel(
    group: KernelGroup,
    kid: str,
    names: list[str],
    capture: Capture,
    tuned: bool = False,
    diagnosis: tuple[Sequence[Launch], frozenset[str]] | None = None,
    starts: Starts | None = None,
) -> tuple[KernelBaseline | None, list[str]]:
    """`tuned`: an autotuned kernel, whose configuration-dependent metrics go to `info`.
    `diagnosis`: the same kernel's launches in full captures of the same build, and their
    columns, which fill `info` with what a gate capture does not hold. `starts`: the machine
    start of each capture file, two or more: each gated metric is pooled over them
    (perfgate.lifecycle.pooled)."""
    skipped: list[str] = []
    launches = group.launches
    gated = [n for n in names if n in CONFIG_INDEPENDENT] if tuned else names
    duration_m = measure(lookup("duration"), launches, capture.columns)
    duration = (
        float(duration_m.value)
        if isinstance(duration_m, Measured) and isinstance(duration_m.value, float)
        else None
    )
    if starts is not None and duration is not None and not tuned:
        # The floors follow the duration a check is judged against: the median over starts.
        pooled_duration = _pooled(lookup("duration"), launches, capture.columns, starts)
        duration = pooled_duration[0].value if pooled_duration else duration
    # The GPU decides the time floors (calibrate.TIME_FLOOR_POINTS).
    gpu = next((la.device for la in launches if la.device), None)
    seen = configurations(launches)
    if tuned:
        seen = with_durations(seen, launches, lambda run: _duration(run, capture))
    # Instructions that differ between runs make the kernel's other counts not exact either.
    not_exact = kernel_varies(_per_run(lookup("instructions_executed"), launches, capture.columns))
    reuse = _reuse(launches, capture.columns)
    metrics: list[MetricBaseline] = []
    for name in gated:
        defn = lookup(name)
        result = measure(defn, launches, capture.columns)
        if isinstance(result, Unavailable):
            skipped.append(f"{kid}: {name}: {result.reason}")
            continue
        if tuned and name == "duration":
            metrics.append(_tuned_duration(result, defn, launches, seen[0], capture, duration, gpu))
            continue
        if starts is not None and not tuned:
            # An autotuned kernel's time spans the configurations each start chose: its
            # runs are judged as one spread, not pooled per start.
            noise = (duration, gpu, not_exact, reuse)
            metrics.append(_pooled_metric(result, defn, launches, capture.columns, starts, noise))
            continue
        per_run = _per_run(defn, launches, capture.columns)
        metrics.append(_metric_baseline(result, defn, per_run, duration, gpu, not_exact, reuse))
    if not metrics:
        return None, skipped
    # Beside the gated values, what the differential diagnosis reads on both sides of a
    # later check; `info` is never gated.
    diagnostic = [n for n in [*names, *diagnosis_metrics()] if n not in gated]
    info: dict[str, float | str] = {}
    if diagnosis is not None:
        # A gate-basis baseline's diagnosis side, from full captures: never gated, and the
        # gate captures' own values (below) win where both have one.
        more, columns = diagnosis
        cc = next((la.cc for la in more if la.cc), None)
        wanted = [*diagnostic, *default_metrics(columns, cc)]
        info.update(
            (name, got.value)
            for name, got in measure_all(more, columns, list(dict.fromkeys(wanted))).items()
            if name not in gated
        )
        info.update(rule_speedups(more))
    info.update(
        (name, got.value)
        for name, got in measure_all(
            launches, capture.columns, list(dict.fromkeys(diagnostic))
        ).items()
    )
    info.update(rule_speedups(launches))
    key = group.key
    family = family_of(key.name)
    match = KernelMatch(name=key.name, grid=key.grid, block=key.block, nvtx=key.nvtx, work=key.work)
    runs = len({launch.source for launch in launches})
    per_run_launches = len(launches) / runs if runs else None
    recorded = len(capture.paths)
    return KernelBaseline(
        kid,
        match,
        tuple(metrics),
        key.name,
        int(per_run_launches) if per_run_launches is not None else None,
        info=info,
        family=family.name if family else None,
        configurations=seen if tuned or _pins(group, seen) else (),
        seen_in=(runs, recorded) if 0 < runs < recorded else None,
    ), skipped


def varied_warning(kernels: Sequence[KernelBaseline], runs: int) -> str | None:
    """The kernels only some recorded runs launched: the program's kernel set is not the same
    from one run to the next, which the user should hear at record time, not when a later
    check finds them absent (a check does not require them)."""
    varied = [k for k in kernels if k.seen_in is not None]
    if not varied:
        return None
    shown = ", ".join(f"{k.id} ({k.seen_in[0]} of {runs})" for k in varied[:4] if k.seen_in)
    more = f" and {len(varied) - 4} more" if len(varied) > 4 else ""
    return (
        f"{len(varied)} kernel(s) were launched in only some of the {runs} runs: {shown}{more}. "
        "The program's kernels differ between runs: data-dependent work (an MoE's routing, "
        "a size read from the data) or memory it never initialised (a transformers module "
        "built on its own, outside from_pretrained, keeps torch.empty weights). A check does "
        "not require these kernels; make the program's work the same in every run to gate "
        "them (docs/identity.md)"
    )


def capture_fingerprint(
    capture: Capture, kernels: Sequence[KernelBaseline], launches: Sequence[Launch]
) -> tuple[Fingerprint, list[str]]:
    """The fingerprint of a baseline of `kernels` recorded from `capture`, with the notes
    about its stall family and files that disagree (record and baseline update share it)."""
    cc = next((launch.cc for launch in launches if launch.cc), None)
    sample = [la.metrics for la in launches[:50]]
    family, warned = stall_family_report(capture.columns, cc, sample)
    reasons = present_reasons(family, capture.columns, cc, sample) if family else ()
    draft = Baseline(kernels=tuple(kernels))
    fingerprint, disagreements = for_record(
        capture, draft.raw_metrics(), family.name if family else None, sorted(reasons)
    )
    return fingerprint, list(warned) + disagreements


def _by_kernel(diagnosis: Capture, by_nvtx: bool) -> Callable[[KernelKey], Sequence[Launch]]:
    """The launches of a kernel in the diagnosis captures: its own identity, else the same
    name, grid and block, else the same name (a full capture may split work classes
    differently, and shapes may vary)."""
    exact: dict[KernelKey, list[Launch]] = {}
    shaped: dict[tuple[str, object, object], list[Launch]] = {}
    named: dict[str, list[Launch]] = {}
    for group in group_launches(diagnosis.launches, by_nvtx=by_nvtx):
        k = group.key
        exact.setdefault(k, []).extend(group.launches)
        shaped.setdefault((k.name, k.grid, k.block), []).extend(group.launches)
        named.setdefault(k.name, []).extend(group.launches)

    def launches(key: KernelKey) -> Sequence[Launch]:
        return (
            exact.get(key)
            or shaped.get((key.name, key.grid, key.block))
            or named.get(key.name)
            or ()
        )

    return launches


def record(
    capture: Capture, settings: RecordSettings, diagnosis: Capture | None = None
) -> RecordResult:
    """`diagnosis`: full captures of the same build beside gate captures (`record
    --diagnosis-capture`): the baseline's durations and gates come from `capture`, the
    diagnosis side (`info`) of each kernel from these as well."""
    launches = select(capture.launches, settings.kernel_patterns)
    lookup_diagnosis = _by_kernel(diagnosis, settings.by_nvtx) if diagnosis else None
    diagnosis_columns = diagnosis.columns if diagnosis else frozenset()
    for name in settings.metrics:
        lookup(name)  # unknown names fail here, before any work
    cc = next((launch.cc for launch in launches if launch.cc), None)
    names = list(settings.metrics) or default_metrics(capture.columns, cc)
    groups, tuned = merge_tuned(
        group_launches(launches, by_nvtx=settings.by_nvtx), len(capture.paths)
    )
    ids = readable_ids([g.key for g in groups])
    starts, unpooled = starts_of(capture)
    kernels: list[KernelBaseline] = []
    skipped: list[str] = []
    warnings: list[str] = []
    explained = 0  # kernels that found their launches in the diagnosis captures
    for group in groups:
        more = lookup_diagnosis(group.key) if lookup_diagnosis else ()
        explained += bool(more)
        kernel, why = record_kernel(
            group, ids[group.key], names, capture, group.key in tuned,
            (more, diagnosis_columns) if more else None, starts,
        )  # fmt: skip
        skipped.extend(why)
        if kernel is not None:
            kernel = with_traffic(kernel, group.launches)  # an autotuned size's, for the check
            kernels.append(kernel)
            if kernel.tuned:
                warnings.append(
                    tuned_warning(kernel.id, group.key.name, kernel.configurations,
                                  tuned[group.key])
                )  # fmt: skip
    recorded = {m.name for k in kernels for m in k.metrics}
    missing = [n for n in names if n not in recorded]
    if settings.metrics and missing:
        needed = sorted({raw for n in missing for raw in lookup(n).inputs(cc)})
        raise UsageError(
            f"the capture cannot give {', '.join(missing)} for any kernel; "
            f"ncu needs: --metrics {','.join(needed)}"
        )
    if not kernels:
        raise UsageError("no metric could be recorded for any kernel of the capture")
    runs = len(capture.paths)
    fingerprint, warned = capture_fingerprint(capture, kernels, launches)
    notes = list(warned)
    if starts is not None:
        notes.append(
            f"recorded from {starts.count} machine starts (the captures' sidecars say which): "
            "each metric is the median of the starts' values, its bound counts the spread "
            "within a start and across starts (docs/noise.md)"
        )
    elif unpooled:
        notes.append(unpooled)
    if fingerprint.time_basis == GATE and diagnosis is None:
        notes.append(
            "recorded from gate captures (perfgate capture --phases gate): the baseline gates "
            "the one-pass gate set and judges the durations of gate captures only; its "
            "diagnosis compares fewer metrics than one recorded from full captures unless "
            "--diagnosis-capture gives a full capture of the same build (docs/capture.md)"
        )
    elif diagnosis is not None:
        notes.append(
            f"diagnosis side of {explained} of {len(groups)} kernel(s) from "
            f"{', '.join(Path(p).name for p in diagnosis.paths)} (never gated)"
        )
    varied = varied_warning(kernels, runs)
    if varied:
        warnings.append(varied)
    if runs < 3:
        notes.append(
            f"recorded from {runs} capture{'s' if runs > 1 else ''}: noisy metrics keep the "
            "catalog's default bounds; record from 3 separate ncu runs to calibrate them to the "
            "noise (docs/noise.md)"
        )
    by = dict(capture.starts)
    provenance = {
        "recorded_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "recorded_by": f"perfgate {__version__}",
        "reason": settings.reason,
        "captures": [
            {"file": Path(p).name, **({"sha256": h} if (h := _sha256(p)) else {}),
             "launches": n, **({"machine_start": by[p]} if p in by else {})}
            for p, n in zip(capture.paths, per_file(capture.launches, capture.paths), strict=True)
        ],
    }  # fmt: skip
    baseline = Baseline(
        kernels=tuple(kernels),
        provenance=provenance,
        by_nvtx=settings.by_nvtx,
        fingerprint=fingerprint,
        program=record_program(capture, starts.by_file if starts else None),
    )
    return RecordResult(baseline, tuple(skipped), tuple(notes), tuple(warnings))
