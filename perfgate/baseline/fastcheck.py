"""A fast yes/no check of the bulk of a baseline against schemas/baseline.schema.json.

jsonschema walks every node of a baseline through its generic machinery: for 1,000 kernels of
37 metrics that is over half a million nodes and most of a check's time (docs/scale.md). The
kernel entries (id, match, name, launches, family, metrics, info) are the bulk and have a
fixed, shallow shape, so this module checks them in plain Python. It only ever says "valid" or
"not sure": on any doubt the caller runs jsonschema over the whole document, which words the
errors (`FILE:LINE:COL: $.json.path: message`). `tests/test_properties.py` holds the two to the same
answer on mutated real baselines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9_.]+$")
_METRIC_KEYS = frozenset(
    {"value", "min", "max", "unit", "source", "group", "shares", "threshold", "reasons",
     "family", "calibration"}
)  # fmt: skip
_OVERRIDE_KEYS = frozenset(
    {"relative", "absolute", "direction", "stable", "expect", "forbid", "margin"}
)
_DIRECTIONS = frozenset({"higher_is_worse", "lower_is_worse", "any_change"})
_STRINGS = ("unit", "source", "group", "family", "calibration")
_KERNEL_KEYS = frozenset(
    {"id", "match", "name", "launches", "metrics", "family", "info", "history", "configurations"}
)
_CONFIG_KEYS = frozenset({"grid", "block", "registers", "shared_memory", "runs", "duration"})
_HISTORY_KEYS = frozenset({"date", "by", "reason", "action", "previous"})
_ACTIONS = frozenset({"accept", "update", "ratchet", "add", "remove"})
_MATCH_KEYS = frozenset({"function", "name", "regex", "block", "grid", "nvtx", "work"})
# What jsonschema still sees of each kernel when every entry is certainly valid.
_PLACEHOLDER = {"id": "k", "match": {"name": "k"}, "metrics": {"placeholder": {"value": 0}}}


def _number(v: Any) -> bool:
    """A finite number: `.nan` and `.inf` are refused (jsonschema's check says so)."""
    if isinstance(v, float):
        return math.isfinite(v)
    return isinstance(v, int) and not isinstance(v, bool)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _override(o: Any) -> bool:
    if not isinstance(o, dict) or not o.keys() <= _OVERRIDE_KEYS:
        return False
    for key in ("relative", "absolute", "margin"):
        if key in o and not (_number(o[key]) and o[key] >= 0):
            return False
    if "direction" in o and not (isinstance(o["direction"], str) and o["direction"] in _DIRECTIONS):
        return False
    if "stable" in o and not isinstance(o["stable"], bool):
        return False
    return all(_strings(o[key]) for key in ("expect", "forbid") if key in o)


def _metric(m: Any) -> bool:
    if m.__class__ is not dict or "value" not in m:
        return False
    # One pass over the entry's keys, most entries being {value, min, max} or fewer.
    for key, v in m.items():
        kind = _METRIC_KINDS.get(key)
        if kind is None:
            return False
        if kind is _NUMBER:
            if v.__class__ is not int and not _number(v):
                return False
        elif kind is _VALUE:
            if not (_number(v) or isinstance(v, str)):
                return False
        elif kind is _STRING:
            if not isinstance(v, str):
                return False
        elif kind is _SHARES:
            if not (
                isinstance(v, dict) and all(isinstance(k, str) and _number(x) for k, x in v.items())
            ):
                return False
        elif kind is _REASONS:
            if not _strings(v):
                return False
        elif not _override(v):
            return False
    return True


_VALUE, _NUMBER, _STRING, _SHARES, _REASONS, _OVERRIDE = [
    "value",
    "number",
    "string",
    "shares",
    "reasons",
    "override",
]
_METRIC_KINDS = {
    "value": _VALUE,
    "min": _NUMBER,
    "max": _NUMBER,
    **dict.fromkeys(_STRINGS, _STRING),
    "shares": _SHARES,
    "reasons": _REASONS,
    "threshold": _OVERRIDE,
}
assert _METRIC_KINDS.keys() == _METRIC_KEYS


def _text(v: Any) -> bool:
    """A string of at least one character (minLength 1)."""
    return isinstance(v, str) and v != ""


def _count(v: Any, least: int) -> bool:
    # Exactly int: jsonschema also takes 2.0 for an integer; that case goes to it.
    return type(v) is int and v >= least


def _dim3(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 3 and all(_count(x, 1) for x in v)


def _match(m: Any) -> bool:
    if not isinstance(m, dict) or not m.keys() <= _MATCH_KEYS:
        return False
    if not ("function" in m or "name" in m or "regex" in m):
        return False
    if any(key in m and not _text(m[key]) for key in ("function", "name", "regex", "nvtx")):
        return False
    if any(key in m and not _dim3(m[key]) for key in ("block", "grid")):
        return False
    return "work" not in m or _count(m["work"], 1)


def kernel_is_valid(kernel: Any) -> bool:
    """Whether one kernel entry certainly satisfies the schema."""
    if not isinstance(kernel, dict) or not kernel.keys() <= _KERNEL_KEYS:
        return False
    if not _text(kernel.get("id")) or not _match(kernel.get("match")):
        return False
    if any(key in kernel and not isinstance(kernel[key], str) for key in ("name", "family")):
        return False
    if "launches" in kernel and not _count(kernel["launches"], 0):
        return False
    if "history" in kernel and not _history(kernel["history"]):
        return False
    if "configurations" in kernel and not _configurations(kernel["configurations"]):
        return False
    return bulk_is_valid(kernel)


def _configurations(c: Any) -> bool:
    return isinstance(c, list) and all(
        isinstance(one, dict)
        and one.keys() <= _CONFIG_KEYS
        and "runs" in one
        and _count(one["runs"], 0)
        and all(_dim3(one[k]) for k in ("grid", "block") if k in one)
        and all(_count(one[k], 0) for k in ("registers", "shared_memory") if k in one)
        and ("duration" not in one or (_number(one["duration"]) and one["duration"] >= 0))
        for one in c
    )


def _history(h: Any) -> bool:
    if not isinstance(h, list):
        return False
    for e in h:
        if not isinstance(e, dict) or not e.keys() <= _HISTORY_KEYS:
            return False
        if not isinstance(e.get("date"), str) or not _text(e.get("reason")):
            return False
        if "by" in e and not isinstance(e["by"], str):
            return False
        if "action" in e and not (isinstance(e["action"], str) and e["action"] in _ACTIONS):
            return False
        previous = e.get("previous", {})
        if not isinstance(previous, dict) or not all(
            isinstance(k, str) and k and _NAME.match(k) and (_number(v) or isinstance(v, str))
            for k, v in previous.items()
        ):
            return False
    return True


def bulk_is_valid(kernel: Mapping[str, Any]) -> bool:
    """Whether one kernel's `metrics` and `info` certainly satisfy the schema."""
    metrics = kernel.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        return False
    for name, entry in metrics.items():
        if not isinstance(name, str) or not name or not _NAME.match(name) or not _metric(entry):
            return False
    if "info" not in kernel:
        return True
    info = kernel["info"]
    return isinstance(info, dict) and all(
        isinstance(k, str) and k and _NAME.match(k) and (_number(v) or isinstance(v, str))
        for k, v in info.items()
    )


def without_bulk(data: Any) -> Any:
    """The document with its kernels cut to one placeholder entry jsonschema accepts, when
    there are kernels and every entry is certainly valid; None otherwise (validate the whole
    document then)."""
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
        return None
    kernels = data["kernels"]
    if not kernels or not all(kernel_is_valid(kernel) for kernel in kernels):
        return None
    return {**data, "kernels": [_PLACEHOLDER]}


# The top level of a baseline (schemas/baseline.schema.json): with it, a valid document is
# vouched for without importing jsonschema at all (0.1 s of a check's start).
_TOP_KEYS = frozenset(
    {"format_version", "provenance", "fingerprint", "thresholds", "kernels", "identity", "program"}
)
_PROGRAM_KEYS = frozenset({"value", "unit", "runs", "threshold", "calibration"})


def _program(p: Any) -> bool:
    """The whole-program section as record writes it; anything else goes to jsonschema."""
    if not isinstance(p, dict) or not p.keys() <= {"gpu_time"}:
        return False
    g = p.get("gpu_time", {})
    if not isinstance(g, dict) or not g.keys() <= _PROGRAM_KEYS:
        return False
    if not (_number(g.get("value")) and g["value"] >= 0) or g.get("unit", "ns") != "ns":
        return False
    runs = g.get("runs", [])
    if not isinstance(runs, list) or not all(_number(r) and r >= 0 for r in runs):
        return False
    t = g.get("threshold")
    if not isinstance(t, dict) or t.keys() != {"relative"}:
        return False
    if not (_number(t["relative"]) and t["relative"] >= 0):
        return False
    return "calibration" not in g or isinstance(g["calibration"], str)


_FINGERPRINT_TEXTS = ("gpu", "cc", "ncu", "driver", "clock_control", "cache_control", "scope")
_FINGERPRINT_KEYS = frozenset(
    {*_FINGERPRINT_TEXTS, "stall_family", "stall_reasons", "metrics", "time_basis"}
)
_TIME_BASES = frozenset({"gate", "full"})
_PROVENANCE_TEXTS = ("recorded_at", "recorded_by", "updated_at", "updated_by")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _text_or_null(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _provenance(p: Any) -> bool:
    if not isinstance(p, dict):
        return False
    if any(key in p and not isinstance(p[key], str) for key in _PROVENANCE_TEXTS):
        return False
    if "reason" in p and not _text_or_null(p["reason"]):
        return False
    gpu = p.get("gpu", {})
    if not isinstance(gpu, dict) or not all(
        _text_or_null(gpu[k]) for k in ("name", "cc") if k in gpu
    ):
        return False
    captures = p.get("captures", [])
    if not isinstance(captures, list):
        return False
    for c in captures:
        if not isinstance(c, dict) or not isinstance(c.get("file"), str):
            return False
        if "sha256" in c and not (isinstance(c["sha256"], str) and _SHA256.fullmatch(c["sha256"])):
            return False
        if "launches" in c and not _count(c["launches"], 0):
            return False
    return True


def _fingerprint(f: Any) -> bool:
    if not isinstance(f, dict) or not f.keys() <= _FINGERPRINT_KEYS:
        return False
    if not all(_text_or_null(f[k]) for k in _FINGERPRINT_TEXTS if k in f):
        return False
    if "stall_family" in f and not isinstance(f["stall_family"], str):
        return False
    if "time_basis" in f and f["time_basis"] not in _TIME_BASES:
        return False
    return all(_strings(f[k]) for k in ("stall_reasons", "metrics") if k in f)


def document_is_valid(data: Any) -> bool:
    """Whether a whole baseline certainly satisfies the schema (kernels included)."""
    if not isinstance(data, dict) or not data.keys() <= _TOP_KEYS:
        return False
    version = data.get("format_version")
    if type(version) is not int or version not in (1, 2):
        return False
    if "provenance" in data and not _provenance(data["provenance"]):
        return False
    if "fingerprint" in data and not _fingerprint(data["fingerprint"]):
        return False
    thresholds = data.get("thresholds", {})
    if not isinstance(thresholds, dict) or not all(
        isinstance(k, str) and k and _NAME.match(k) and _override(v) for k, v in thresholds.items()
    ):
        return False
    if "program" in data and not _program(data["program"]):
        return False
    identity = data.get("identity", {})
    if not isinstance(identity, dict) or not identity.keys() <= {"nvtx"}:
        return False
    if "nvtx" in identity and not isinstance(identity["nvtx"], bool):
        return False
    kernels = data.get("kernels")
    return isinstance(kernels, list) and bool(kernels) and all(map(kernel_is_valid, kernels))
