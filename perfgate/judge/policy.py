"""What each kernel state means for the build, under each `--fail-on` policy: one table that
the exit code, every reporter and the step outputs read, and the precedence of exit codes.

A state is in the table or the import fails (a test holds every KernelState to an entry), so
a new state cannot fall through to "passes" in one reporter and "fails" in another."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from perfgate.common.errors import ExitCode, UsageError
from perfgate.judge.comparison import State
from perfgate.judge.states import KernelState


class FailOn(enum.Enum):
    """What fails the build (`--fail-on`); an empty set is warn-only."""

    REGRESSION = "regression"
    MISSING = "missing"


class Meaning(enum.Enum):
    """What one kernel's state means for the build."""

    PASSES = "passes"
    FAILS = "fails"  # the gate failed: exit 1 under a policy that names the state's word
    INPUT_ERROR = "input error"  # the gate could not judge: exit 2 under every policy


DEFAULT_POLICY: frozenset[FailOn] = frozenset(FailOn)

# Each state: PASSES, INPUT_ERROR, or the --fail-on word under which it fails the build.
TABLE: dict[KernelState, Meaning | FailOn] = {
    KernelState.PASS: Meaning.PASSES,
    KernelState.IMPROVED: Meaning.PASSES,
    KernelState.NEW: Meaning.PASSES,
    # A check where every kernel is skipped fails as a whole (verdicts.model.Report).
    KernelState.SKIPPED: Meaning.PASSES,
    KernelState.REGRESSED: FailOn.REGRESSION,
    KernelState.MISSING: FailOn.MISSING,
    KernelState.INCOMPLETE: FailOn.MISSING,
    KernelState.ERROR: Meaning.INPUT_ERROR,
    # A gate not judged (perfgate.judge.skips) fails like input the gate could not judge,
    # under every policy: only a waiver by name lets it pass.
    KernelState.UNJUDGED: Meaning.INPUT_ERROR,
}


def _exhaustive(table: Mapping[Any, object], states: Iterable[Any], name: str) -> None:
    """Every state has its meaning: a state added later cannot pass by omission."""
    left_out = set(states) - set(table)
    if left_out:
        raise AssertionError(f"perfgate.judge.policy.{name} has no entry for {left_out}")


_exhaustive(TABLE, KernelState, "TABLE")


# What one comparison's state does to its kernel (perfgate.judge.states.kernel_state follows
# it): NOTED, an evidence metric beyond its bound alone, passes (exit 0) and is shown as a note.
COMPARISON_TABLE: dict[State, Meaning | FailOn] = {
    State.PASS: Meaning.PASSES,
    State.IMPROVED: Meaning.PASSES,
    State.NOTED: Meaning.PASSES,
    State.SKIPPED: Meaning.PASSES,
    State.UNJUDGED: Meaning.INPUT_ERROR,
    State.REGRESSED: FailOn.REGRESSION,
    State.MISSING_METRIC: FailOn.MISSING,
    State.ERROR: Meaning.INPUT_ERROR,
}
_exhaustive(COMPARISON_TABLE, State, "COMPARISON_TABLE")


def comparison_fails(state: State) -> bool:
    """Whether a comparison is listed among its kernel's failures (a regression, a metric the
    capture lacks, an error); a noted one is not."""
    return COMPARISON_TABLE[state] is not Meaning.PASSES


# Whether a reader is shown the state's kernels by default, or only their count: the states
# that pass quietly. The console report, the markdown summary and its details read this.
QUIET: dict[KernelState, bool] = {
    KernelState.PASS: True,
    KernelState.SKIPPED: True,
    KernelState.NEW: True,  # counted; one that replaced a baselined kernel is named in that line
    KernelState.IMPROVED: False,  # good news a reviewer should see, and may ratchet in
    KernelState.REGRESSED: False,
    KernelState.MISSING: False,
    KernelState.INCOMPLETE: False,
    KernelState.ERROR: False,
    # Counted on the status line, and explained once per reason under it (every kernel's
    # gates not judged for one reason read the same): -v lists the kernels.
    KernelState.UNJUDGED: True,
}
if set(QUIET) != set(KernelState):
    raise AssertionError(
        f"perfgate.judge.policy.QUIET has no entry for {set(KernelState) - set(QUIET)}"
    )


# Every writer's words for a kernel's state: (its count in the status line, its verdict).
WORDS: dict[KernelState, tuple[str, str]] = {
    KernelState.ERROR: ("errors", "error"),
    KernelState.REGRESSED: ("regressed", "regressed"),
    KernelState.UNJUDGED: ("not judged", "not judged"),
    KernelState.MISSING: ("missing", "missing"),
    KernelState.INCOMPLETE: ("incomplete", "incomplete"),
    KernelState.IMPROVED: ("improved", "improved"),
    KernelState.PASS: ("passed", "pass"),
    KernelState.SKIPPED: ("skipped", "skipped"),
    KernelState.NEW: ("new", "new"),
}
_exhaustive(WORDS, KernelState, "WORDS")
# A comparison's state in words.
COMPARISON_WORDS: dict[State, str] = {
    State.PASS: "pass",
    State.REGRESSED: "regressed",
    State.IMPROVED: "improved",
    State.NOTED: "noted",
    State.MISSING_METRIC: "missing metric",
    State.SKIPPED: "skipped",
    State.UNJUDGED: "not judged",
    State.ERROR: "error",
}
_exhaustive(COMPARISON_WORDS, State, "COMPARISON_WORDS")


def meaning(state: KernelState, policy: frozenset[FailOn] = DEFAULT_POLICY) -> Meaning:
    entry = TABLE[state]
    if isinstance(entry, Meaning):
        return entry
    return Meaning.FAILS if entry in policy else Meaning.PASSES


def passes_quietly(state: KernelState) -> bool:
    return QUIET[state]


def acceptable(state: KernelState) -> bool:
    """Whether `baseline accept` takes the state's kernels by default: those that fail the
    build and have values to take. An incomplete kernel lacks a gated metric in the capture,
    so there is nothing to accept until it is captured."""
    return meaning(state) is Meaning.FAILS and state is not KernelState.INCOMPLETE


def failing(state: KernelState) -> bool:
    """Whether the state needs attention by default: it fails the build, or could not be
    judged (reporters list these as failures, annotations and JUnit failures or errors)."""
    return meaning(state) is not Meaning.PASSES


_EXIT = {
    Meaning.PASSES: ExitCode.OK,
    Meaning.FAILS: ExitCode.GATE_FAILED,
    Meaning.INPUT_ERROR: ExitCode.INPUT_ERROR,
}


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


def kernel_exit_code(state: KernelState, policy: frozenset[FailOn] = DEFAULT_POLICY) -> ExitCode:
    return _EXIT[meaning(state, policy)]


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
