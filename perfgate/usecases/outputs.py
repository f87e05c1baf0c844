"""What a check leaves behind besides stdout: the report files (JUnit, markdown with its
charts, JSON, the pull-request comment), GitHub's step summary, step outputs and workflow
commands, and the clean-up that keeps an earlier run's report from claiming this run's result."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from perfgate.common.errors import (
    ExitCode,
    PerfgateError,
    UsageError,
)
from perfgate.common.fileio import (
    append_regular,
    check_outputs,
    remove_own_files,
    remove_stale,
    write_text_atomic,
)
from perfgate.judge.policy import EXIT_WORDS, FailOn
from perfgate.judge.states import KernelState
from perfgate.verdicts.model import Report


@dataclass(frozen=True)
class ReportOutputs:
    """Where `perfgate check` writes its reports; None: not written."""

    junit: str | None = None
    markdown: str | None = None
    json: str | None = None
    pr_comment: str | None = None
    step_summary: str | None = None  # GitHub's $GITHUB_STEP_SUMMARY, appended to
    github_output: str | None = None  # GitHub's $GITHUB_OUTPUT: verdict and counts, appended
    # Annotations and JUnit name baseline files relative to this directory (the repository
    # root: GITHUB_WORKSPACE, else the working directory); None: as the results name them.
    repository_root: str | None = None
    junit_locations: bool = True  # JUnit file/line attributes (not in junit-10.xsd)


def _pictures(report: Report, markdown_path: str) -> dict[str, str]:
    """Write a stall chart beside the markdown file for every regressed kernel with stall
    shares; return kernel id -> the file's name relative to the markdown."""
    from perfgate.reports import svg

    target = Path(markdown_path)
    names: dict[str, str] = {}
    for verdict in report.verdicts:
        if verdict.state is not KernelState.REGRESSED:
            continue
        for c in verdict.comparisons:
            if c.metric != "dominant_stall" or not (c.baseline_shares or c.current_shares):
                continue
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", verdict.kernel)[:60]
            name = f"{target.stem}.{len(names) + 1}.{safe}.svg"
            chart = svg.stall_chart(
                f"{verdict.kernel}: stall shares",
                c.baseline_shares,
                c.current_shares,
                report=target.name,
            )
            write_text_atomic(target.with_name(name), chart)
            names[verdict.kernel] = name
    return names


def _trend_pictures(
    trends: Sequence[Any], markdown_path: str, start: int
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Write each trend (perfgate.history.trends.Trend) beside the markdown file, numbered on
    from the stall charts and marked as they are; return (baseline, kernel) -> [(metric, the
    file's name)]."""
    from perfgate.history.svg import ChartSize, trend_chart
    from perfgate.history.trends import change_indexes, detected
    from perfgate.reports import svg

    target = Path(markdown_path)
    names: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for n, trend in enumerate(trends, start):
        safe = ".".join(
            re.sub(r"[^A-Za-z0-9_.-]+", "_", part)[:width]
            for part, width in ((trend.kernel, 60), (trend.metric, 30))
        )
        name = f"{target.stem}.{n}.{safe}.svg"
        chart = trend_chart(
            trend.series,
            title=f"{trend.metric} of {trend.kernel}",
            change_points=change_indexes(trend.series, detected),
            this_run=True,
            size=ChartSize(640, 240),
            mark=svg.chart_mark(target.name),
        )
        write_text_atomic(target.with_name(name), chart)
        names.setdefault((trend.baseline, trend.kernel), []).append((trend.metric, name))
    return names


def _remove_earlier_charts(markdown_path: str, names: Iterable[str]) -> None:
    """An earlier run's charts beside the markdown that this run did not write again would
    read as this run's: removed once the markdown that no longer names them is in place (so
    the markdown at that path never names a chart that is gone). Only perfgate's charts of
    this markdown file: its naming pattern and its mark (svg.chart_mark)."""
    from perfgate.reports import svg

    target = Path(markdown_path)
    own = re.compile(re.escape(target.stem) + r"\.[0-9]+\.[A-Za-z0-9_.-]+\.svg")
    remove_own_files(target.parent, own, names, svg.chart_mark(target.name))


def write_reports(report: Report, outputs: ReportOutputs, trends: Sequence[Any] = ()) -> None:
    """Write the reports asked for; `trends` (perfgate.history.trends.Trend, from --history)
    are drawn beside the markdown report."""
    from perfgate.reports import json_report, junit, markdown

    if outputs.junit:
        files = report_files(report, outputs.repository_root)
        text = junit.render(report, files, locations=outputs.junit_locations)
        write_text_atomic(outputs.junit, text)
    if outputs.json:
        write_text_atomic(outputs.json, json_report.render(report))
    if outputs.markdown:
        charts = _pictures(report, outputs.markdown)
        drawn = _trend_pictures(trends, outputs.markdown, len(charts) + 1)
        pictures = markdown.Pictures(svg=charts, trends=drawn)
        write_text_atomic(outputs.markdown, markdown.render(report, pictures))
        trend_files = [name for files in drawn.values() for _, name in files]
        _remove_earlier_charts(outputs.markdown, [*charts.values(), *trend_files])
    full = outputs.markdown or outputs.json or outputs.junit
    if outputs.pr_comment:
        text = markdown.render(
            report,
            budget=markdown.PR_COMMENT_BUDGET,
            full_report=full,
            marker=markdown.PR_COMMENT_MARKER,
        )
        write_text_atomic(outputs.pr_comment, text)
    if outputs.step_summary:
        text = markdown.render(report, budget=markdown.STEP_SUMMARY_BUDGET, full_report=full)
        _append(outputs.step_summary, text, "the step summary")


def write_step_outputs(report: Report, outputs: ReportOutputs, exit_code: ExitCode) -> None:
    if outputs.github_output:
        text = step_outputs(report, outputs, exit_code)
        _append(outputs.github_output, text, "the step outputs ($GITHUB_OUTPUT)")


def _append(path: str, text: str, what: str) -> None:
    # GitHub owns these files and collects what each step appends to them.
    # Not a regular file any more (replaced since the check began): skipped, never blocked on.
    # A failed append leaves the file as it was (append_regular), and the file is never
    # removed after (remove_report): earlier steps' text in it is not perfgate's.
    try:
        append_regular(path, text)
    except OSError as exc:
        raise UsageError(
            f"cannot append to {what}: {exc.strerror or exc} (left as it was)", path
        ) from exc


_REPORT_FILES = ("junit", "markdown", "json", "pr_comment")


def remove_report(outputs: ReportOutputs, path: str | None) -> None:
    """Remove `path` when it is one of the report files perfgate writes whole (an earlier
    run's, or this run's cut short), so it cannot claim a result; never GitHub's step files,
    which perfgate only appends to."""
    if path and path in {getattr(outputs, name) for name in _REPORT_FILES}:
        remove_stale(path)


def step_outputs(report: Report, outputs: ReportOutputs, exit_code: ExitCode) -> str:
    """`name=value` lines for $GITHUB_OUTPUT: the check's verdict (pass, fail, error), the exit
    code perfgate exits with (after --fail-on), kernel counts by state and the reports
    written. Every value is one line: numbers, words, and paths the user gave (a newline in
    one is replaced, so it cannot start another output)."""
    counts = report.counts()
    values: dict[str, str | int] = {
        "verdict": EXIT_WORDS[report.exit_code].output,
        "exit-code": int(exit_code),
        "kernels": sum(n for state, n in counts.items() if state is not KernelState.NEW),
    }
    for state, n in counts.items():
        values[state.value.replace(" ", "-")] = n
    values["problems"] = len(report.problems)
    for name in ("junit", "markdown", "json", "pr_comment"):
        values[f"{name.replace('_', '-')}-path"] = getattr(outputs, name) or ""
    return "".join(f"{k}={_one_line(str(v))}\n" for k, v in values.items())


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


@dataclass(frozen=True)
class GitHubEnvironment:
    """What GitHub Actions tells a step through its environment."""

    active: bool  # GITHUB_ACTIONS=true
    step_summary: str | None
    output: str | None
    workspace: str  # the repository root: GITHUB_WORKSPACE, else the working directory


def github_environment() -> GitHubEnvironment:
    env = os.environ
    return GitHubEnvironment(
        active=env.get("GITHUB_ACTIONS") == "true",
        step_summary=env.get("GITHUB_STEP_SUMMARY") or None,
        output=env.get("GITHUB_OUTPUT") or None,
        workspace=env.get("GITHUB_WORKSPACE") or str(Path.cwd()),
    )


def report_files(report: Report, root: str | None) -> dict[str, str]:
    """Each baseline file the report judged with (a directory given on the command line is
    expanded by then) -> its path relative to `root`."""
    if root is None:
        return {}
    return repository_paths(tuple(r.baseline_path for r in report.results), root)


def repository_paths(paths: tuple[str, ...], root: str) -> dict[str, str]:
    """Each baseline path as GitHub and CI tools resolve it: relative to the repository root,
    '/'-separated. A path outside the root is kept as given (an annotation there cannot land
    on the diff, and an absolute path at least names the file)."""
    out: dict[str, str] = {}
    base = Path(root).resolve()
    for path in paths:
        try:
            relative = Path(path).resolve().relative_to(base)
        except (ValueError, OSError):
            out[path] = path
            continue
        out[path] = relative.as_posix()
    return out


def github_commands(report: Report, policy: frozenset[FailOn], workspace: str) -> str:
    """The report as GitHub workflow commands: errors when the check fails the build,
    warnings when --fail-on never."""
    from perfgate.reports import github as github_report

    level: github_report.Level = "error" if policy else "warning"
    files = {
        **report_files(report, workspace),
        **repository_paths(github_report.problem_files(report), workspace),
    }
    return github_report.render(report, files, level)


class _ProblemUnreported(PerfgateError):
    """A check's problem whose report could not be written either: both are said."""

    def __init__(self, problem: PerfgateError, also: PerfgateError) -> None:
        super().__init__(problem.message, problem.path, problem.problems)
        self.exit_code = problem.exit_code
        self._lines = [*problem.lines(), *also.lines()]

    def lines(self) -> list[str]:
        return self._lines


def without_output(outputs: ReportOutputs, path: str | None) -> ReportOutputs:
    """The report outputs less the one a problem is about (it may be an input)."""
    if path is None:
        return outputs
    dropped: dict[str, Any] = {
        f.name: None for f in fields(outputs) if getattr(outputs, f.name) == path
    }
    return replace(outputs, **dropped)


def replace_stale_reports(outputs: ReportOutputs, exc: Exception) -> None:
    """After an internal error, each report file asked for says so, or is removed: a report
    left from an earlier run must not read as this run's result."""
    from perfgate.common.fileio import remove_stale

    problem = Report(problems=(f"internal error: {type(exc).__name__}: {exc}",))
    try:
        write_reports(problem, replace(outputs, step_summary=None))
    except Exception:  # the reporters themselves fail: leave no report at all
        for path in (outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment):
            if path:
                remove_stale(path)


def safe_outputs(outputs: ReportOutputs, inputs: tuple[str, ...]) -> ReportOutputs:
    """The report outputs less any that check_outputs refuses on its own (after it refused
    another, the rest were never looked at): the report files, and GitHub's step files, which
    are never appended to when they are an input either (a capture, its sidecar, a baseline
    in a folder given)."""
    every = _every_input(inputs)
    for path in (outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment):
        try:
            check_outputs([path], every)
        except PerfgateError:
            outputs = without_output(outputs, path)
    for path in (outputs.step_summary, outputs.github_output):
        try:
            check_outputs([path], every, regular_only=())
        except PerfgateError:
            outputs = without_output(outputs, path)
    return outputs


def _every_input(paths: tuple[str, ...]) -> list[str]:
    """`paths` (baselines and captures as given), the baselines of a folder among them (its
    subfolders too, as expand finds them), the diagnosis captures that gate sidecars link, and
    every capture's sidecar."""
    from perfgate.baseline.selection import below
    from perfgate.ingest.meta import sidecar_path
    from perfgate.ingest.phases import linked

    folders = [p for p in paths if Path(p).is_dir()]
    files = linked([p for p in paths if p not in folders])
    inside = [str(c) for folder in folders for c in below(Path(folder))]
    return [*paths, *inside, *files, *(str(sidecar_path(f)) for f in files)]


def report_problem(problem: Report, outputs: ReportOutputs, exc: PerfgateError) -> None:
    """Write a problem's report to each output. One that cannot be written is removed (no
    report of an earlier run may stay there) and the others say both problems; if they
    cannot be written either, every report file asked for is removed. Both are raised."""
    try:
        write_reports(problem, outputs)
        write_step_outputs(problem, outputs, exc.exit_code)
        return
    except PerfgateError as also:
        unreported = _ProblemUnreported(exc, also)
        rest = without_output(outputs, also.path) if also.path else outputs
        remove_report(outputs, also.path)
    try:
        both = Report(problems=tuple(unreported.lines()))
        write_reports(both, rest)
        write_step_outputs(both, rest, exc.exit_code)
    except PerfgateError:
        for path in (outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment):
            if path:
                remove_stale(path)
    raise unreported
