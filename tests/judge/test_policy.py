"""judge.policy: the status table, one row per state of what it means under each --fail-on
policy, whether it is diagnosed or quiet, and its words, which every writer reads."""

from __future__ import annotations

import enum
import importlib
import importlib.util
import itertools
from unittest import mock

import pytest

from perfgate.common.errors import ExitCode, UsageError
from perfgate.judge import comparison, policy, states
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.policy import (
    FailOn,
    Meaning,
    check_exit_code,
    kernel_exit_code,
    kernel_state,
    meaning,
    worst_exit_code,
)
from perfgate.judge.states import KernelState
from perfgate.reports import delta, github, json_report, markdown, text
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict, Report

POLICIES = [frozenset(s) for n in range(3) for s in itertools.combinations(FailOn, n)]


def test_every_state_has_a_row() -> None:
    assert set(policy.STATUS) == set(KernelState)
    assert sorted(policy.COUNTED, key=list(KernelState).index) == list(KernelState)
    assert set(policy.COMPARISON_STATUS) == set(State)
    assert set(policy.CHECK_STATUS) == set(policy.CheckState)
    assert set(policy.EXIT_WORDS) == set(ExitCode)


@pytest.mark.parametrize(("module", "name"), [(states, "KernelState"), (comparison, "State")])
def test_a_state_without_a_row_fails_at_import(module: object, name: str) -> None:
    # A new state nobody decided about cannot fall through to "passes" in some reporter.
    old = getattr(module, name)
    grown = enum.Enum(name, [(s.name, s.value) for s in old] + [("LATE", "late")])  # type: ignore[misc]
    # A copy of the module, imported beside the real one, which stays as it is.
    spec = importlib.util.spec_from_file_location("policy_copy", policy.__file__)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    with mock.patch.object(module, name, grown), pytest.raises(AssertionError, match="LATE"):
        spec.loader.exec_module(copy)


def _ladder(found: set[State]) -> KernelState:
    """kernel_state as it was written before the table: an if-ladder, worst first."""
    for comp, kernel in (
        (State.ERROR, KernelState.ERROR),
        (State.REGRESSED, KernelState.REGRESSED),
        (State.UNJUDGED, KernelState.UNJUDGED),
        (State.MISSING_METRIC, KernelState.INCOMPLETE),
        (State.IMPROVED, KernelState.IMPROVED),
    ):
        if comp in found:
            return kernel
    return KernelState.SKIPPED if found and found <= {State.SKIPPED} else KernelState.PASS


def test_a_kernels_state_follows_the_comparison_rows_for_every_mix() -> None:
    for n in range(len(State) + 1):
        for found in itertools.combinations(State, n):
            comps = [Comparison("k", f"m{i}", s) for i, s in enumerate(found)]
            assert kernel_state(comps) is _ladder(set(found)), found
            assert kernel_state(comps + comps) is _ladder(set(found)), found


def test_which_states_are_diagnosed_and_which_shout() -> None:
    # The diagnosis capture: what the gate found wrong with a kernel it measured.
    diagnosed = {s for s in KernelState if policy.diagnosed(s)}
    assert diagnosed == {KernelState.REGRESSED, KernelState.INCOMPLETE, KernelState.ERROR}
    # A kernel line shouts (upper case, details without -v) exactly where it needs attention.
    calm = {s for s in KernelState if not policy.loud(s)}
    assert calm == {KernelState.PASS, KernelState.IMPROVED, KernelState.NEW, KernelState.SKIPPED}


_K = KernelState


@pytest.mark.parametrize(
    ("kernels", "programs", "problems", "never", "default"),
    [
        ([], [], True, 2, 2),  # input problems: never relaxed
        ([_K.SKIPPED], [], False, 2, 2),  # nothing judged (another architecture)
        ([_K.SKIPPED, _K.NEW], [], False, 2, 2),  # a new kernel judges nothing
        ([_K.SKIPPED, _K.PASS], [], False, 0, 0),
        ([_K.NEW], [], False, 0, 0),  # nothing baselined: nothing skipped either
        ([], [], False, 0, 0),
        ([_K.PASS], [_K.REGRESSED], False, 0, 1),  # the program fails like a kernel
        ([_K.REGRESSED, _K.UNJUDGED], [], False, 2, 2),
    ],
)
def test_a_checks_exit_code(
    kernels: list[KernelState],
    programs: list[KernelState],
    problems: bool,
    never: int,
    default: int,
) -> None:
    assert int(check_exit_code(kernels, programs, problems, frozenset())) == never
    assert int(check_exit_code(kernels, programs, problems)) == default
    results = (CheckResult("b.yaml", (), tuple(_verdict(f"k{i}", s) for i, s in enumerate(kernels)),
                           program=ProgramVerdict(programs[0]) if programs else None),)  # fmt: skip
    report = Report(results, problems=("bad input",) if problems else ())
    assert int(report.exit_code_under(frozenset())) == never
    assert int(report.exit_code) == default


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


def _verdict(kernel: str, state: KernelState, comps: tuple[Comparison, ...] = ()) -> KernelVerdict:
    return KernelVerdict(kernel=kernel, name=kernel, state=state, comparisons=comps)


def test_every_writer_takes_its_words_from_the_table() -> None:
    # Other words in the table: every writer says them, none says the old ones.
    worse = Comparison("k", "duration", State.REGRESSED, 1000.0, 2000.0, "ns", 1000.0, 1.0, "+15%")
    program = ProgramVerdict(KernelState.REGRESSED, 1000.0, 2000.0, (2000.0,), 0.02)
    result = CheckResult(
        "b.yaml", ("c.csv",), (_verdict("k", _K.REGRESSED, (worse,)),), program=program
    )
    second = CheckResult("c.yaml", ("c.csv",), (_verdict("p", _K.PASS),))
    report = Report((result, second))
    rows = {
        **policy.STATUS,
        _K.REGRESSED: policy.STATUS[_K.REGRESSED]._replace(
            counted="slowed", verdict="slower", icon="(snail)"
        ),
        _K.PASS: policy.STATUS[_K.PASS]._replace(counted="fine"),
    }
    metric = {**policy.COMPARISON_STATUS}
    metric[State.REGRESSED] = metric[State.REGRESSED]._replace(word="worse")
    exits = {
        **policy.EXIT_WORDS,
        ExitCode.GATE_FAILED: policy.ExitWords("BLOCKED", "blocked", "block"),
    }
    with (
        mock.patch.dict(policy.STATUS, rows),
        mock.patch.dict(policy.COMPARISON_STATUS, metric),
        mock.patch.dict(policy.EXIT_WORDS, exits),
    ):
        said = text.render(report)
        assert said.startswith(
            "perfgate check BLOCKED: 1 slowed, 1 fine (2 baselined kernels, 2 baselines)"
        )
        assert "  SLOWER      k" in said  # a loud state, in upper case
        assert "b.yaml: 1 slowed\n" in said and "c.yaml: 1 fine\n" in said  # per baseline
        assert "program GPU time 1.0 us -> 2.0 us (+100.0%, bound 2.0%: slower;" in said
        md = markdown.render(report)
        assert "(snail) slower" in md and "| worse |" in md and "regressed" not in md
        gh = github.render(report)
        assert "title=perfgate%3A k slower::" in gh
        assert "title=perfgate%3A program GPU time slower::" in gh
        assert "  worse" in delta.render(report) and "| worse |" in delta.render_markdown(report)
        assert json_report.to_dict(report)["status"] == "blocked"
    # The table's own words, for comparison.
    assert text.render(report).startswith("perfgate check FAILED: 1 regressed, 1 passed")
