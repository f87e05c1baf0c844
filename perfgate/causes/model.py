"""What differential diagnosis reads and says: a kernel's two sides (baseline and current) with
its comparisons, and the root causes the rules recognise in the change.

Rules of differential diagnosis (perfgate.causes.rules_*) are pure functions from a `KernelDelta`
to a `RootCause` or None."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from perfgate.judge.comparison import Comparison, State, Value


class CauseKind(enum.Enum):
    REGRESSION = "regression"  # why the kernel got worse
    TRADE_OFF = "trade-off"  # a gated counter got worse while the kernel got faster
    IMPROVEMENT = "improvement"  # why it got better
    CHANGE = "change"  # what changed about the kernel (launches, shape, substitution)


@dataclass(frozen=True)
class Evidence:
    """A counter before and after, with the raw ncu metrics it came from."""

    metric: str
    before: Value | None
    after: Value | None
    unit: str = ""
    raw: tuple[str, ...] = ()


@dataclass(frozen=True)
class RootCause:
    mechanism: str  # the rule's registry key: "uncoalesced-loads", "lost-pipelining", ...
    kind: CauseKind
    title: str  # "Loads became uncoalesced"
    detail: str  # the counters that moved and why they point here
    lever: str  # what to try first
    evidence: tuple[Evidence, ...] = ()
    # Metrics whose change follows from this cause; reports list them under it.
    explains: tuple[str, ...] = ()
    score: float = 0.0  # higher first


@dataclass(frozen=True)
class Side:
    """One side of a kernel's change: the values of every metric known for it."""

    name: str  # the kernel name as ncu printed it
    values: Mapping[str, Value]
    shares: Mapping[str, float] | None = None  # stall shares (%) over one reason set
    launches: float | None = None  # per capture
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    rules: Mapping[str, str] = field(default_factory=dict)  # NCU rule id -> its message
    # Source counter -> the source lines that account for most of it (.ncu-rep only).
    lines: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)

    def number(self, metric: str) -> float | None:
        v = self.values.get(metric)
        return v if isinstance(v, float) and math.isfinite(v) else None


@dataclass(frozen=True)
class KernelDelta:
    """What the rules of differential diagnosis read: a kernel before and after."""

    kernel: str
    baseline: Side
    current: Side
    comparisons: tuple[Comparison, ...]
    family: str | None = None  # library family ("cuBLAS", "cuDNN", ...); None: user code

    def ratio(self, metric: str) -> float | None:
        """after / before; None where either is unknown or before is 0."""
        a, b = self.baseline.number(metric), self.current.number(metric)
        if a is None or b is None or a == 0:
            return None
        return b / a

    def regressed(self, metric: str) -> bool:
        return any(c.metric == metric and c.state is State.REGRESSED for c in self.comparisons)
