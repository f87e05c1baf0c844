"""What a baseline's schema cannot say, checked after it: a metric the catalog knows, a value
of its kind (a label or a finite number from 0), threshold keys of its kind; and line
breaks other than a newline (\\n), which YAML reads and line-based edits do not."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from perfgate.baseline.problems import add_problem, problem
from perfgate.common.errors import UsageError
from perfgate.metrics.catalog import lookup

_NUMERIC_KEYS = ("relative", "absolute", "direction")


CATEGORICAL_KEYS = ("stable", "expect", "forbid", "margin")


def check_metric(
    name: str,
    entry: Mapping[str, Any] | None,
    where: list[str | int],
    problems: list[str],
    line_of: Any,
) -> None:
    try:
        defn = lookup(name)
    except UsageError as exc:
        add_problem(problems, line_of, where, exc.message)
        return
    if entry is None:
        return
    value = entry.get("value")
    categorical = defn.categorical
    if value is not None:
        if categorical and not isinstance(value, str):
            add_problem(
                problems,
                line_of,
                [*where, "value"],
                f"{name} is categorical: its value is a label such as 'long_scoreboard'",
            )
        if not categorical and not defn.raw and not isinstance(value, (int, float)):
            add_problem(
                problems, line_of, [*where, "value"], f"{name} needs a number, not {value!r}"
            )
    for key in _VALUE_KEYS:
        number = entry.get(key)
        # The common case first: a finite number from 0 up (NaN compares false).
        if number is None or number.__class__ is str or 0 <= number < math.inf:
            continue
        if isinstance(number, float) and not math.isfinite(number):
            add_problem(
                problems,
                line_of,
                [*where, key],
                f"{number!r} is not a finite number; a baseline holds measured values",
            )
        elif isinstance(number, (int, float)) and not isinstance(number, bool) and number < 0:
            add_problem(
                problems,
                line_of,
                [*where, key],
                f"{number!r} is negative; counters are never negative",
            )
    override = entry.get("threshold")
    if not override:
        return
    wrong = _NUMERIC_KEYS if categorical else CATEGORICAL_KEYS
    for key in wrong:
        if key in override:
            kind = "categorical" if categorical else "numeric"
            add_problem(
                problems,
                line_of,
                [*where, "threshold", key],
                f"does not apply to {name}, a {kind} metric",
            )


_VALUE_KEYS = ("value", "min", "max")


_UNICODE_BREAKS = {"\x85": "NEL (U+0085)", "\u2028": "U+2028", "\u2029": "U+2029"}


def check_line_breaks(text: str, name: str) -> None:
    """YAML reads NEL, U+2028 and U+2029 as line breaks, and editors and perfgate's own
    line-based edits (accept, update) do not: one file would read as two different files.
    A baseline breaks its lines with \\n only; such a character inside a string is written
    as an escape ("\\N", "\\L", "\\P" in a double-quoted string)."""
    for ch, what in _UNICODE_BREAKS.items():
        at = text.find(ch)
        if at >= 0:
            line = text.count("\n", 0, at) + 1
            column = at - (text.rfind("\n", 0, at) + 1) + 1
            raise problem(
                name,
                f"{line}:{column}: a {what} character; a baseline breaks lines with \\n only "
                "(inside a string, write it escaped in double quotes)",
            )
