"""The per-kernel level of a check: what the gate decided about each kernel, and why.

    capture -> ingest -> kernels (identity) -> measure -> compare -> KernelVerdict -> reporters

A check ends in one `KernelVerdict` per baselined kernel (and one per kernel new to the
baseline). A verdict holds the metric comparisons under it, the kernel's launch accounting,
and the root causes the differential diagnosis found in the change from baseline to current,
each with the comparisons it explains grouped under it as consequences. Reporters only render
verdicts; they never regroup comparisons or re-derive a state.

Rules of differential diagnosis (perfgate.causes) are pure functions from a `KernelDelta` to a
`RootCause` or None. This module holds the types they share and nothing that imports upward.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NoReturn

from perfgate.errors import ExitCode

Value = float | str


class State(enum.Enum):
    """The state one metric comparison ends in."""

    PASS = "pass"  # noqa: S105 (a state, not a password)
    REGRESSED = "regressed"
    IMPROVED = "improved"
    MISSING_METRIC = "missing metric"
    SKIPPED = "skipped"
    ERROR = "error"


class KernelState(enum.Enum):
    """The state one kernel ends in; the exit code follows from these alone."""

    PASS = "pass"  # noqa: S105
    IMPROVED = "improved"  # something got better, nothing worse
    REGRESSED = "regressed"  # a gated metric (or the launch count) got worse
    INCOMPLETE = "incomplete"  # a gated metric could not be measured in the capture
    MISSING = "missing"  # a baselined kernel is not in the capture
    NEW = "new"  # a kernel the baseline does not know
    SKIPPED = "skipped"  # nothing of it could be compared here (another architecture)
    ERROR = "error"  # the comparison itself failed (a label against a number, say)


# The order reports list kernels in: what blocks a merge first.
SEVERITY: tuple[KernelState, ...] = (
    KernelState.ERROR,
    KernelState.REGRESSED,
    KernelState.MISSING,
    KernelState.INCOMPLETE,
    KernelState.IMPROVED,
    KernelState.NEW,
    KernelState.SKIPPED,
    KernelState.PASS,
)


def _never(value: NoReturn) -> NoReturn:
    raise AssertionError(f"unhandled state {value!r}")


def kernel_exit_code(state: KernelState) -> ExitCode:
    """What one kernel's state means for the build. Exhaustive: mypy flags a state left out."""
    if state is KernelState.PASS or state is KernelState.IMPROVED or state is KernelState.NEW:
        return ExitCode.OK
    if state is KernelState.SKIPPED:
        return ExitCode.OK  # a check where every kernel is skipped fails as a whole (Report)
    if (
        state is KernelState.REGRESSED
        or state is KernelState.MISSING
        or state is KernelState.INCOMPLETE
    ):
        return ExitCode.GATE_FAILED
    if state is KernelState.ERROR:
        return ExitCode.INPUT_ERROR
    _never(state)


def worst_exit_code(codes: list[ExitCode]) -> ExitCode:
    worst = ExitCode.OK
    for code in codes:
        # An input error outranks a gate failure: the gate could not judge.
        if code is ExitCode.INPUT_ERROR or (code is ExitCode.GATE_FAILED and worst is ExitCode.OK):
            worst = code
    return worst


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
class LaunchCount:
    """Launches of one kernel per capture file (one captured run or range)."""

    baseline: float | None  # per capture, as recorded (None: the baseline predates counting)
    current: tuple[int, ...]  # per capture file of this check


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


@dataclass(frozen=True)
class KernelVerdict:
    kernel: str  # the baseline's id, or a readable id for a new kernel
    name: str  # the kernel name as ncu printed it (current, else as recorded)
    state: KernelState
    comparisons: tuple[Comparison, ...] = ()
    causes: tuple[RootCause, ...] = ()
    launches: LaunchCount | None = None
    captures: tuple[str, ...] = ()  # the capture files its launches came from
    message: str = ""  # for missing and new kernels: what is known, what replaced it
    related: tuple[str, ...] = ()  # missing: the new kernels that replaced it; new: the reverse
    family: str | None = None
    nvtx: str | None = None
    matched_by: str = ""  # "name", "renamed", "regex", ...: how its launches were found
    line: int | None = None  # its entry's line in the baseline file (None: a new kernel)

    @property
    def exit_code(self) -> ExitCode:
        return kernel_exit_code(self.state)

    @property
    def failing(self) -> tuple[Comparison, ...]:
        bad = (State.REGRESSED, State.MISSING_METRIC, State.ERROR)
        return tuple(c for c in self.comparisons if c.state in bad)

    @property
    def headline(self) -> RootCause | None:
        return self.causes[0] if self.causes else None

    def unexplained(self) -> tuple[Comparison, ...]:
        """Failing comparisons no cause accounts for: shown on their own."""
        covered = {m for cause in self.causes for m in cause.explains}
        return tuple(c for c in self.failing if c.metric not in covered)


def kernel_state(comparisons: tuple[Comparison, ...] | list[Comparison]) -> KernelState:
    if all(c.state is State.PASS for c in comparisons):  # the common case, without hashing
        return KernelState.PASS
    states = {c.state for c in comparisons}
    if State.ERROR in states:
        return KernelState.ERROR
    if State.REGRESSED in states:
        return KernelState.REGRESSED
    if State.MISSING_METRIC in states:
        return KernelState.INCOMPLETE
    if State.IMPROVED in states:
        return KernelState.IMPROVED
    if states and states <= {State.SKIPPED}:
        return KernelState.SKIPPED
    return KernelState.PASS


@dataclass(frozen=True)
class CheckResult:
    """One baseline (one GPU) checked against the captures."""

    baseline_path: str
    capture_paths: tuple[str, ...]
    verdicts: tuple[KernelVerdict, ...]
    warnings: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    baseline_gpu: str | None = None
    # Said once when no baselined kernel is in the captures: what they hold instead.
    notice: str = ""

    @property
    def exit_code(self) -> ExitCode:
        return worst_exit_code([v.exit_code for v in self.verdicts])

    def ordered(self) -> list[KernelVerdict]:
        rank = {s: i for i, s in enumerate(SEVERITY)}
        return sorted(self.verdicts, key=lambda v: rank[v.state])

    def counts(self) -> dict[KernelState, int]:
        out = dict.fromkeys(KernelState, 0)
        for v in self.verdicts:
            out[v.state] += 1
        return out


@dataclass(frozen=True)
class Report:
    """Everything one `perfgate check` found: a result per baseline, or the input problems
    that stopped it before any comparison (then `results` is empty)."""

    results: tuple[CheckResult, ...] = ()
    problems: tuple[str, ...] = ()
    # Said once for the whole check: baselines of a directory that no capture was for.
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> ExitCode:
        if self.problems:
            return ExitCode.INPUT_ERROR
        codes = [r.exit_code for r in self.results]
        gated = [v for r in self.results for v in r.verdicts if v.state is not KernelState.NEW]
        if gated and all(v.state is KernelState.SKIPPED for v in gated):
            # Nothing could be judged (captures from another architecture): never a pass.
            return ExitCode.INPUT_ERROR
        return worst_exit_code(codes)

    @property
    def verdicts(self) -> tuple[KernelVerdict, ...]:
        return tuple(v for r in self.results for v in r.verdicts)

    @property
    def comparisons(self) -> tuple[Comparison, ...]:
        return tuple(c for v in self.verdicts for c in v.comparisons)

    def counts(self) -> dict[KernelState, int]:
        out = dict.fromkeys(KernelState, 0)
        for v in self.verdicts:
            out[v.state] += 1
        return out

    @property
    def cause_count(self) -> int:
        return self._count(CauseKind.REGRESSION)

    @property
    def trade_off_count(self) -> int:
        return self._count(CauseKind.TRADE_OFF)

    def _count(self, kind: CauseKind) -> int:
        return sum(
            1
            for v in self.verdicts
            if v.state is KernelState.REGRESSED
            for c in v.causes
            if c.kind is kind
        )


@dataclass(frozen=True)
class Calibration:
    """Where a metric's bound came from, written into the baseline for a reviewer."""

    runs: int
    spread: float  # relative spread of the per-run medians (max - min) / median
    relative: float  # the bound chosen
    absolute: float = 0.0
    rule: str = ""  # "3 runs: spread 0.4% x 3 = 1.2%, floor 2.5% (kernel of 54 us)"
    extra: Mapping[str, float] = field(default_factory=dict)
