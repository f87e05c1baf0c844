"""Run records built from a check: from its `Report` in memory, or from the JSON report a
check wrote earlier (schemas/result.schema.json). Both routes go through the same normalising
helpers, so a result stored directly and the same result imported from its JSON file are the
same record (tests/history/test_history.py holds them equal).

The JSON report names each baseline's GPU and the capture files but not the rest of the
capture's fingerprint; both routes read that from the captures' sidecars (`perfgate capture`
writes one beside each capture), so an import on a machine without them keeps those fields
unknown rather than guessing."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from perfgate import __version__
from perfgate.common.errors import UsageError
from perfgate.history.model import (
    Finding,
    KernelRecord,
    MetricRecord,
    ResultRecord,
    RunContext,
    RunFingerprint,
    RunRecord,
    Value,
)
from perfgate.ingest.meta import CaptureMeta, read_meta, time_basis
from perfgate.judge.policy import EXIT_WORDS
from perfgate.judge.states import KernelState
from perfgate.verdicts.model import CheckResult, KernelVerdict, Report

MIXED = "mixed"  # the captures of one result disagree on a field


def value(v: object) -> Value:
    """A value as every store keeps it: a finite float, a label, or None. The JSON report
    writes NaN and infinity as null and an integer count as an integer; a record built from
    the report in memory must hold what one built from its JSON holds."""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        f = float(v)
        return f if math.isfinite(f) else None
    return None


def _agreed(values: Sequence[str | None]) -> str | None:
    known = sorted({v for v in values if v is not None})
    if len(known) > 1:
        return MIXED  # not one series: a store must not file it under either
    return known[0] if known else None


def fingerprint(gpu: str | None, devices: Sequence[str], captures: Sequence[str]) -> RunFingerprint:
    """The fingerprint of one result's captures: the GPU the baseline judged (else the one
    device the captures name), and what their sidecars say."""
    return _fingerprint_of(gpu, devices, [read_meta(p) for p in captures])


def machine_start(captures: Sequence[str]) -> str | None:
    """The one machine start all of a result's captures were taken on, as their sidecars say
    (perfgate.ncu.machine.machine_start); None where a capture does not say or they differ:
    such a run belongs to no one start's series."""
    return _start_of([read_meta(p) for p in captures])


def _captured(
    gpu: str | None, devices: Sequence[str], captures: Sequence[str]
) -> tuple[RunFingerprint, str | None]:
    """The fingerprint and the machine start of one result, each sidecar read once."""
    metas = [read_meta(p) for p in captures]
    return _fingerprint_of(gpu, devices, metas), _start_of(metas)


def _fingerprint_of(
    gpu: str | None, devices: Sequence[str], metas: Sequence[CaptureMeta]
) -> RunFingerprint:
    found = [m for m in metas if m.path]
    device = gpu if gpu is not None else _agreed(list(devices))
    return RunFingerprint(
        gpu=device,
        cc=_agreed([m.cc for m in found]),
        ncu=_agreed([m.ncu_version for m in found]),
        driver=_agreed([m.driver for m in found]),
        clock_control=_agreed([m.clock_control for m in found]),
        cache_control=_agreed([m.cache_control for m in found]),
        scope=_agreed([m.scope for m in found]),
        time_basis=_agreed([time_basis(m) for m in found]),
    )


def _start_of(metas: Sequence[CaptureMeta]) -> str | None:
    starts = {m.machine_start for m in metas}
    if not metas or len(starts) != 1:
        return None
    return starts.pop()


def _kernel(
    kernel: str,
    name: str,
    state: str,
    family: str | None,
    nvtx: str | None,
    matched_by: str,
    metrics: Sequence[MetricRecord],
    finding: Finding | None,
) -> KernelRecord:
    # A passing kernel has no finding to keep, whatever the check noted beside its pass.
    kept = None if state == KernelState.PASS.value else finding
    return KernelRecord(kernel, name, state, family, nvtx, matched_by, tuple(metrics), kept)


def _sorted(kernels: list[KernelRecord]) -> tuple[KernelRecord, ...]:
    # The JSON report lists kernels by severity, the check by the baseline's order: a record
    # holds them in one order whichever route built it.
    return tuple(sorted(kernels, key=lambda k: (k.kernel, k.name, k.state)))


def _from_verdict(v: KernelVerdict) -> KernelRecord:
    metrics = [
        MetricRecord(c.metric, c.state.value, value(c.current), value(c.baseline), c.unit, c.bound)
        for c in v.comparisons
    ]
    cause = v.headline  # the first finding, as the reports lead with it
    finding = None if cause is None else Finding(cause.mechanism, cause.title, cause.lever)
    return _kernel(
        v.kernel, v.name, v.state.value, v.family, v.nvtx, v.matched_by, metrics, finding
    )


def _from_result(r: CheckResult) -> ResultRecord:
    fp, start = _captured(r.baseline_gpu, r.devices, r.capture_paths)
    return ResultRecord(r.baseline_path, fp, _sorted([_from_verdict(v) for v in r.verdicts]), start)


def from_report(report: Report, context: RunContext) -> RunRecord:
    """The record of a check just run."""
    code = report.exit_code
    return RunRecord(
        context,
        EXIT_WORDS[code].json,
        int(code),
        __version__,
        tuple(_from_result(r) for r in report.results),
    )


def _field(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in doc or not isinstance(doc[key], kind):
        raise UsageError(f"not a perfgate check result: {where}.{key} is missing or malformed")
    return doc[key]


def _optional_text(doc: Mapping[str, Any], key: str, where: str) -> str | None:
    got = doc.get(key)
    if got is not None and not isinstance(got, str):
        raise UsageError(f"not a perfgate check result: {where}.{key} is not text")
    return got


def _json_finding(doc: Mapping[str, Any], where: str) -> Finding | None:
    """The first of a kernel's causes, where the report holds them (one written before
    causes were reported has none: then no finding, rather than a refusal)."""
    causes = doc.get("causes")
    if causes is None or causes == []:
        return None
    if not isinstance(causes, list) or not isinstance(causes[0], Mapping):
        raise UsageError(f"not a perfgate check result: {where}.causes is malformed")
    at = f"{where}.causes[0]"
    first = causes[0]
    return Finding(
        _field(first, "mechanism", str, at),
        _field(first, "title", str, at),
        _field(first, "lever", str, at),
    )


def _json_kernel(doc: Mapping[str, Any], where: str) -> KernelRecord:
    metrics = []
    for i, c in enumerate(_field(doc, "comparisons", list, where)):
        at = f"{where}.comparisons[{i}]"
        if not isinstance(c, Mapping):
            raise UsageError(f"not a perfgate check result: {at} is not an object")
        metrics.append(
            MetricRecord(
                _field(c, "metric", str, at),
                _field(c, "state", str, at),
                value(c.get("current")),
                value(c.get("baseline")),
                _field(c, "unit", str, at),
                _field(c, "bound", str, at),
            )
        )
    return _kernel(
        _field(doc, "kernel", str, where),
        _field(doc, "name", str, where),
        _field(doc, "state", str, where),
        _optional_text(doc, "family", where),
        _optional_text(doc, "nvtx", where),
        _field(doc, "matched_by", str, where),
        metrics,
        _json_finding(doc, where),
    )


def _json_result(doc: Mapping[str, Any], where: str) -> ResultRecord:
    kernels = []
    for i, k in enumerate(_field(doc, "kernels", list, where)):
        if not isinstance(k, Mapping):
            raise UsageError(f"not a perfgate check result: {where}.kernels[{i}] is not an object")
        kernels.append(_json_kernel(k, f"{where}.kernels[{i}]"))
    captures = [str(p) for p in _field(doc, "captures", list, where)]
    devices = [str(d) for d in _field(doc, "devices", list, where)]
    fp, start = _captured(_optional_text(doc, "gpu", where), devices, captures)
    return ResultRecord(_field(doc, "baseline", str, where), fp, _sorted(kernels), start)


def from_json(doc: object, context: RunContext) -> RunRecord:
    """The record of a check whose JSON report (`perfgate check --format json`) is `doc`."""
    if not isinstance(doc, Mapping) or "results" not in doc or "exit_code" not in doc:
        raise UsageError("not a perfgate check result (no results and exit_code)")
    results = [
        _json_result(r, f"results[{i}]") if isinstance(r, Mapping) else _not_object(i)
        for i, r in enumerate(_field(doc, "results", list, "$"))
    ]
    code = _field(doc, "exit_code", int, "$")
    return RunRecord(
        context,
        _field(doc, "status", str, "$"),
        code,
        _field(doc, "perfgate_version", str, "$"),
        tuple(results),
    )


def _not_object(i: int) -> ResultRecord:
    raise UsageError(f"not a perfgate check result: results[{i}] is not an object")
