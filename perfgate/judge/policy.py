"""The status table: everything a state decides, one row per state, read by every writer.

A kernel's row (`STATUS`) says what the state means for the build under each `--fail-on`
policy, whether its kernels get the diagnosis capture, whether the text and markdown reports
list them or only count them, whether `baseline accept` takes them, and the words every writer
uses for it. A comparison's row (`COMPARISON_STATUS`) says what it does to its kernel and its
words; `CHECK_STATUS` holds what a check as a whole can end in before its kernels count, and
`EXIT_WORDS` the words of each exit code. The exit code, `kernel_state`, the reporters, the
step outputs, `baseline accept` and the diagnosis capture read these and decide nothing beside
them.

A state is in each table or the import fails (tests/judge/test_policy.py adds a state to prove it),
so a new state cannot fall through to "passes" in one reporter and "fails" in another."""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable
from typing import Any, NamedTuple

from perfgate.common.errors import ExitCode, UsageError
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.states import KernelState


class FailOn(enum.Enum):
    """What fails the build (`--fail-on`); an empty set is warn-only."""

    REGRESSION = "regression"
    MISSING = "missing"


class Meaning(enum.Enum):
    """What one state means for the build."""

    PASSES = "passes"
    FAILS = "fails"  # the gate failed: exit 1 under a policy that names the state's word
    INPUT_ERROR = "input error"  # the gate could not judge: exit 2 under every policy


DEFAULT_POLICY: frozenset[FailOn] = frozenset(FailOn)


class Status(NamedTuple):
    """One kernel state's row."""

    # PASSES, INPUT_ERROR, or the --fail-on word under which the state fails the build.
    build: Meaning | FailOn
    # The kernel goes to the diagnosis capture (`capture --phases auto`): what the gate found
    # wrong with a kernel it measured; a missing kernel has nothing to profile.
    diagnose: bool
    # Counted, not listed, by the text report and the markdown summary (-v lists them).
    quiet: bool
    # `baseline accept` takes the state's kernels by default.
    accept: bool
    counted: str  # its count on the status line: "2 regressed", "12 passed"
    verdict: str  # a kernel's verdict in every report: "regressed", "pass"
    icon: str  # the markdown report's mark beside the verdict


# The rows in the order reports list kernels (`SEVERITY`): what blocks a merge first.
STATUS: dict[KernelState, Status] = {
    KernelState.ERROR: Status(
        Meaning.INPUT_ERROR, diagnose=True, quiet=False, accept=False,
        counted="errors", verdict="error", icon="⚠️",
    ),
    KernelState.REGRESSED: Status(
        FailOn.REGRESSION, diagnose=True, quiet=False, accept=True,
        counted="regressed", verdict="regressed", icon="❌",
    ),
    # A gate not judged (perfgate.judge.skips) fails like input the gate could not judge,
    # under every policy: only a waiver by name lets it pass. Quiet: counted on the status
    # line and explained once per reason under it (every kernel's gates not judged for one
    # reason read the same); -v lists the kernels.
    KernelState.UNJUDGED: Status(
        Meaning.INPUT_ERROR, diagnose=False, quiet=True, accept=False,
        counted="not judged", verdict="not judged", icon="⛔",
    ),
    KernelState.MISSING: Status(
        FailOn.MISSING, diagnose=False, quiet=False, accept=True,
        counted="missing", verdict="missing", icon="❌",
    ),
    # A gated metric the capture lacks: nothing to accept until it is captured.
    KernelState.INCOMPLETE: Status(
        FailOn.MISSING, diagnose=True, quiet=False, accept=False,
        counted="incomplete", verdict="incomplete", icon="❌",
    ),
    # Good news a reviewer should see, and may ratchet in: listed.
    KernelState.IMPROVED: Status(
        Meaning.PASSES, diagnose=False, quiet=False, accept=False,
        counted="improved", verdict="improved", icon="🟢",
    ),
    # Counted; one that replaced a baselined kernel is named in that line.
    KernelState.NEW: Status(
        Meaning.PASSES, diagnose=False, quiet=True, accept=False,
        counted="new", verdict="new", icon="🆕",
    ),
    # Passes on its own; a check where every kernel is skipped fails as a whole (CHECK_STATUS).
    KernelState.SKIPPED: Status(
        Meaning.PASSES, diagnose=False, quiet=True, accept=False,
        counted="skipped", verdict="skipped", icon="⏭️",
    ),
    KernelState.PASS: Status(
        Meaning.PASSES, diagnose=False, quiet=True, accept=False,
        counted="passed", verdict="pass", icon="✅",
    ),
}  # fmt: skip


def _exhaustive(table: Collection[Any], states: Iterable[Any], name: str) -> None:
    """Every state has its row: a state added later cannot pass by omission."""
    left_out = set(states) - set(table)
    if left_out:
        raise AssertionError(f"perfgate.judge.policy.{name} has no entry for {left_out}")


_exhaustive(STATUS, KernelState, "STATUS")

# The order reports list kernels in: what blocks a merge first.
SEVERITY: tuple[KernelState, ...] = tuple(STATUS)
_RANK = {state: i for i, state in enumerate(SEVERITY)}

# The order of the status line's counts: what blocks a merge first, then what passed, was
# skipped, or is new ("12 passed, 3 new" reads better than severity's "3 new, 12 passed").
COUNTED: tuple[KernelState, ...] = (
    KernelState.ERROR,
    KernelState.REGRESSED,
    KernelState.UNJUDGED,
    KernelState.MISSING,
    KernelState.INCOMPLETE,
    KernelState.IMPROVED,
    KernelState.PASS,
    KernelState.SKIPPED,
    KernelState.NEW,
)
_exhaustive(COUNTED, KernelState, "COUNTED")


class ComparisonStatus(NamedTuple):
    """One comparison state's row."""

    build: Meaning | FailOn  # what it means for the build: its kernel's failures list it or not
    # The state it gives its kernel: the kernel takes its comparisons' worst by SEVERITY; a
    # skipped one counts only where nothing else was compared (kernel_state).
    kernel: KernelState
    word: str  # in every report's metric rows


COMPARISON_STATUS: dict[State, ComparisonStatus] = {
    State.PASS: ComparisonStatus(Meaning.PASSES, KernelState.PASS, "pass"),
    State.REGRESSED: ComparisonStatus(FailOn.REGRESSION, KernelState.REGRESSED, "regressed"),
    State.IMPROVED: ComparisonStatus(Meaning.PASSES, KernelState.IMPROVED, "improved"),
    # An evidence metric beyond its bound alone: passes (exit 0), shown as a note.
    State.NOTED: ComparisonStatus(Meaning.PASSES, KernelState.PASS, "noted"),
    State.MISSING_METRIC: ComparisonStatus(
        FailOn.MISSING, KernelState.INCOMPLETE, "missing metric"
    ),
    State.SKIPPED: ComparisonStatus(Meaning.PASSES, KernelState.SKIPPED, "skipped"),
    State.UNJUDGED: ComparisonStatus(Meaning.INPUT_ERROR, KernelState.UNJUDGED, "not judged"),
    State.ERROR: ComparisonStatus(Meaning.INPUT_ERROR, KernelState.ERROR, "error"),
}
_exhaustive(COMPARISON_STATUS, State, "COMPARISON_STATUS")


def kernel_state(comparisons: tuple[Comparison, ...] | list[Comparison]) -> KernelState:
    """The state one kernel ends in: the worst its comparisons give it (COMPARISON_STATUS). A
    NOTED comparison (evidence alone) gives a pass; a skipped one counts only when every
    comparison was skipped."""
    if all(c.state is State.PASS for c in comparisons):  # the common case, without hashing
        return KernelState.PASS
    given = {COMPARISON_STATUS[c.state].kernel for c in comparisons}
    judged = given - {KernelState.SKIPPED}
    if not judged:  # every comparison skipped (there is one: all() took the empty case)
        return KernelState.SKIPPED
    return min(judged, key=_RANK.__getitem__)


def comparison_fails(state: State) -> bool:
    """Whether a comparison is listed among its kernel's failures (a regression, a metric the
    capture lacks, an error); a noted one is not."""
    return COMPARISON_STATUS[state].build is not Meaning.PASSES


def comparison_word(state: State) -> str:
    return COMPARISON_STATUS[state].word


def meaning(state: KernelState, policy: frozenset[FailOn] = DEFAULT_POLICY) -> Meaning:
    entry = STATUS[state].build
    if isinstance(entry, Meaning):
        return entry
    return Meaning.FAILS if entry in policy else Meaning.PASSES


def passes_quietly(state: KernelState) -> bool:
    """Whether the text report and the markdown summary only count the state's kernels."""
    return STATUS[state].quiet


def loud(state: KernelState) -> bool:
    """Whether a kernel's line shouts its verdict (upper case) and gives its details without
    -v: the states that need attention (`failing`), so that what fails reads apart from what
    passes even where it is listed (a kernel not judged, under -v)."""
    return failing(state)


def acceptable(state: KernelState) -> bool:
    """Whether `baseline accept` takes the state's kernels by default."""
    return STATUS[state].accept


def failing(state: KernelState) -> bool:
    """Whether the state needs attention by default: it fails the build, or could not be
    judged (reporters list these as failures, annotations and JUnit failures or errors)."""
    return meaning(state) is not Meaning.PASSES


def diagnosed(state: KernelState) -> bool:
    """Whether a kernel in the state goes to the diagnosis capture."""
    return STATUS[state].diagnose


def verdict_word(state: KernelState) -> str:
    return STATUS[state].verdict


def counted_word(state: KernelState) -> str:
    return STATUS[state].counted


_EXIT = {
    Meaning.PASSES: ExitCode.OK,
    Meaning.FAILS: ExitCode.GATE_FAILED,
    Meaning.INPUT_ERROR: ExitCode.INPUT_ERROR,
}


def kernel_exit_code(state: KernelState, policy: frozenset[FailOn] = DEFAULT_POLICY) -> ExitCode:
    return _EXIT[meaning(state, policy)]


class CheckState(enum.Enum):
    """How a check as a whole ended, before its kernels' states count."""

    JUDGED = "judged"  # its exit code is the worst of its kernels' and programs' states
    UNREADABLE = "could not check"  # input problems stopped it before any comparison
    # Every baselined kernel skipped (captures from another architecture): never a pass.
    NOTHING_JUDGED = "nothing judged"


# What each check state means for the build: None where its kernels' states decide. Unusable
# input is never relaxed by a policy: the gate could not judge.
CHECK_STATUS: dict[CheckState, Meaning | None] = {
    CheckState.JUDGED: None,
    CheckState.UNREADABLE: Meaning.INPUT_ERROR,
    CheckState.NOTHING_JUDGED: Meaning.INPUT_ERROR,
}
_exhaustive(CHECK_STATUS, CheckState, "CHECK_STATUS")


def check_state(kernels: Iterable[KernelState], problems: bool) -> CheckState:
    if problems:
        return CheckState.UNREADABLE
    gated = [s for s in kernels if s is not KernelState.NEW]
    if gated and all(s is KernelState.SKIPPED for s in gated):
        return CheckState.NOTHING_JUDGED
    return CheckState.JUDGED


def check_exit_code(
    kernels: Collection[KernelState],
    programs: Iterable[KernelState],
    problems: bool,
    policy: frozenset[FailOn] = DEFAULT_POLICY,
) -> ExitCode:
    """A check's exit code under a `--fail-on` policy. The whole program's time is one more
    judged state: slower beyond its bound fails like a regressed kernel, even when every
    kernel stays within its own bound."""
    fixed = CHECK_STATUS[check_state(kernels, problems)]
    if fixed is not None:
        return _EXIT[fixed]
    return worst_exit_code(kernel_exit_code(s, policy) for s in [*kernels, *programs])


class ExitWords(NamedTuple):
    """A check's outcome in words: the status line's, the JSON `status`, the step output
    `verdict`."""

    status_line: str
    json: str
    output: str


# Every writer's words for the exit code a check ends with.
EXIT_WORDS: dict[ExitCode, ExitWords] = {
    ExitCode.OK: ExitWords("PASSED", "passed", "pass"),
    ExitCode.GATE_FAILED: ExitWords("FAILED", "failed", "fail"),
    ExitCode.INPUT_ERROR: ExitWords("ERROR", "error", "error"),
    ExitCode.INTERNAL_ERROR: ExitWords("ERROR", "error", "error"),
}
_exhaustive(EXIT_WORDS, ExitCode, "EXIT_WORDS")


# Unusable input outranks a gate failure (the gate could not judge), which outranks a pass.
_PRECEDENCE = {
    ExitCode.OK: 0,
    ExitCode.GATE_FAILED: 1,
    ExitCode.INPUT_ERROR: 2,
    ExitCode.INTERNAL_ERROR: 3,
}


def worst_exit_code(codes: Iterable[ExitCode]) -> ExitCode:
    """The exit code of several: input error over gate failure over pass, in any order."""
    return max(codes, key=_PRECEDENCE.__getitem__, default=ExitCode.OK)


def parse_fail_on(text: str) -> frozenset[FailOn]:
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["never"]:
        return frozenset()
    known = {f.value: f for f in FailOn}
    wrong = [w for w in words if w not in known]
    if wrong or not words:
        raise UsageError(
            f"--fail-on {text!r}: use regression, missing, both comma-separated, or never"
        )
    return frozenset(known[w] for w in words)
