"""judge.policy: the one table of what each kernel state means under each --fail-on policy."""

from __future__ import annotations

import enum
import importlib
import importlib.util
import itertools
from unittest import mock

import pytest

from perfgate.common.errors import ExitCode, UsageError
from perfgate.judge import policy, states
from perfgate.judge.policy import FailOn, Meaning, kernel_exit_code, meaning, worst_exit_code
from perfgate.judge.states import KernelState

POLICIES = [frozenset(s) for n in range(3) for s in itertools.combinations(FailOn, n)]


def test_every_state_has_an_entry() -> None:
    assert set(policy.TABLE) == set(KernelState)


def test_a_state_without_an_entry_fails_at_import() -> None:
    # A new state nobody decided about cannot fall through to "passes" in some reporter.
    grown = enum.Enum("KernelState", [(s.name, s.value) for s in KernelState] + [("LATE", "late")])  # type: ignore[misc]
    # A copy of the module, imported beside the real one, which stays as it is.
    spec = importlib.util.spec_from_file_location("policy_copy", policy.__file__)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    with (
        mock.patch.object(states, "KernelState", grown),
        pytest.raises(AssertionError, match="LATE"),
    ):
        spec.loader.exec_module(copy)


@pytest.mark.parametrize(
    "fail_on", POLICIES, ids=lambda p: ",".join(sorted(f.value for f in p)) or "never"
)
def test_what_each_state_means_under_each_policy(fail_on: frozenset[FailOn]) -> None:
    regression = Meaning.FAILS if FailOn.REGRESSION in fail_on else Meaning.PASSES
    missing = Meaning.FAILS if FailOn.MISSING in fail_on else Meaning.PASSES
    assert {s: meaning(s, fail_on) for s in KernelState} == {
        KernelState.PASS: Meaning.PASSES, KernelState.IMPROVED: Meaning.PASSES,
        KernelState.NEW: Meaning.PASSES, KernelState.SKIPPED: Meaning.PASSES,
        KernelState.REGRESSED: regression, KernelState.MISSING: missing,
        KernelState.INCOMPLETE: missing, KernelState.ERROR: Meaning.INPUT_ERROR,
        KernelState.UNJUDGED: Meaning.INPUT_ERROR,
    }  # fmt: skip
    # Unusable input is never relaxed by a policy, nor is a gate not judged (only a waiver
    # by name lets that pass: perfgate.judge.skips).
    assert kernel_exit_code(KernelState.ERROR, fail_on) is ExitCode.INPUT_ERROR
    assert kernel_exit_code(KernelState.UNJUDGED, fail_on) is ExitCode.INPUT_ERROR


_RANK = [ExitCode.OK, ExitCode.GATE_FAILED, ExitCode.INPUT_ERROR]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_exit_code_precedence_in_every_order(size: int) -> None:
    for codes in itertools.product(_RANK, repeat=size):
        for order in itertools.permutations(codes):
            want = max(codes, key=_RANK.index)  # input error over gate failure over pass
            assert worst_exit_code(list(order)) is want, order
    assert worst_exit_code([]) is ExitCode.OK


def test_which_states_pass_quietly_and_which_accept_takes() -> None:
    assert set(policy.QUIET) == set(KernelState)
    # Listed for a reader: everything that fails, could not be judged, or improved.
    shown = {s for s in KernelState if not policy.passes_quietly(s)}
    assert shown == {
        KernelState.REGRESSED,
        KernelState.MISSING,
        KernelState.INCOMPLETE,
        KernelState.ERROR,
        KernelState.IMPROVED,
    }
    # accept takes what fails the build and has values to take: not an incomplete kernel.
    taken = {s for s in KernelState if policy.acceptable(s)}
    assert taken == {KernelState.REGRESSED, KernelState.MISSING}


def test_which_states_need_attention() -> None:
    # Attention: what fails the build under the default policy or could not be judged.
    need = {s for s in KernelState if policy.failing(s)}
    assert need == {
        KernelState.REGRESSED,
        KernelState.MISSING,
        KernelState.INCOMPLETE,
        KernelState.ERROR,
        KernelState.UNJUDGED,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("regression", {FailOn.REGRESSION}),
        ("missing", {FailOn.MISSING}),
        ("regression,missing", {FailOn.REGRESSION, FailOn.MISSING}),
        (" missing , regression ", {FailOn.REGRESSION, FailOn.MISSING}),
        ("never", set()),
    ],
)
def test_fail_on_words(text: str, expected: set[FailOn]) -> None:
    assert policy.parse_fail_on(text) == frozenset(expected)


@pytest.mark.parametrize("text", ["", "always", "regression,never", "regressions"])
def test_fail_on_refuses_other_words(text: str) -> None:
    with pytest.raises(UsageError, match="--fail-on"):
        policy.parse_fail_on(text)


def test_an_internal_error_outranks_an_input_error_in_either_order() -> None:
    pair = [ExitCode.INPUT_ERROR, ExitCode.INTERNAL_ERROR]
    assert worst_exit_code(pair) is ExitCode.INTERNAL_ERROR
    assert worst_exit_code(reversed(pair)) is ExitCode.INTERNAL_ERROR
