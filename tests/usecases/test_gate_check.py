"""`perfgate check`'s use case pieces that the click layer no longer holds."""

from __future__ import annotations

from pathlib import Path

from perfgate.common.errors import ExitCode
from perfgate.judge.policy import FailOn
from perfgate.usecases.check_command import policy_note
from perfgate.usecases.outputs import ReportOutputs, without_output
from perfgate.verdicts.model import Report


def test_the_policy_note_is_said_only_when_fail_on_changed_the_exit_code() -> None:
    report = Report()
    assert report.exit_code is ExitCode.OK
    assert policy_note(report, ExitCode.OK, frozenset({FailOn.REGRESSION})) is None
    note = policy_note(report, ExitCode.GATE_FAILED, frozenset())
    assert note is not None and "passed" in note and "never" in note


def test_an_output_a_problem_is_about_is_dropped_and_no_other() -> None:
    outputs = ReportOutputs(junit="in.csv", json="out.json", markdown="in.csv")
    dropped = without_output(outputs, "in.csv")
    assert (dropped.junit, dropped.markdown, dropped.json) == (None, None, "out.json")
    assert without_output(outputs, None) is outputs


def test_a_problem_whose_report_cannot_be_written_either_says_both(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from perfgate.cli import main
    from tests.conftest import ROOT

    # Appending the step summary fails: its folder is a file (a folder or a FIFO as the
    # summary itself is skipped with a warning, tests/hostile/test_hostile.py).
    (tmp_path / "a-file").write_text("")
    summary = tmp_path / "a-file" / "summary"
    missing = tmp_path / "no-such-capture.csv"
    zoo = str(ROOT / "baselines" / "h100" / "zoo.yaml")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": ""}
    result = CliRunner().invoke(main, ["check", "-b", zoo, "-c", str(missing)], env=env)
    errors = [line for line in result.stderr.splitlines() if line.startswith("perfgate: error:")]
    assert result.exit_code == int(ExitCode.INPUT_ERROR)
    assert len(errors) == 2
    assert str(missing) in errors[0]
    assert "step summary" in errors[1]
