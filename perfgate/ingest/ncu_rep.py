"""Reader for `.ncu-rep` report files through NVIDIA's `ncu_report` module.

The module ships in Nsight Compute's extras/python and as the PyPI wheel `ncu-report`
(`pip install 'perfgate[ncu-rep]'`). Values come typed, so there is no locale or unit-scaling
question; units are normalised the same way as the CSV reader's.

NVIDIA's reader is C++ that trusts the file: one corrupt length field aborts the process
(SIGABRT), past any `except`. So a report is read in a child Python (an argument list, never a
shell), which sends the launches back as JSON; a child that dies by a signal or exits non-zero
is an input error naming the file (issue 23), and the parent goes on to write its reports.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
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
    """The report's launches, read by NVIDIA's module in a child process."""
    _load_module(path)  # the install hint, without starting a child that would only fail
    names = getattr(wanted, "names", None)
    request = {"path": path, "names": sorted(names) if names is not None else None}
    with tempfile.TemporaryDirectory(prefix="perfgate-ncu-rep-") as tmp:
        out = Path(tmp) / "capture.json"
        request["out"] = str(out)
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(request)],
            stdin=subprocess.DEVNULL, capture_output=True, env=env, check=False,
        )  # fmt: skip
        if proc.returncode < 0:
            try:
                name = signal.Signals(-proc.returncode).name
            except ValueError:
                name = f"signal {-proc.returncode}"
            raise CaptureError(
                f"ncu_report crashed reading this report ({name}): the file is corrupt, cut "
                "off or from an Nsight Compute this ncu_report cannot read",
                path,
            )
        if proc.returncode != 0 or not out.exists():
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            why = f": {tail[-1][:300]}" if tail else ""
            raise CaptureError(
                f"ncu_report failed reading this report (exit code {proc.returncode}){why}", path
            )
        answer = json.loads(out.read_text(encoding="utf-8"))
    if "error" in answer:
        raise CaptureError(str(answer["error"]), path)
    capture = _from_json(answer, path)
    if wanted is not None and names is None:
        capture = _filtered(capture, wanted)
    return capture


# The child: reads the report with NVIDIA's module and writes the launches as JSON to the
# file the parent named; a CaptureError is written as {"error": ...}.
_CHILD = "from perfgate.ingest.ncu_rep import _child_main; _child_main()"


def _child_main() -> None:
    request = json.loads(sys.argv[1])
    path, names = request["path"], request["names"]
    wanted = _Names(names) if names is not None else None
    try:
        capture = _read_in_process(path, wanted)
        answer: dict[str, Any] = {"launches": [_launch_json(la) for la in capture.launches],
                                  "columns": sorted(capture.columns)}  # fmt: skip
    except CaptureError as exc:
        answer = {"error": exc.message}
    Path(request["out"]).write_text(json.dumps(answer), encoding="utf-8")


class _Names:
    def __init__(self, names: list[str]) -> None:
        self.names = frozenset(names)

    def __call__(self, name: str) -> bool:
        return name in self.names


def _launch_json(la: Launch) -> dict[str, Any]:
    return {
        "index": la.index, "name": la.name, "block": la.block, "grid": la.grid,
        "metrics": dict(la.metrics), "units": dict(la.units), "device": la.device, "cc": la.cc,
        "rules": dict(la.rules), "lines": {k: [list(p) for p in v] for k, v in la.lines.items()},
    }  # fmt: skip


def _dim(value: Any) -> Dim3 | None:
    return (int(value[0]), int(value[1]), int(value[2])) if value is not None else None


def _from_json(answer: dict[str, Any], path: str) -> Capture:
    launches = tuple(
        Launch(
            index=int(d["index"]),
            name=str(d["name"]),
            function=function_name(str(d["name"])),
            block=_dim(d["block"]),
            grid=_dim(d["grid"]),
            metrics=d["metrics"],
            units=d["units"],
            device=d["device"],
            cc=d["cc"],
            source=path,
            rules=d["rules"],
            lines={
                k: tuple((str(f), float(v)) for f, v in pairs) for k, pairs in d["lines"].items()
            },
        )
        for d in answer["launches"]
    )
    return Capture(paths=(path,), launches=launches, columns=frozenset(answer["columns"]))


def _filtered(capture: Capture, wanted: Callable[[str], bool]) -> Capture:
    launches = tuple(
        replace(
            la,
            metrics={k: v for k, v in la.metrics.items() if wanted(k) or k == DEVICE_NAME},
            units={k: v for k, v in la.units.items() if wanted(k) or k == DEVICE_NAME},
        )
        for la in capture.launches
    )
    return replace(capture, launches=launches)


def _read_in_process(path: str, wanted: Callable[[str], bool] | None = None) -> Capture:
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
