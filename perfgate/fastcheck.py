"""A fast yes/no check of the bulk of a baseline against schemas/baseline.schema.json.

jsonschema walks every node of a baseline through its generic machinery: for 1,000 kernels of
37 metrics that is over half a million nodes and most of a check's time (docs/scale.md). The
kernels' `metrics` and `info` are the bulk and have a fixed, flat shape, so this module checks
them in plain Python. It only ever says "valid" or "not sure": on any doubt the caller runs
jsonschema over the whole document, which words the errors (`FILE::$.json.path: message`).
`tests/test_properties.py` holds the two to the same answer on mutated real baselines.
"""

from __future__ import annotations

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


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


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
    if not isinstance(m, dict) or "value" not in m or not m.keys() <= _METRIC_KEYS:
        return False
    value = m["value"]
    if not (_number(value) or isinstance(value, str)):
        return False
    if any(key in m and not _number(m[key]) for key in ("min", "max")):
        return False
    if any(key in m and not isinstance(m[key], str) for key in _STRINGS):
        return False
    if "shares" in m and not (
        isinstance(m["shares"], dict)
        and all(isinstance(k, str) and _number(v) for k, v in m["shares"].items())
    ):
        return False
    if "reasons" in m and not _strings(m["reasons"]):
        return False
    return "threshold" not in m or _override(m["threshold"])


def bulk_is_valid(kernel: Mapping[str, Any]) -> bool:
    """Whether one kernel's `metrics` and `info` certainly satisfy the schema."""
    metrics = kernel.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        return False
    for name, entry in metrics.items():
        if not isinstance(name, str) or not name or not _NAME.match(name) or not _metric(entry):
            return False
    info = kernel.get("info")
    if info is None:
        return True
    return isinstance(info, dict) and all(
        isinstance(k, str) and k and _NAME.match(k) and (_number(v) or isinstance(v, str))
        for k, v in info.items()
    )


def without_bulk(data: Any) -> Any:
    """The document with each kernel's bulk cut to a placeholder jsonschema accepts, when every
    kernel's bulk is certainly valid; None otherwise (validate the whole document then)."""
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
        return None
    kernels = []
    for kernel in data["kernels"]:
        if not isinstance(kernel, dict) or not bulk_is_valid(kernel):
            return None
        light = {k: v for k, v in kernel.items() if k not in ("metrics", "info")}
        light["metrics"] = {"placeholder": {"value": 0}}
        kernels.append(light)
    return {**data, "kernels": kernels}
