"""Tests written for the survivors of the mutation run over `perfgate check`'s exit paths
(docs/mutation.md, "Use cases and report exit paths"): the exit code under --fail-on, which
reports are written, replaced or removed after a problem or a bug, GitHub's step outputs and
annotations. Each runs the use case in process on the zoo's real captures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from perfgate.common.errors import ExitCode, PerfgateError, UsageError
from perfgate.judge.policy import FailOn
from perfgate.judge.states import KernelState
from perfgate.usecases import check_command, outputs
from perfgate.usecases.check import CheckRequest
from perfgate.usecases.check_command import (
    CheckCommand,
    ReportPaths,
    _check_report_paths,
    problem_stdout,
    run_check_command,
    stdout_reporter,
)
from perfgate.usecases.choices import Format
from perfgate.usecases.outputs import (
    GitHubEnvironment,
    ReportOutputs,
    github_commands,
    remove_report,
    replace_stale_reports,
    report_problem,
    safe_outputs,
    step_outputs,
    write_reports,
)
from perfgate.verdicts.model import CheckResult, KernelVerdict, Report
from tests.conftest import ROOT, data

ZOO = str(ROOT / "baselines" / "h100" / "zoo.yaml")
BAD = str(data("zoo-bad-short-run1.csv"))  # 8 regressed kernels and the program's time
GOOD = str(data("zoo-good-short-run2.csv"))
EVERYTHING = frozenset(FailOn)
STALE = "an earlier run's report\n"


def _gh(tmp_path: Path, *, active: bool = True) -> GitHubEnvironment:
    return GitHubEnvironment(
        active=active,
        step_summary=str(tmp_path / "summary.md"),
        output=str(tmp_path / "output.txt"),
        workspace=str(ROOT),
    )


def _command(capture: str = BAD, **kwargs: Any) -> CheckCommand:
    policy = kwargs.pop("policy", EVERYTHING)
    return CheckCommand(CheckRequest((ZOO,), (capture,)), policy, **kwargs)


def _step_values(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


# ---------------------------------------------------------------- the exit code under --fail-on


def test_fail_on_never_exits_0_on_a_regression_and_says_so_and_the_step_outputs_agree(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    gh = _gh(tmp_path)
    outcome = run_check_command(_command(policy=frozenset(), github=True), gh, said.append)
    # warn-only: the gate failed, the build does not
    assert outcome.exit_code is ExitCode.OK
    assert outcome.policy_note is not None and "never" in outcome.policy_note
    values = _step_values(Path(gh.output or ""))
    assert values["exit-code"] == "0"  # what perfgate exits with, after --fail-on
    assert values["verdict"] == "fail"  # the check's own verdict, before it
    annotations = "".join(said)
    assert "::warning" in annotations and "::error" not in annotations


def test_fail_on_regression_fails_on_a_regression_with_no_note_and_error_annotations(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    gh = _gh(tmp_path)
    outcome = run_check_command(_command(github=True), gh, said.append)
    assert outcome.exit_code is ExitCode.GATE_FAILED
    assert outcome.policy_note is None
    assert _step_values(Path(gh.output or ""))["exit-code"] == "1"
    assert "::error" in "".join(said)


def test_a_quiet_check_says_no_policy_note() -> None:
    gh = GitHubEnvironment(active=False, step_summary=None, output=None, workspace=str(ROOT))
    outcome = run_check_command(_command(policy=frozenset(), quiet=True), gh, lambda _: None)
    assert outcome.exit_code is ExitCode.OK and outcome.policy_note is None
    assert outcome.stdout.count("\n") == 1


def test_with_format_github_the_annotations_are_stdout_and_not_stderr_too(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    outcome = run_check_command(
        _command(github=True, fmt=Format.GITHUB), _gh(tmp_path), said.append
    )
    assert "::error" in outcome.stdout
    assert "::" not in "".join(said)


# ---------------------------------------------------------------- GitHub on or off


@pytest.mark.parametrize(
    ("github", "active", "written"),
    [(None, True, True), (None, False, False), (False, True, False), (True, False, True)],
)
def test_the_step_files_follow_github_actions_unless_told(
    tmp_path: Path, github: bool | None, active: bool, written: bool
) -> None:
    said: list[str] = []
    gh = _gh(tmp_path, active=active)
    run_check_command(_command(GOOD, github=github), gh, said.append)
    assert Path(gh.output or "").exists() is written
    assert Path(gh.step_summary or "").exists() is written


# ---------------------------------------------------------------- reports after a bug or a problem


def _stale_reports(tmp_path: Path) -> ReportPaths:
    paths = ReportPaths(
        junit=str(tmp_path / "r.xml"),
        markdown=str(tmp_path / "r.md"),
        json=str(tmp_path / "r.json"),
        pr_comment=str(tmp_path / "c.md"),
    )
    for p in (paths.junit, paths.markdown, paths.json, paths.pr_comment):
        Path(p or "").write_text(STALE)
    return paths


def _bug(_: CheckRequest) -> Report:
    raise RuntimeError("a bug")


def test_after_a_bug_each_earlier_report_says_so_and_the_step_summary_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check_command, "run_check", _bug)
    paths = _stale_reports(tmp_path)
    gh = _gh(tmp_path)
    Path(gh.step_summary or "").write_text("an earlier step's summary\n")
    with pytest.raises(RuntimeError):
        run_check_command(_command(reports=paths, github=True), gh, lambda _: None)
    for p in (paths.junit, paths.markdown, paths.json, paths.pr_comment):
        text = Path(p or "").read_text()
        assert STALE not in text and "internal error: RuntimeError: a bug" in text
    assert Path(gh.step_summary or "").read_text() == "an earlier step's summary\n"


def test_after_a_bug_that_the_reporters_share_no_report_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("the reporters fail")

    monkeypatch.setattr(check_command, "run_check", _bug)
    monkeypatch.setattr(outputs, "write_reports", broken)
    paths = _stale_reports(tmp_path)
    with pytest.raises(RuntimeError):
        run_check_command(_command(reports=paths), _gh(tmp_path, active=False), lambda _: None)
    assert not [
        p
        for p in (paths.junit, paths.markdown, paths.json, paths.pr_comment)
        if Path(p or "").exists()
    ]


def test_a_report_that_cannot_be_written_is_removed_and_the_others_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _stale_reports(tmp_path)

    def disk_full(report: Report, out: ReportOutputs, trends: object = ()) -> None:
        Path(out.json or "").write_text('{"cut sh')  # this run's, cut short
        raise UsageError("disk full", out.json)

    monkeypatch.setattr(check_command, "write_reports", disk_full)
    with pytest.raises(UsageError):
        run_check_command(_command(reports=paths), _gh(tmp_path, active=False), lambda _: None)
    assert not Path(paths.json or "").exists()
    assert "disk full" in Path(paths.junit or "").read_text()


def test_a_problem_report_is_never_written_over_any_input(tmp_path: Path) -> None:
    baseline = tmp_path / "zoo.yaml"
    capture = tmp_path / "zoo.csv"
    shutil.copy(ZOO, baseline)
    shutil.copy(BAD, capture)
    before = (baseline.read_bytes(), capture.read_bytes())
    # --junit is the capture (the problem names it); --json is the baseline (no other problem
    # names it: only safe_outputs keeps the problem's report off it).
    paths = ReportPaths(junit=str(capture), json=str(baseline), markdown=str(tmp_path / "r.md"))
    command = CheckCommand(CheckRequest((str(baseline),), (str(capture),)), EVERYTHING, paths)
    with pytest.raises(UsageError):
        run_check_command(command, _gh(tmp_path, active=False), lambda _: None)
    assert (baseline.read_bytes(), capture.read_bytes()) == before
    assert "--junit" in Path(paths.markdown or "").read_text()


def test_remove_report_removes_report_files_never_github_step_files(tmp_path: Path) -> None:
    files = {name: tmp_path / name for name in ("r.json", "summary", "output")}
    for f in files.values():
        f.write_text("kept?\n")
    out = ReportOutputs(
        json=str(files["r.json"]),
        step_summary=str(files["summary"]),
        github_output=str(files["output"]),
    )
    remove_report(out, out.step_summary)
    remove_report(out, out.github_output)
    remove_report(out, None)
    assert all(f.exists() for f in files.values())
    remove_report(out, out.json)
    assert not files["r.json"].exists()


def test_a_problems_step_outputs_carry_its_exit_code(tmp_path: Path) -> None:
    output = tmp_path / "output"
    problem = Report(problems=("unusable",))
    report_problem(problem, ReportOutputs(github_output=str(output)), UsageError("unusable"))
    values = _step_values(output)
    assert values["exit-code"] == str(int(ExitCode.INPUT_ERROR))
    assert values["verdict"] == "error" and values["problems"] == "1"


def test_a_problems_report_that_cannot_be_written_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    junit, json_path = tmp_path / "r.xml", tmp_path / "r.json"
    json_path.write_text(STALE)
    from perfgate.common.fileio import write_text_atomic as real

    def full(path: str | Path, text: str) -> None:
        if str(path) == str(json_path):
            raise UsageError("disk full", str(path))
        real(path, text)

    monkeypatch.setattr(outputs, "write_text_atomic", full)
    out = ReportOutputs(junit=str(junit), json=str(json_path))
    with pytest.raises(PerfgateError) as raised:
        report_problem(Report(problems=("unusable",)), out, UsageError("unusable"))
    assert not json_path.exists()
    assert "unusable" in junit.read_text() and "disk full" in junit.read_text()
    assert raised.value.lines()[-1].endswith("disk full")


def test_safe_outputs_drops_every_output_that_is_an_input_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    capture = tmp_path / "c.csv"
    shutil.copy(BAD, capture)
    out = ReportOutputs(
        junit=str(capture),
        json=str(tmp_path / "r.json"),
        step_summary=str(capture),
        github_output=str(tmp_path / "o"),
    )
    safe = safe_outputs(out, (str(capture),))
    assert (safe.junit, safe.step_summary) == (None, None)
    assert (safe.json, safe.github_output) == (out.json, out.github_output)


# ---------------------------------------------------------------- the step outputs and charts


def test_the_step_outputs_count_the_baselined_kernels_and_name_every_report(
    tmp_path: Path,
) -> None:
    from perfgate.usecases.check import run_check

    report = run_check(CheckRequest((ZOO,), (BAD,)))
    counts = report.counts()
    out = ReportOutputs(json="a\nb.json", junit=str(tmp_path / "j.xml"))
    values = _step_values_text(step_outputs(report, out, ExitCode.OK))
    baselined = len(report.verdicts) - counts[KernelState.NEW]
    assert values["kernels"] == str(baselined)
    assert values["regressed"] == str(counts[KernelState.REGRESSED])
    assert values["json-path"] == "a b.json"  # one line
    assert values["junit-path"] == out.junit and values["markdown-path"] == ""
    assert values["exit-code"] == "0" and values["verdict"] == "fail"


def _step_values_text(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_annotations_are_warnings_under_fail_on_never() -> None:
    from perfgate.usecases.check import run_check

    report = run_check(CheckRequest((ZOO,), (BAD,)))
    never = github_commands(report, frozenset(), str(ROOT))
    assert "::warning" in never and "::error" not in never
    assert "::error" in github_commands(report, EVERYTHING, str(ROOT))


def test_an_earlier_runs_chart_beside_the_markdown_is_removed(tmp_path: Path) -> None:
    from perfgate.reports.svg import chart_mark

    markdown = tmp_path / "r.md"
    earlier = tmp_path / "r.7.gone_kernel.svg"
    earlier.write_text(f"<svg>{chart_mark(markdown.name)}</svg>\n")
    write_reports(Report(), ReportOutputs(markdown=str(markdown)))
    assert markdown.exists() and not earlier.exists()


def test_a_bug_leaves_the_step_summary_as_it_was(tmp_path: Path) -> None:
    summary = tmp_path / "summary"
    summary.write_text("earlier steps\n")
    json_path = tmp_path / "r.json"
    replace_stale_reports(
        ReportOutputs(json=str(json_path), step_summary=str(summary)), RuntimeError("x")
    )
    assert summary.read_text() == "earlier steps\n"
    assert json.loads(json_path.read_text())["problems"] == ["internal error: RuntimeError: x"]


# ---------------------------------------------------------------- refused before judging


def test_history_and_drift_options_are_refused_without_what_they_need(tmp_path: Path) -> None:
    request = CheckRequest((ZOO,), (GOOD,))
    history = str(tmp_path / "h.sqlite")
    with pytest.raises(UsageError, match="--drift"):
        _check_report_paths(request, ReportOutputs(), None, drift=True)
    with pytest.raises(UsageError, match="give --markdown"):
        _check_report_paths(request, ReportOutputs(), history)
    _check_report_paths(request, ReportOutputs(markdown=str(tmp_path / "r.md")), history)
    _check_report_paths(request, ReportOutputs(), history, drift=True)
    _check_report_paths(request, ReportOutputs())


def test_the_markdown_is_refused_only_where_its_charts_could_replace_an_input(
    tmp_path: Path,
) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    markdown = str(here / "r.md")

    def refused(name: Path) -> bool:
        request = CheckRequest((ZOO,), (str(name),))
        try:
            _check_report_paths(request, ReportOutputs(markdown=markdown))
        except UsageError as exc:
            return "stall charts" in exc.message
        return False

    assert refused(here / "r.1.k.svg")
    assert not refused(there / "r.1.k.svg")  # another folder
    assert not refused(here / "r.1.k.csv")  # not a chart's name
    assert not refused(here / "s.1.k.svg")  # another markdown's
    assert not refused(here / "rr.1.k.svg")


# ---------------------------------------------------------------- stdout by format


def test_each_format_is_its_own_reporter_on_stdout() -> None:
    from perfgate.usecases.check import run_check

    report = run_check(CheckRequest((ZOO,), (BAD,)))

    def shown(fmt: Format, **kwargs: Any) -> str:
        return stdout_reporter(_command(fmt=fmt, **kwargs), str(ROOT))(report)

    text = shown(Format.TEXT)
    assert text.startswith("perfgate check FAILED") and text.count("\n") > 1
    assert shown(Format.TEXT, quiet=True) == text.split("\n", 1)[0] + "\n"
    assert "\x1b[" in shown(Format.TEXT, colour=True) and "\x1b[" not in text
    assert shown(Format.JUNIT).startswith("<?xml")
    assert json.loads(shown(Format.JSON))["exit_code"] == 1
    assert shown(Format.GITHUB).startswith("::")
    outputs_by_format = {f: shown(f) for f in Format}
    assert len(set(outputs_by_format.values())) == len(Format)  # each its own


@pytest.mark.parametrize("fmt", list(Format))
def test_a_stopped_check_shows_an_error_document_in_the_machine_formats(fmt: Format) -> None:
    shown = problem_stdout(fmt, ("unusable",), ExitCode.INPUT_ERROR)
    if fmt in (Format.JSON, Format.JUNIT, Format.GITHUB):
        assert shown is not None and "unusable" in shown
    else:
        assert shown is None
    if fmt is Format.JSON:
        document = json.loads(shown or "")
        assert (document["status"], document["exit_code"]) == ("error", 2)
    if fmt is Format.JUNIT:
        assert (shown or "").startswith("<?xml")
    if fmt is Format.GITHUB:
        assert (shown or "").startswith("::error")


def test_a_cut_pr_comment_points_to_the_full_report_whichever_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perfgate.reports.markdown import PR_COMMENT_BUDGET

    # More kernel rows than the comment's budget holds: it is cut and says where the rest is.
    many = tuple(
        KernelVerdict(f"kernel_{i:05d}", f"kernel_{i:05d}", KernelState.REGRESSED)
        for i in range(PR_COMMENT_BUDGET // 50)
    )
    report = Report(results=(CheckResult("b.yaml", ("c.csv",), many),))
    monkeypatch.chdir(tmp_path)
    for out in (
        ReportOutputs(pr_comment="comment.md", markdown="fullmarkdown"),
        ReportOutputs(pr_comment="comment.md", json="fulljson"),
        ReportOutputs(pr_comment="comment.md", junit="fulljunit"),
    ):
        write_reports(report, out)
        pointer = Path("comment.md").read_text().split("the full report is", 1)[1]
        assert str(out.markdown or out.json or out.junit) in pointer


def test_the_trend_charts_are_numbered_from_1_when_no_stall_chart_was_drawn(
    tmp_path: Path,
) -> None:
    from perfgate.history.trends import Trend
    from tests.history.test_history_trends import _series

    markdown = tmp_path / "r.md"
    series = _series([10.0, 11.0, 30.0], ["pass", "pass", "regressed"])
    trend = Trend("b.yaml", "gemm_kernel", "duration", series)
    write_reports(Report(), ReportOutputs(markdown=str(markdown)), [trend])
    assert [p.name for p in tmp_path.glob("*.svg")] == ["r.1.gemm_kernel.duration.svg"]
