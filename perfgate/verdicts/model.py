"""What the gate decided about each kernel, and why: the verdicts of a check.

    capture -> ingest -> identity -> measure -> judge -> causes -> verdicts -> reporters

A check ends in one `KernelVerdict` per baselined kernel (and one per kernel new to the
baseline). A verdict holds the metric comparisons under it, the kernel's launch accounting,
and the root causes the differential diagnosis found in the change from baseline to current,
each with the comparisons it explains grouped under it as consequences. Reporters only render
verdicts; they never regroup comparisons or re-derive a state."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.causes.changes import ChangeFinding
from perfgate.causes.model import CauseKind, RootCause
from perfgate.common.errors import ExitCode
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.policy import (
    DEFAULT_POLICY,
    SEVERITY,
    FailOn,
    check_exit_code,
    comparison_fails,
    kernel_exit_code,
    worst_exit_code,
)
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.metrics.catalog import Role, role_of


@dataclass(frozen=True)
class LaunchCount:
    """Launches of one kernel per capture file (one captured run or range)."""

    baseline: float | None  # per capture, as recorded (None: the baseline predates counting)
    current: tuple[int, ...]  # per capture file of this check


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
        return tuple(c for c in self.comparisons if comparison_fails(c.state))

    @property
    def headline(self) -> RootCause | None:
        return self.causes[0] if self.causes else None

    def unexplained(self) -> tuple[Comparison, ...]:
        """Failing comparisons no cause accounts for: shown on their own."""
        covered = {m for cause in self.causes for m in cause.explains}
        return tuple(c for c in self.failing if c.metric not in covered)


@dataclass(frozen=True)
class ProgramVerdict:
    """The whole-program GPU time: every launch of each capture file summed (docs/check.md
    "Whole-program time"). PASS, REGRESSED or IMPROVED when judged; SKIPPED with the reason
    when it could not be (a baseline recorded before it, captures without gpu__time)."""

    state: KernelState
    baseline: float | None = None  # ns: the recorded fastest run's total
    current: float | None = None  # ns: this check's fastest capture file's total
    runs: tuple[float | None, ...] = ()  # ns: each capture file's total (None: incomplete)
    bound: float | None = None  # relative
    # The runs of the floor the bound is (2: the two-run floor, 4: the four-run floor; 0: the
    # recorded bound): the fastest of that many capture files or more is judged
    # (perfgate.judge.program.check_bound).
    floor_runs: int = 0
    new_time: float = 0.0  # ns, in the judged file: kernels the baseline does not hold
    missing_time: float = 0.0  # ns, as recorded: baselined kernels absent from the captures
    reason: str = ""  # why it was skipped
    # Why the baseline's program time was not judged (perfgate.judge.skips); None: judged,
    # or the baseline holds none (then there is no gate to judge).
    skip: Skip | None = None

    @property
    def change(self) -> float | None:
        if self.baseline is None or self.current is None or self.baseline <= 0:
            return None
        return self.current / self.baseline - 1.0

    @property
    def exit_code(self) -> ExitCode:
        return kernel_exit_code(self.state)


@dataclass(frozen=True)
class RatchetTakes:
    """What `perfgate baseline update --ratchet` would tighten with a check's captures: made
    by the ratchet's own plan (perfgate.lifecycle.plan.plan_ratchet), so a report that
    suggests it names what it would take, and never suggests it for nothing."""

    kernels: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (kernel id, metrics tightened)
    program: bool = False  # the whole-program GPU time tightened (or recorded where none was)

    @property
    def empty(self) -> bool:
        return not self.kernels and not self.program


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
    program: ProgramVerdict | None = None  # None: not asked (a check without a program)
    # The missing and new kernels grouped by the change that explains them, largest first
    # (perfgate.causes.changes); their verdicts stay, rendered under the finding.
    changes: tuple[ChangeFinding, ...] = ()
    # What the ratchet would tighten with these captures; None: not worked out (nothing
    # improved, perfgate compare's baseline is no file).
    ratchet: RatchetTakes | None = None

    def improved(self) -> bool:
        """Whether a kernel's comparison or the program time improved beyond its bound: all
        that `baseline update --ratchet` ever takes (an evidence metric is noted instead)."""
        if self.program is not None and self.program.state is KernelState.IMPROVED:
            return True
        return any(c.state is State.IMPROVED for v in self.verdicts for c in v.comparisons)

    def explained(self) -> frozenset[str]:
        """The ids of the missing and new kernels a change finding explains."""
        return frozenset(m for c in self.changes for m in c.members)

    @property
    def exit_code(self) -> ExitCode:
        codes = [v.exit_code for v in self.verdicts]
        if self.program is not None:
            codes.append(self.program.exit_code)
        return worst_exit_code(codes)

    def ordered(self) -> list[KernelVerdict]:
        rank = {s: i for i, s in enumerate(SEVERITY)}
        return sorted(self.verdicts, key=lambda v: rank[v.state])

    def counts(self) -> dict[KernelState, int]:
        out = dict.fromkeys(KernelState, 0)
        for v in self.verdicts:
            out[v.state] += 1
        return out


@dataclass(frozen=True)
class NotJudged:
    """The gates of a check not judged for one reason (perfgate.judge.skips): failing
    (UNJUDGED) or passing by a waiver (SKIPPED). Every report names these."""

    skip: Skip
    fails: bool
    metrics: tuple[str, ...]  # the metrics not judged, each once, in their first order
    kernels: int  # how many kernels they belong to
    comparisons: int
    program: bool  # the whole-program time is one of them


def not_judged(results: tuple[CheckResult, ...]) -> tuple[NotJudged, ...]:
    """The gates not judged, per reason and outcome: failing ones first. A skip of an
    evidence metric (no gate) is not listed: it is a note of its kernel."""
    found: dict[tuple[Skip, bool], tuple[dict[str, None], set[str], list[int], list[bool]]] = {}

    def entry(skip: Skip, fails: bool) -> tuple[dict[str, None], set[str], list[int], list[bool]]:
        return found.setdefault((skip, fails), ({}, set(), [0], [False]))

    for r in results:
        for v in r.verdicts:
            for c in v.comparisons:
                if c.skip is None:  # judged (only a comparison not judged carries a reason)
                    continue
                if c.state is State.SKIPPED and role_of(c.metric) is not Role.PRIMARY:
                    continue  # no gate: a note of its kernel
                metrics, kernels, count, _ = entry(c.skip, c.state is State.UNJUDGED)
                metrics[c.metric] = None
                kernels.add(f"{r.baseline_path}\0{v.kernel}")
                count[0] += 1
        p = r.program
        if p is not None and p.skip is not None and p.state in _NOT_JUDGED_PROGRAM:
            entry(p.skip, p.state is KernelState.UNJUDGED)[3][0] = True
    out = [
        NotJudged(skip, fails, tuple(m), len(k), n[0], prog[0])
        for (skip, fails), (m, k, n, prog) in found.items()
    ]
    return tuple(sorted(out, key=lambda n: (not n.fails, list(Skip).index(n.skip))))


_NOT_JUDGED_PROGRAM = (KernelState.UNJUDGED, KernelState.SKIPPED)


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
        """The gate's verdict as an exit code: every state under the default policy."""
        return self.exit_code_under(DEFAULT_POLICY)

    def exit_code_under(self, policy: frozenset[FailOn]) -> ExitCode:
        """The exit code under a `--fail-on` policy, from perfgate.judge.policy's status
        table: unusable input, or nothing judged, is never relaxed."""
        return check_exit_code(
            [v.state for v in self.verdicts],
            [r.program.state for r in self.results if r.program is not None],
            bool(self.problems),
            policy,
        )

    @property
    def verdicts(self) -> tuple[KernelVerdict, ...]:
        return tuple(v for r in self.results for v in r.verdicts)

    def not_judged(self) -> tuple[NotJudged, ...]:
        """The gates this check did not judge, per reason: those that fail it, and those a
        waiver let pass (perfgate.judge.skips)."""
        return not_judged(self.results)

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
