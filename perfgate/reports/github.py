"""GitHub Actions: workflow-command annotations, escaped as GitHub's toolkit escapes them.

@actions/core escapes a command's message with %25 for '%', %0D for CR and %0A for LF, and its
properties (title=...) additionally with %3A for ':' and %2C for ','. One `::error` per failing
kernel, leading with its root cause and lever, at most ten, worst first, then one `::notice`
saying how many more there are: GitHub shows only the first ten errors of a step anyway.

Each annotation points at the baseline file and the line of the kernel's entry
(`file=baselines/h100/zoo.yaml,line=12`), relative to the repository root, so GitHub shows it
on the pull request's diff when the baseline changed and in the checks tab otherwise. `files`
maps a baseline path as given on the command line to that repository-relative path (the CLI
resolves it against GITHUB_WORKSPACE); without it the path is used as given.

In warn-only mode (`level="warning"`) the gate's findings are `::warning`s: reported, not
read as a failure. Unusable input stays an `::error` (it still exits 2). A problem at a place
in a file (`FILE:LINE:COL: message`, a baseline's YAML or schema error) is annotated on that
line and column: one annotation per problem, so no problem matcher is needed for them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from perfgate.judge.policy import SEVERITY, Meaning, meaning, verdict_word
from perfgate.judge.policy import failing as needs_attention
from perfgate.judge.skips import describe
from perfgate.judge.states import KernelState
from perfgate.reports.format import change_cost, counted, headline, location
from perfgate.reports.summary import program_text
from perfgate.verdicts.model import KernelVerdict, ProgramVerdict, Report

Level = Literal["error", "warning"]

MAX_ERRORS = 10
# A problem at a place in its file (common.errors.located), as perfgate-matcher.json reads it.
LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>[1-9]\d*):(?P<col>[1-9]\d*): (?P<message>.+)$")


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _worst_first(v: KernelVerdict) -> tuple[int, int]:
    # What blocks a merge first (judge.policy.SEVERITY), then the most failing metrics.
    return SEVERITY.index(v.state), -len(v.failing)


def _properties(file: str, line: int | None, title: str) -> str:
    where = f"file={escape_property(file)}," if file else ""
    if file and line is not None:
        where += f"line={line},"
    return f"{where}title={escape_property(title)}"


def problem_files(report: Report) -> tuple[str, ...]:
    """The files the report's located problems are in, as the problems name them."""
    return tuple(m.group("file") for p in report.problems if (m := LOCATED.match(p)))


def _problem(problem: str, files: Mapping[str, str]) -> str:
    title = f"title={escape_property('perfgate: input')}"
    m = LOCATED.match(problem)
    if m is None:
        return f"::error {title}::{escape_data(problem)}"
    file = files.get(m.group("file"), m.group("file")).replace("\\", "/")
    where = f"file={escape_property(file)},line={m.group('line')},col={m.group('col')}"
    return f"::error {where},{title}::{escape_data(m.group('message'))}"


def _program_title(program: ProgramVerdict | None) -> str:
    return f"perfgate: program GPU time {verdict_word(program.state) if program else ''}"


def render(report: Report, files: Mapping[str, str] | None = None, level: Level = "error") -> str:
    # Unusable input is an error whatever the level: warn-only never relaxes it.
    lines = [_problem(p, files or {}) for p in report.problems]
    # The whole program slower beyond its bound: one annotation per baseline, before kernels.
    lines.extend(
        f"::{level} title={escape_property(_program_title(r.program))}::"
        f"{escape_data(program_text(r.program))}"
        for r in report.results
        if r.program is not None and meaning(r.program.state) is Meaning.FAILS
    )
    # Gates not judged: one error per reason (every kernel's reads the same), whatever the
    # level: the gate could not judge them, as with unusable input.
    lines.extend(
        f"::error title={escape_property(f'perfgate: not judged ({n.skip.value})')}::"
        f"{escape_data(describe(n.skip, n.fails, n.metrics, n.kernels, n.program))}"
        for n in report.not_judged()
        if n.fails
    )
    # A change that took baselined kernels away: one annotation, where its first one was
    # recorded, in place of one per missing kernel (perfgate.causes.changes).
    under_change: set[tuple[int, str]] = set()
    for r in report.results:
        by_id = {v.kernel: v for v in r.verdicts if v.state is KernelState.MISSING}
        for c in r.changes:
            gone = [by_id[m] for m in c.members if m in by_id]
            if not gone:
                continue
            under_change.update((id(r), v.kernel) for v in gone)
            file, line = location(r, gone[0], files)
            props = _properties(file, line, f"perfgate: change: {c.kind}")
            lines.append(
                f"::{level} {props}::"
                + escape_data(f"{c.title}; {change_cost(c, r.program)}; try: {c.lever}")
            )
    failing = sorted(
        (
            (r, v)
            for r in report.results
            for v in r.verdicts
            if needs_attention(v.state)
            and v.state is not KernelState.UNJUDGED  # said once per reason above
            and (id(r), v.kernel) not in under_change
        ),
        key=lambda rv: _worst_first(rv[1]),
    )
    room = max(MAX_ERRORS - len(lines), 0)
    for result, v in failing[:room]:
        file, line = location(result, v, files)
        props = _properties(file, line, f"perfgate: {v.kernel} {verdict_word(v.state)}")
        kind = "error" if meaning(v.state) is Meaning.INPUT_ERROR else level
        lines.append(f"::{kind} {props}::{escape_data(headline(v))}")
    rest = len(failing) - room
    if rest > 0:
        lines.append(
            f"::notice title=perfgate::{counted(rest, 'more failing kernel')}; "
            "see the step summary or the JUnit report"
        )
    return "\n".join(lines) + ("\n" if lines else "")
