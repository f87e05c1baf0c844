"""Tests written for the survivors of the mutation run over every report's status line and the
JSON report's status and exit code (docs/mutation.md, "Use cases and report exit paths").
Expected words come from the docstrings' examples and the documented exit codes, never from
the output under test."""

from __future__ import annotations

import json

import pytest

from perfgate.causes.model import CauseKind, RootCause
from perfgate.common.errors import ExitCode
from perfgate.judge.states import KernelState
from perfgate.reports import json_report
from perfgate.reports.summary import program_text, status_line
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict, Report

R = KernelState.REGRESSED


def _verdict(kernel: str, state: KernelState, causes: tuple[RootCause, ...] = ()) -> KernelVerdict:
    return KernelVerdict(kernel, kernel, state, causes=causes)


def _cause(kind: CauseKind) -> RootCause:
    return RootCause("m", kind, "t", "d", "l")


def _report(*verdicts: KernelVerdict, program: ProgramVerdict | None = None) -> Report:
    return Report(results=(CheckResult("b.yaml", ("c.csv",), verdicts, program=program),))


# ---------------------------------------------------------------- the program's words


@pytest.mark.parametrize(
    ("state", "words"),
    [
        (KernelState.UNJUDGED, "program GPU time NOT JUDGED: why"),
        (KernelState.INCOMPLETE, "program GPU time incomplete: why"),
        (KernelState.SKIPPED, "program GPU time not gated: why"),
    ],
)
def test_a_program_time_not_judged_says_why(state: KernelState, words: str) -> None:
    assert program_text(ProgramVerdict(state, 1000.0, 2000.0, reason="why")) == words


def test_a_program_time_without_a_current_total_is_not_gated() -> None:
    text = program_text(ProgramVerdict(KernelState.PASS, 1000.0, None, reason="why"))
    assert text == "program GPU time not gated: why"


def test_a_judged_program_time_reads_as_the_docstring_says() -> None:
    # The docstring's example: 168.2 us -> 173.4 us, +3.1%, bound 2.0%, regressed.
    regressed = ProgramVerdict(R, 168_200.0, 173_400.0, bound=0.02, new_time=1500.0,
                               missing_time=2500.0)  # fmt: skip
    assert program_text(regressed) == (
        "program GPU time 168.2 us -> 173.4 us (+3.1%, bound 2.0%: regressed; new kernels "
        "1.5 us, missing 2.5 us)"
    )
    two = ProgramVerdict(R, 168_200.0, 173_400.0, bound=0.02, floor_runs=2)
    assert "(+3.1%, bound 2.0% (two runs): regressed;" in program_text(two)
    four = ProgramVerdict(R, 168_200.0, 173_400.0, bound=0.015, floor_runs=4)
    assert "(+3.1%, bound 1.5% (four runs): regressed;" in program_text(four)
    unbounded = ProgramVerdict(R, 168_200.0, 173_400.0)
    assert "(+3.1%, regressed;" in program_text(unbounded) and "bound" not in program_text(
        unbounded
    )
    unknown = ProgramVerdict(KernelState.PASS, None, 173_400.0, bound=0.02)
    assert program_text(unknown).startswith("program GPU time ? -> 173.4 us (bound 2.0%: ")


# ---------------------------------------------------------------- the status line


def test_the_status_line_of_a_stopped_check_counts_its_other_problems() -> None:
    one = status_line(Report(problems=("p1",)))
    assert one == "perfgate check ERROR: could not check: p1"
    assert status_line(Report(problems=("p1", "p2"))).endswith(": p1 (and 1 more problem)")
    assert status_line(Report(problems=("p1", "p2", "p3"))).endswith(" (and 2 more problems)")


def test_the_status_line_counts_baselined_kernels_and_root_causes_in_words() -> None:
    line = status_line(
        _report(
            _verdict("a", R, (_cause(CauseKind.REGRESSION), _cause(CauseKind.TRADE_OFF))),
            _verdict("b", R, (_cause(CauseKind.REGRESSION),)),
            _verdict("c", KernelState.PASS),
            _verdict("d", KernelState.NEW),
        )
    )
    assert line.startswith(
        "perfgate check FAILED: 2 regressed with 2 root causes and 1 trade-off, "
    )
    assert line.endswith(" (3 baselined kernels)")  # the new kernel is no baselined one
    one = status_line(_report(_verdict("a", R, (_cause(CauseKind.REGRESSION),))))
    assert one == "perfgate check FAILED: 1 regressed with 1 root cause (1 baselined kernel)"
    assert status_line(_report(_verdict("a", R))) == (
        "perfgate check FAILED: 1 regressed (1 baselined kernel)"
    )
    assert (
        status_line(Report()) == "perfgate check PASSED: nothing to compare (0 baselined kernels)"
    )


def test_the_status_line_names_the_baselines_only_when_several() -> None:
    result = CheckResult("b.yaml", ("c.csv",), (_verdict("a", KernelState.PASS),))
    assert status_line(Report(results=(result,))).endswith("(1 baselined kernel)")
    two = Report(results=(result, result))
    assert status_line(two).endswith("(2 baselined kernels, 2 baselines)")


def test_the_status_line_shows_a_judged_program_time_and_leaves_a_skipped_one_out() -> None:
    judged = ProgramVerdict(R, 168_200.0, 173_400.0, bound=0.02)
    line = status_line(_report(_verdict("a", KernelState.PASS), program=judged))
    assert line.endswith(f"(1 baselined kernel); {program_text(judged)}")
    assert "FAILED" in line  # the program's regression fails the check
    for state in (KernelState.SKIPPED, KernelState.UNJUDGED):
        left = ProgramVerdict(state, reason="why")
        assert "program GPU time" not in status_line(_report(_verdict("a", KernelState.PASS),
                                                             program=left))  # fmt: skip


# ---------------------------------------------------------------- the JSON's status and exit code


@pytest.mark.parametrize(
    ("report", "status", "code"),
    [
        (_report(_verdict("a", KernelState.PASS)), "passed", ExitCode.OK),
        (_report(_verdict("a", R)), "failed", ExitCode.GATE_FAILED),
        (Report(problems=("p",)), "error", ExitCode.INPUT_ERROR),
    ],
)
def test_the_json_status_and_exit_code_are_the_checks(
    report: Report, status: str, code: ExitCode
) -> None:
    document = json.loads(json_report.render(report))
    assert (document["status"], document["exit_code"]) == (status, int(code))
