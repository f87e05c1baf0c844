"""The Baseline model built from a validated baseline document: kernels, their metrics and
launch configurations, thresholds, the program time, histories."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfgate.baseline.fingerprint import from_document as fingerprint_from_document
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
from perfgate.common.frozen import maker
from perfgate.common.schemas import JsonPath
from perfgate.ingest.launches import Dim3
from perfgate.metrics.thresholds import CategoricalOverride, Direction, ThresholdOverride


def _dim3(value: Any) -> Dim3 | None:
    return None if value is None else (int(value[0]), int(value[1]), int(value[2]))


def _override(
    raw: Mapping[str, Any] | None,
) -> tuple[ThresholdOverride | None, CategoricalOverride | None]:
    if not raw:
        return None, None
    threshold = ThresholdOverride(
        relative=raw.get("relative"),
        absolute=raw.get("absolute"),
        direction=Direction(raw["direction"]) if "direction" in raw else None,
    )
    check = CategoricalOverride(
        stable=raw.get("stable"),
        expect=tuple(raw["expect"]) if "expect" in raw else None,
        forbid=tuple(raw["forbid"]) if "forbid" in raw else None,
        margin=raw.get("margin"),
    )
    return threshold, check


_metric_baseline = maker(MetricBaseline)  # 37,000 for a baseline of 1,000 kernels


def _program(data: Mapping[str, Any]) -> ProgramBaseline | None:
    entry = (data.get("program") or {}).get("gpu_time")
    if entry is None:
        return None
    return ProgramBaseline(
        value=float(entry["value"]),
        relative=float(entry["threshold"]["relative"]),
        runs=tuple(float(r) for r in entry.get("runs") or ()),
        unit=entry.get("unit", "ns"),
        calibration=entry.get("calibration"),
        history=_history(entry),
    )


def _history(entry: Mapping[str, Any]) -> tuple[HistoryEntry, ...]:
    return tuple(
        HistoryEntry(
            date=h["date"],
            reason=h["reason"],
            by=h.get("by"),
            action=h.get("action"),
            previous=h.get("previous") or {},
        )
        for h in entry.get("history") or ()
    )


def _line(line_of: Any, where: JsonPath) -> int | None:
    at = line_of(where) if line_of else None
    return at[0] if at else None


def build_baseline(data: Mapping[str, Any], path: str, line_of: Any = None) -> Baseline:
    kernels = []
    for i, kernel in enumerate(data["kernels"]):
        metrics = []
        for metric, entry in kernel["metrics"].items():
            threshold, check = _override(entry.get("threshold"))
            value = entry["value"]
            reasons = entry.get("reasons")
            metrics.append(
                _metric_baseline(
                    name=metric,
                    value=float(value) if isinstance(value, (int, float)) else str(value),
                    low=entry.get("min"),
                    high=entry.get("max"),
                    unit=entry.get("unit", ""),
                    source=entry.get("source", ""),
                    group=entry.get("group"),
                    shares=entry.get("shares"),
                    threshold=threshold,
                    check=check,
                    reasons=tuple(reasons) if reasons is not None else None,
                    family=entry.get("family"),
                    calibration=entry.get("calibration"),
                )
            )
        m = kernel["match"]
        info = {
            k: float(v) if isinstance(v, (int, float)) else str(v)
            for k, v in (kernel.get("info") or {}).items()
        }
        kernels.append(
            KernelBaseline(
                id=kernel["id"],
                match=KernelMatch(
                    m.get("function"),
                    m.get("name"),
                    m.get("regex"),
                    _dim3(m.get("block")),
                    _dim3(m.get("grid")),
                    m.get("nvtx"),
                    m.get("work"),
                ),
                metrics=tuple(metrics),
                name=kernel.get("name", m.get("name")),
                # Format 1 wrote the launches of all captures together, not per capture.
                launches=kernel.get("launches") if data.get("format_version") != 1 else None,
                info=info,
                family=kernel.get("family"),
                # Absent before autotuned entries existed: an ordinary kernel (format 2 as is).
                configurations=tuple(
                    LaunchConfig(
                        _dim3(c.get("grid")),
                        _dim3(c.get("block")),
                        c.get("registers"),
                        c.get("shared_memory"),
                        c.get("runs", 0),
                        float(c["duration"]) if c.get("duration") is not None else None,
                    )
                    for c in kernel.get("configurations") or ()
                ),
                history=_history(kernel),
                seen_in=(s["runs"], s["of"]) if (s := kernel.get("seen_in")) else None,
                line=_line(line_of, ["kernels", i]),
            )
        )
    thresholds: dict[str, ThresholdOverride] = {}
    checks: dict[str, CategoricalOverride] = {}
    for metric, entry in (data.get("thresholds") or {}).items():
        threshold, check = _override(entry)
        if threshold is not None and check is not None:
            thresholds[metric], checks[metric] = threshold, check
    identity = data.get("identity") or {}
    return Baseline(
        kernels=tuple(kernels),
        provenance=data.get("provenance") or {},
        thresholds=thresholds,
        checks=checks,
        path=path,
        format_version=int(data.get("format_version", FORMAT_VERSION)),
        by_nvtx=bool(identity.get("nvtx", False)),
        fingerprint=(
            fingerprint_from_document(data["fingerprint"], {}) if "fingerprint" in data else None
        ),
        program=_program(data),
        waive=tuple(data.get("waive") or ()),
    )
