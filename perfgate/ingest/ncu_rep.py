"""Reader for `.ncu-rep` report files through NVIDIA's `ncu_report` module.

The module ships in Nsight Compute's extras/python and as the PyPI wheel `ncu-report`
(`pip install 'perfgate[ncu-rep]'`). Values come typed, so there is no locale or unit-scaling
question; units are normalised the same way as the CSV reader's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfgate.common.errors import CaptureError
from perfgate.ingest.launches import RULE_PREFIX, Capture, Dim3, Launch, Value
from perfgate.ingest.names import function_name
from perfgate.ingest.units import normalise_unit

MAGIC = b"NVR\x00"
DEVICE_NAME = "device__attribute_display_name"


def _load_module(path: str) -> Any:
    try:
        import ncu_report
    except ImportError as exc:
        raise CaptureError(
            "reading .ncu-rep files needs NVIDIA's ncu_report module: "
            "pip install 'perfgate[ncu-rep]' (or export the CSV: "
            "ncu --import FILE.ncu-rep --csv --page raw > FILE.csv)",
            path,
        ) from exc
    return ncu_report


def _value(metric: Any) -> tuple[Value, str]:
    if metric is None or not metric.has_value():
        return None, ""
    raw = metric.value()
    unit = metric.unit() or ""
    if isinstance(raw, str):
        return raw, unit
    base, factor = normalise_unit(unit)
    return float(raw) * factor, base


def _dim3(action: Any, prefix: str) -> Dim3 | None:
    dims = []
    for axis in "xyz":
        metric = action.metric_by_name(f"{prefix}_{axis}")
        if metric is None or not metric.has_value():
            return None
        dims.append(int(metric.value()))
    return dims[0], dims[1], dims[2]


def read_ncu_rep(path: str, wanted: Callable[[str], bool] | None = None) -> Capture:
    module = _load_module(path)
    try:
        report = module.load_report(path)
    except Exception as exc:  # the module raises plain Exceptions for unreadable reports
        raise CaptureError(f"ncu_report cannot read this report: {exc}", path) from exc
    launches: list[Launch] = []
    columns: set[str] = set()
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            names = [str(n) for n in action.metric_names()]
            columns.update(names)
            metrics: dict[str, Value] = {}
            units: dict[str, str] = {}
            for name in names:
                if wanted is None or wanted(name) or name == DEVICE_NAME:
                    metrics[name], units[name] = _value(action.metric_by_name(name))
            if wanted is not None:
                # Rollups such as `.avg` exist on request even when metric_names() omits them.
                for name in _requested_extra(wanted, names):
                    metrics[name], units[name] = _value(action.metric_by_name(name))
            major = action.metric_by_name("device__attribute_compute_capability_major")
            minor = action.metric_by_name("device__attribute_compute_capability_minor")
            cc = (
                f"{int(major.value())}.{int(minor.value())}"
                if major is not None and minor is not None
                else None
            )
            name = str(action.name(module.IAction.NameBase_DEMANGLED))
            device = metrics.get(DEVICE_NAME)
            rules = _rule_results(action, metrics)
            lines = _source_lines(action)
            launches.append(
                Launch(
                    index=len(launches),
                    name=name,
                    function=function_name(name),
                    block=_dim3(action, "launch__block_dim"),
                    grid=_dim3(action, "launch__grid_dim"),
                    metrics=metrics,
                    units=units,
                    device=device if isinstance(device, str) else None,
                    cc=cc,
                    source=path,
                    rules=rules,
                    lines=lines,
                )
            )
    if not launches:
        raise CaptureError("the report holds no kernel launches", path)
    return Capture(paths=(path,), launches=tuple(launches), columns=frozenset(columns))


def _rule_results(action: Any, metrics: dict[str, Value]) -> dict[str, str]:
    """NCU's rules that estimate a speedup: the estimate goes into `metrics` as
    `ncu_rule.<id>` (percent), the first sentence of the rule's message is returned. Reports
    captured with --metrics alone carry no rules; older ncu_report versions lack the call."""
    getter = getattr(action, "rule_results_as_dicts", None)
    if getter is None:
        return {}
    try:
        results = getter()
    except Exception:  # a report without rule data raises plain Exceptions
        return {}
    out: dict[str, str] = {}
    for result in results or ():
        rule = result.get("rule_identifier")
        speedup = (result.get("speedup_estimation") or {}).get("speedup")
        if not isinstance(rule, str) or not isinstance(speedup, (int, float)) or speedup <= 0:
            continue
        message = result.get("rule_message") or {}
        text = str(message.get("title") or "") + ": " + str(message.get("message") or "")
        first = text.strip(": ").split(". ")[0].replace("@url:", "")
        metrics[f"{RULE_PREFIX}{rule}"] = float(speedup)
        out[rule] = first[:300]
    return out


# Source counters that count an excess exactly, whatever the access width: the excess
# sectors or wavefronts over what a fully coalesced, conflict-free access would need.
SOURCE_COUNTERS = (
    "derived__memory_l2_theoretical_sectors_global_excessive",
    "derived__memory_l1_wavefronts_shared_excessive",
)
_TOP_LINES = 3


def _source_lines(action: Any) -> dict[str, tuple[tuple[str, float], ...]]:
    """Per source counter, the source lines (file:line) it is largest on, from the report's
    per-PC instances and its line table; nothing when the report has no source counters."""
    out: dict[str, tuple[tuple[str, float], ...]] = {}
    info = getattr(action, "source_info", None)
    if info is None:
        return out
    for name in SOURCE_COUNTERS:
        try:
            metric = action.metric_by_name(name)
            if metric is None or not metric.num_instances():
                continue
            pcs = metric.correlation_ids()
            per_line: dict[str, float] = {}
            for i in range(metric.num_instances()):
                value = float(metric.as_double(i))
                if value <= 0:
                    continue
                where = info(pcs.as_uint64(i))
                if where is None:
                    continue
                key = f"{Path(str(where.file_name())).name}:{int(where.line())}"
                per_line[key] = per_line.get(key, 0.0) + value
        except Exception:  # noqa: S112 - an API that differs between ncu_report versions
            continue
        ranked = sorted(per_line.items(), key=lambda kv: -kv[1])[:_TOP_LINES]
        if ranked:
            out[name] = tuple(ranked)
    return out


def _requested_extra(wanted: Callable[[str], bool], present: list[str]) -> list[str]:
    wanted_names = getattr(wanted, "names", None)
    if not wanted_names:
        return []
    have = set(present)
    return [n for n in wanted_names if n not in have]
