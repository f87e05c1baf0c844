"""One baselined kernel judged, on one route whatever matched it: its metrics compared (a
passing kernel's column route, else metric by metric), the comparisons judged by the rules of
perfgate.judge.rules, and a kernel that moved diagnosed (perfgate.causes). Every verdict of a
kernel found in the capture comes from judge_kernel, a split kernel's work classes and a
kernel of another scope included (perfgate.verdicts.split)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from perfgate import causes as differential
from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.causes.model import CauseKind, KernelDelta, RootCause, Side
from perfgate.identity.configs import (
    CONFIG_INDEPENDENT,
    expected_duration,
    pin_advice,
    slower_choice,
)
from perfgate.identity.families import family_of
from perfgate.ingest.launches import Capture, Launch, per_file
from perfgate.judge import rules
from perfgate.judge.common_mode import CommonFactor
from perfgate.judge.comparison import Comparison, State, Value
from perfgate.judge.policy import kernel_state
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.metrics.catalog import lookup
from perfgate.metrics.columns import KernelRows
from perfgate.metrics.measure import Measured, measure, rule_speedups
from perfgate.verdicts.metric import BoundsMemo, compare_one, configuration_changed
from perfgate.verdicts.model import KernelVerdict, LaunchCount
from perfgate.verdicts.passing import Passing

# Matched by another identity, or an autotuned kernel at another configuration than most
# recorded runs used (perfgate.identity.configs): always diagnosed, the message says how.
CHANGED = ("renamed", "reshaped", "reconfigured")


@dataclass(frozen=True)
class Judging:
    """What every kernel of one check is judged with."""

    capture: Capture
    baseline: Baseline
    waived: frozenset[Skip] = frozenset()
    memo: BoundsMemo = field(default_factory=dict)
    # The all-pass route of the check's LaunchTable; None: every kernel metric by metric.
    passing: Passing | None = None


def judge_kernel(
    kernel: KernelBaseline,
    launches: list[Launch],
    how: str,
    judging: Judging,
    rows: KernelRows | None = None,
    factor: CommonFactor | None = None,
    recorded: KernelBaseline | None = None,
    decided: tuple[Comparison, ...] = (),
    two_run: frozenset[str] = frozenset(),
    runs: int = 1,
    as_measured: frozenset[str] = frozenset(),
) -> KernelVerdict:
    """`kernel` (its entry as judged) over `launches`, matched `how`. `factor`: the common
    factor its times were scaled by; `recorded`: the entry as recorded, where `kernel` lost
    metrics; `decided`: comparisons of metrics not compared (another scope's launch counts),
    judged with the rest (settled) but neither moving the kernel nor diagnosed; `two_run`:
    the time metrics bounded by the floor of a check of `runs` capture files, `as_measured`
    those of them judged without the common factor (the four-run floor)."""
    capture = judging.capture
    compared, measured = _compared(kernel, launches, how, judging, rows)
    changed = how.startswith(CHANGED)
    current = _Current(kernel, launches, capture, measured)
    facts = rules.KernelFacts(
        kernel, judging.baseline, recorded, judging.waived, current, factor,
        _choice(kernel, launches, capture, compared), two_run, runs, as_measured,
    )  # fmt: skip
    comparisons = rules.judge((*compared, *decided), facts)
    own = comparisons[: len(compared)]
    family = family_name(kernel, launches[0].name)
    state = kernel_state(comparisons)
    # A kernel that passes passes on what was judged too (its gates not judged were waived).
    judged = state if state is KernelState.PASS else judged_state(own)
    causes: tuple[RootCause, ...] = ()
    if changed or any(c.state is not State.PASS for c in compared):
        # Only a kernel that moved is diagnosed: the common all-pass check measures its gated
        # metrics and nothing more (docs/scale.md).
        causes = _causes(_delta(kernel, launches, current.side(), own))
    if judged is KernelState.PASS:
        causes = tuple(c for c in causes if c.kind is CauseKind.CHANGE)
    # The headline answers the verdict: why it regressed (or the trade-off that made it), why
    # it improved. The rules' own ranking holds within a kind.
    order = _HEADLINE_ORDER.get(judged, ())
    causes = tuple(
        sorted(causes, key=lambda c: order.index(c.kind) if c.kind in order else len(order))
    )
    if facts.choice and any(c.metric in _CHOICE_TIMES and c.state is State.REGRESSED for c in own):
        causes = _with_choice(causes, facts.choice, kernel.name or launches[0].name)
    return KernelVerdict(
        kernel=kernel.id,
        name=launches[0].name,
        state=state,
        comparisons=comparisons,
        causes=causes,
        launches=_launch_count(kernel, launches, capture.paths),
        captures=tuple(sorted({la.source for la in launches})),
        message=how if changed else "",
        family=family,
        nvtx=kernel.match.nvtx,
        matched_by=how.split(":")[0] if changed else how,
        line=kernel.line,
    )


def _compared(
    kernel: KernelBaseline,
    launches: list[Launch],
    how: str,
    judging: Judging,
    rows: KernelRows | None,
) -> tuple[list[Comparison], dict[str, Measured]]:
    """Each metric of `kernel` compared, with the values measured on the way (none on the
    all-pass route: a kernel that passes is not diagnosed)."""
    capture, baseline = judging.capture, judging.baseline
    if judging.passing is not None and rows is not None and not how.startswith(CHANGED):
        passed = judging.passing.comparisons(kernel, launches, capture, rows)
        if passed is not None:
            return passed, {}
    comparisons: list[Comparison] = []
    measured: dict[str, Measured] = {}
    reconfigured = kernel.pinned is not None and "reconfigured" in how
    for metric in kernel.metrics:
        if reconfigured and metric.name not in CONFIG_INDEPENDENT:
            # The tile changed: this metric follows it (docs/identity.md).
            comparisons.append(configuration_changed(kernel, metric))
            continue
        comparison, got = compare_one(
            kernel, metric, launches, capture, baseline, judging.memo, rows
        )
        comparisons.append(comparison)
        if got is not None:
            measured[metric.name] = got
    return comparisons, measured


def judged_state(comparisons: Sequence[Comparison]) -> KernelState:
    """The state of what was judged, which the causes answer: a gate not judged (UNJUDGED,
    said on a line of its own) reads as skipped here."""
    return kernel_state(
        [replace(c, state=State.SKIPPED) if c.skip is not None else c for c in comparisons]
    )


class _Current(Mapping[str, Value]):
    """The capture's side of a kernel, measured when first read: by a rule (a rate's work
    metrics) or by the diagnosis of a kernel that moved; the values measured by the
    comparisons are taken as they are."""

    def __init__(
        self,
        kernel: KernelBaseline,
        launches: Sequence[Launch],
        capture: Capture,
        measured: dict[str, Measured],
    ) -> None:
        self._args = (kernel, launches, capture, measured)
        self._side: Side | None = None

    def side(self) -> Side:
        if self._side is None:
            self._side = _current_side(*self._args)
        return self._side

    def __getitem__(self, name: str) -> Value:
        return self.side().values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.side().values)

    def __len__(self) -> int:
        return len(self.side().values)


def _current_side(
    kernel: KernelBaseline,
    launches: Sequence[Launch],
    capture: Capture,
    measured: dict[str, Measured],
) -> Side:
    # The gated values were measured by the comparisons; the diagnosis's others once more.
    rest = [n for n in differential.metrics() if n not in measured]
    current = {**differential.measure_all(launches, capture.columns, rest), **measured}
    values: dict[str, float | str] = {name: got.value for name, got in current.items()}
    shares = next((dict(got.shares) for got in current.values() if got.shares is not None), None)
    values.update(rule_speedups(launches))
    first = launches[0]
    messages: dict[str, str] = {}
    lines: dict[str, tuple[tuple[str, float], ...]] = {}
    for launch in launches:
        for rule, text in launch.rules.items():
            messages.setdefault(rule, text)
        for counter, where in launch.lines.items():
            lines.setdefault(counter, where)
    runs = len({la.source for la in launches}) or 1
    return Side(
        name=first.name,
        values=values,
        shares=shares,
        launches=len(launches) / runs,
        grid=first.grid,
        block=first.block,
        rules=messages,
        lines=lines,
    )


def _dominant_shares(kernel: KernelBaseline) -> dict[str, float] | None:
    for m in kernel.metrics:
        if m.shares:
            return dict(m.shares)
    return None


def _delta(
    kernel: KernelBaseline,
    launches: Sequence[Launch],
    current: Side,
    comparisons: Sequence[Comparison],
) -> KernelDelta:
    base_values: dict[str, float | str] = dict(kernel.info)
    for m in kernel.metrics:
        base_values[m.name] = m.value
    first = launches[0]
    return KernelDelta(
        kernel=kernel.id,
        baseline=Side(
            name=kernel.name or first.name,
            values=base_values,
            shares=_dominant_shares(kernel),
            launches=float(kernel.launches) if kernel.launches is not None else None,
            grid=kernel.match.grid,
            block=kernel.match.block,
        ),
        current=current,
        comparisons=tuple(comparisons),
        family=family_name(kernel, first.name),
    )


def family_name(kernel: KernelBaseline, name: str) -> str | None:
    """The family of a kernel's name, else as recorded: a baseline recorded before a family's
    naming was known says another (cuDNN's xmma engines, `..._cudnn`, were called cuBLAS)."""
    family = family_of(name)
    return family.name if family else kernel.family


def _causes(delta: KernelDelta) -> tuple[RootCause, ...]:
    return tuple(differential.diagnose(delta).causes)


_HEADLINE_ORDER: dict[KernelState, tuple[CauseKind, ...]] = {
    KernelState.REGRESSED: (CauseKind.REGRESSION, CauseKind.TRADE_OFF, CauseKind.CHANGE),
    KernelState.INCOMPLETE: (CauseKind.REGRESSION, CauseKind.TRADE_OFF, CauseKind.CHANGE),
    KernelState.IMPROVED: (CauseKind.IMPROVEMENT, CauseKind.CHANGE),
}


def _launch_count(
    kernel: KernelBaseline, launches: Sequence[Launch], paths: Sequence[str]
) -> LaunchCount:
    count = float(kernel.launches) if kernel.launches is not None else None
    return LaunchCount(count, per_file(launches, paths))


def per_configuration(kernel: KernelBaseline, launches: Sequence[Launch]) -> KernelBaseline:
    """An autotuned entry with its duration set to what the check's configurations took when
    recorded (perfgate.identity.configs.expected_duration); its bound is one configuration's
    noise (perfgate.lifecycle.record). The recorded range spans every configuration the runs
    chose, which is no noise of this one: it goes, so that a tighter floor of the check (two
    runs, perfgate.judge.two_runs) is not held off by another configuration's time."""
    expected = expected_duration(kernel.configurations, launches) if kernel.tuned else None
    if expected is None:
        return kernel
    metrics = tuple(
        replace(m, value=expected, low=expected, high=expected) if m.name == "duration" else m
        for m in kernel.metrics
    )
    return replace(kernel, metrics=metrics)


_CHOICE_TIMES = ("duration", "total_time")


def _choice(
    kernel: KernelBaseline,
    launches: Sequence[Launch],
    capture: Capture,
    comparisons: Sequence[Comparison],
) -> str:
    """An autotuned kernel slower than the best configuration its baseline saw: which
    configuration the autotuner chose and which was the best, in words
    (perfgate.identity.configs.slower_choice); "" for any other kernel."""
    # Its total time is each run's launches x the fastest, which a slower choice moves when
    # the duration judged at that choice's own recorded time passes (perfgate_rmsnorm_kernel,
    # h200-m against h200-h, i, j: total time +9.8%, duration +3.5% at its configuration).
    if not kernel.tuned or not any(
        c.metric in _CHOICE_TIMES and c.state is State.REGRESSED for c in comparisons
    ):
        return ""

    def duration(some: Sequence[Launch]) -> float | None:
        got = measure(lookup("duration"), some, capture.columns)
        timed = isinstance(got, Measured) and isinstance(got.value, float)
        return float(got.value) if timed else None  # type: ignore[union-attr]

    return slower_choice(kernel.configurations, launches, duration)


def _with_choice(causes: tuple[RootCause, ...], named: str, name: str) -> tuple[RootCause, ...]:
    # The headline: a rule comparing the counters of two configurations explains the tile.
    chosen = RootCause(
        "autotuned-configuration", CauseKind.REGRESSION,
        "Slower autotuner choice", named,
        pin_advice(name), explains=("duration", "total_time"),
    )  # fmt: skip
    causes = tuple(c for c in causes if not _tile_work(c))
    # A mechanism of the kernel's own code that changed its work per element outranks the
    # tile choice (a softmax writing fp32: every configuration stores twice the bytes).
    if causes and causes[0].mechanism in _OUTRANKS_CHOICE:
        return (causes[0], chosen, *causes[1:])
    return (chosen, *causes)


_OUTRANKS_CHOICE = ("wider-stores",)
# Counts a launch configuration decides: another tile or warp count runs other instructions
# for the same elements (fam-b's softmax at 16 warps against a median of 4: x2.11), so "More
# work" on them alone is the autotuner's choice again, not work the program asked for.
_TILE_COUNTS = frozenset({"instructions_executed", "tensor_instructions"})


def _tile_work(cause: RootCause) -> bool:
    """A "More work" cause whose evidence is only counts the configuration decides."""
    return cause.mechanism == "more-work" and all(e.metric in _TILE_COUNTS for e in cause.evidence)
