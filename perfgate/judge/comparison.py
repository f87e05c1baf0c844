"""One metric of one kernel judged: the state a comparison ends in, and the comparison itself
(baseline and current value, the change, the bound it was judged by)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

Value = float | str


class State(enum.Enum):
    """The state one metric comparison ends in."""

    PASS = "pass"  # noqa: S105 (a state, not a password)
    REGRESSED = "regressed"
    IMPROVED = "improved"
    MISSING_METRIC = "missing metric"
    SKIPPED = "skipped"
    ERROR = "error"


@dataclass(frozen=True)
class Comparison:
    """One metric of one kernel, baseline against current."""

    kernel: str  # the baseline's kernel id
    metric: str
    state: State
    baseline: Value | None = None
    current: Value | None = None
    unit: str = ""
    change: float | None = None
    relative_change: float | None = None
    bound: str = ""
    message: str = ""
    baseline_shares: Mapping[str, float] | None = None
    current_shares: Mapping[str, float] | None = None
    # The gate's own judgement before rate semantics or a cause explained it away: a rate
    # that fell because the work fell is PASS with `explained` saying so.
    explained: str = ""
