"""Formatting values, changes and verdicts for people."""

from __future__ import annotations

import math

from perfgate.compare import Comparison, State

VERDICT = {
    State.PASS: "pass",
    State.REGRESSED: "regressed",
    State.IMPROVED: "improved",
    State.MISSING_KERNEL: "missing kernel",
    State.MISSING_METRIC: "missing metric",
    State.NEW_KERNEL: "new kernel",
    State.ERROR: "error",
}
_SCALES = {
    "ns": ((1e9, "s"), (1e6, "ms"), (1e3, "us")),
    "byte": ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")),
}
# Units that read better left off: the metric's name already says what is counted.
_SILENT_UNITS = {"inst", "sector", "request", "conflict", "sector/request", "register/thread"}


def number(value: float, unit: str = "") -> str:
    """A value with its unit, scaled for reading: 13632 ns -> '13.63 us'."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    for factor, name in _SCALES.get(unit, ()):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {name}"
    if float(value).is_integer() and abs(value) < 1e15:
        text = f"{int(value):,}"
    elif abs(value) >= 100:
        text = f"{value:,.1f}"
    elif value == 0 or abs(value) >= 0.01:
        text = f"{value:.3g}"
    else:
        text = f"{value:.2e}"
    if unit == "%":
        return f"{text}%"
    if not unit or unit in _SILENT_UNITS:
        return text
    return f"{text} {unit}"


def value(v: float | str | None, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return number(v, unit)


def change(c: Comparison) -> str:
    """'+12.5%', 'x32.0' for ten-fold and more, or the plain difference from zero."""
    if c.change is None:
        return ""
    rel = c.relative_change
    if rel is not None and math.isfinite(rel):
        return f"x{1 + rel:.1f}" if rel >= 9 else f"{rel * 100:+.1f}%"
    return ("+" if c.change > 0 else "") + number(c.change, c.unit)


def transition(c: Comparison) -> str:
    """'baseline 16 -> current 40 (+150.0%)'."""
    text = f"baseline {value(c.baseline, c.unit)} -> current {value(c.current, c.unit)}"
    delta = change(c)
    return f"{text} ({delta})" if delta else text
