"""Writing a baseline: the YAML document a Baseline becomes, with a header that says how to
read and edit it."""

from __future__ import annotations

from typing import Any

import yaml

from perfgate.baseline.fingerprint import to_document as fingerprint_document
from perfgate.baseline.model import (
    FORMAT_VERSION,
    Baseline,
    HistoryEntry,
    KernelBaseline,
    KernelMatch,
    LaunchConfig,
    MetricBaseline,
    ProgramBaseline,
)
from perfgate.baseline.validate import CATEGORICAL_KEYS
from perfgate.common.schemas import SCHEMA_COMMENT
from perfgate.metrics.thresholds import CategoricalOverride, ThresholdOverride

# The first line associates the file with perfgate's schema in editors (docs/baselines.md,
# "Editors"); a comment to YAML, kept by every edit perfgate makes.
HEADER = (
    SCHEMA_COMMENT
    + """
# perfgate baseline (format 2): per-kernel counter values recorded from Nsight Compute captures.
# A kernel is matched by its exact name and launch shape (docs/identity.md). Each metric holds
# the median of the per-run medians (value), the range of the launches (min, max), and, when
# recorded from 3 or more separate ncu runs, a bound calibrated from their spread (threshold,
# with the rule that gave it under calibration). `info` values are not gated: the diagnosis
# compares them. Thresholds default to the metric catalog (perfgate metrics); override with
#   threshold: {relative: 0.1, absolute: 2}      # numeric: a change must exceed both
#   threshold: {expect: [long_scoreboard]}       # categorical: stable, expect, forbid, margin
# on a metric, or under `thresholds:` for every kernel of this file. See docs/baselines.md.
"""
)


def tidy(value: float | str) -> int | float | str:
    if isinstance(value, str):
        return value
    rounded = float(f"{value:.12g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded


def _override_document(
    threshold: ThresholdOverride | None, check: CategoricalOverride | None
) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if threshold is not None:
        for key in ("relative", "absolute"):
            if getattr(threshold, key) is not None:
                doc[key] = getattr(threshold, key)
        if threshold.direction is not None:
            doc["direction"] = threshold.direction.value
    if check is not None:
        for key in CATEGORICAL_KEYS:
            value = getattr(check, key)
            if value is not None:
                doc[key] = list(value) if isinstance(value, tuple) else value
    return doc


def history_document(entry: HistoryEntry) -> dict[str, Any]:
    doc: dict[str, Any] = {"date": entry.date}
    if entry.by is not None:
        doc["by"] = entry.by
    if entry.action is not None:
        doc["action"] = entry.action
    doc["reason"] = entry.reason
    if entry.previous:
        doc["previous"] = {k: tidy(v) for k, v in entry.previous.items()}
    return doc


def metric_document(metric: MetricBaseline) -> dict[str, Any]:
    """One metric's entry as the file holds it."""
    m: dict[str, Any] = {"value": tidy(metric.value)}
    # A range that is the value itself (an exact counter) says nothing more.
    if (
        metric.low is not None
        and metric.high is not None
        and not (metric.low == metric.high == metric.value)
    ):
        m["min"], m["max"] = tidy(metric.low), tidy(metric.high)
    # Unit, source and group are written only where the catalog would not say the
    # same, which keeps a baseline short enough to review.
    defn = metric.definition
    if metric.unit and metric.unit != defn.unit:
        m["unit"] = metric.unit
    # Stall metrics name their family instead (a check measures in the family its
    # capture holds; cycles per instruction are the same quantity in each).
    if metric.source and metric.source != defn.formulas[0].text and defn.stall is None:
        m["source"] = metric.source
    if metric.group and metric.group != defn.formulas[0].group:
        m["group"] = metric.group
    if metric.shares:
        m["shares"] = {r: round(v, 2) for r, v in metric.shares.items() if round(v, 2) > 0}
    if metric.reasons is not None:
        m["reasons"] = list(metric.reasons)
    if metric.family is not None:
        m["family"] = metric.family
    override = _override_document(metric.threshold, metric.check)
    if override:
        m["threshold"] = override
    if metric.calibration:
        m["calibration"] = metric.calibration
    return m


def _present(obj: object, keys: tuple[str, ...]) -> dict[str, Any]:
    """The fields of `obj` that are set, in `keys`' order; launch dimensions as lists."""
    doc: dict[str, Any] = {}
    for key in keys:
        value = getattr(obj, key)
        if value is not None:
            doc[key] = list(value) if key in ("grid", "block") else value
    return doc


def match_document(match: KernelMatch) -> dict[str, Any]:
    return _present(match, ("function", "name", "regex", "grid", "block", "nvtx", "work"))


def configuration_document(config: LaunchConfig) -> dict[str, Any]:
    doc = _present(config, ("grid", "block", "registers", "shared_memory"))
    doc["runs"] = config.runs
    if config.duration is not None:
        doc["duration"] = tidy(config.duration)
    return doc


def kernel_document(kernel: KernelBaseline) -> dict[str, Any]:
    """One kernel's entry as the file holds it."""
    entry: dict[str, Any] = {"id": kernel.id, "match": match_document(kernel.match)}
    if kernel.name is not None and kernel.name != kernel.match.name:
        entry["name"] = kernel.name
    if kernel.family is not None:
        entry["family"] = kernel.family
    if kernel.launches is not None:
        entry["launches"] = kernel.launches
    if kernel.seen_in is not None:
        entry["seen_in"] = {"runs": kernel.seen_in[0], "of": kernel.seen_in[1]}
    entry["metrics"] = {metric.name: metric_document(metric) for metric in kernel.metrics}
    if kernel.configurations:
        entry["configurations"] = [configuration_document(c) for c in kernel.configurations]
    if kernel.info:
        entry["info"] = {k: tidy(v) for k, v in kernel.info.items()}
    if kernel.history:
        entry["history"] = [history_document(h) for h in kernel.history]
    return entry


def program_document(program: ProgramBaseline) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "value": tidy(program.value),
        "unit": program.unit,
        "runs": [tidy(r) for r in program.runs],
        "threshold": {"relative": program.relative},
    }
    if program.calibration:
        doc["calibration"] = program.calibration
    if program.history:
        doc["history"] = [history_document(h) for h in program.history]
    return doc


def to_document(baseline: Baseline) -> dict[str, Any]:
    doc: dict[str, Any] = {"format_version": FORMAT_VERSION}
    if baseline.provenance:
        doc["provenance"] = dict(baseline.provenance)
    if baseline.fingerprint is not None:
        doc["fingerprint"] = fingerprint_document(baseline.fingerprint)
    if baseline.by_nvtx:
        doc["identity"] = {"nvtx": True}
    if baseline.waive:
        doc["waive"] = list(baseline.waive)
    overrides = {
        name: _override_document(baseline.thresholds.get(name), baseline.checks.get(name))
        for name in sorted(set(baseline.thresholds) | set(baseline.checks))
    }
    if any(overrides.values()):
        doc["thresholds"] = {k: v for k, v in overrides.items() if v}
    if baseline.program is not None:
        doc["program"] = {"gpu_time": program_document(baseline.program)}
    doc["kernels"] = [kernel_document(kernel) for kernel in baseline.kernels]
    return doc


class _Dumper(yaml.SafeDumper):
    """Block style for structure, flow style for the small leaf mappings of one metric."""


_BREAKS = ("\x85", "\u2028", "\u2029")


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    """PyYAML writes NEL, U+2028 and U+2029 raw inside single quotes, where a loader reads a
    line break and the text comes back changed: such a string is double-quoted, where they
    are escapes (\\N, \\L, \\P)."""
    style = '"' if any(ch in text for ch in _BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _string)


def dump_baseline(baseline: Baseline) -> str:
    doc = to_document(baseline)
    body = yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=None,
        width=4096,
        allow_unicode=True,
    )
    return HEADER + body
