"""The markdown summary people read on a blocked pull request.

A status line first; then one table with a row per kernel that needs attention (kernel,
verdict, and what changed: the root cause and its lever), failures first; then, per such
kernel, a `<details>` block with its causes, their evidence and the comparisons that follow
from them, the metric table, occupancy and the stall breakdown before and after (a table and a
picture); passing kernels last, folded away.

Kernel names are real C++ signatures (`void at::reduce_kernel<512, 1, at::ReduceOp<float,
...>>(...)`): every character markdown or HTML could take for syntax is written as an entity,
so GitHub shows the name intact and no `|` breaks a row.

GitHub caps a job's step summary at 1 MiB and a comment at 65,536 characters. With a `budget`
the report keeps the status line and the problems first and, when it would not fit, leaves the
rest out with a pointer to the full report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from perfgate.causes.changes import ChangeFinding
from perfgate.causes.model import CauseKind
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.policy import STATUS, comparison_word, passes_quietly
from perfgate.reports.format import (
    by_share,
    change,
    change_cost,
    counted,
    evidence_text,
    headline,
    kernels_text,
    launches_text,
    value,
)
from perfgate.reports.markup import cell, code
from perfgate.reports.summary import not_judged_lines, status_line
from perfgate.reports.svg import BASELINE_COLOUR, CURRENT_COLOUR
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict, Report

PR_COMMENT_MARKER = "<!-- perfgate:pr-comment -->"
STEP_SUMMARY_BUDGET = 1_000_000  # bytes; GitHub's limit is 1 MiB per step
PR_COMMENT_BUDGET = 60_000  # characters; GitHub's limit is 65,536


# Three columns: GitHub's content column is about 900 px wide, and a seven-column table pushed
# the verdict out of view (an improvement read like a regression). The numbers are in the
# kernel's details block below the table.
HEADER = "| Kernel | Verdict | What changed, and what to try |\n|---|---|---|\n"
CHANGE_HEADER = "| Change | Replaced → by | What to try |\n|---|---|---|\n"
CHANGE_ROWS = 10  # a summary table a reviewer reads at a glance
SUMMARY_ROWS = 10  # rows unfolded in all: change rows, then kernels that need attention
METRIC_HEADER = "| Metric | Baseline → current | Change | Bound | State |\n|---|---|---|---|---|\n"


def prose(text: str) -> str:
    """Text for a cell, with `backquoted` spans (commands in levers) as inline code."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backquote: keep it literal
        return cell(text)
    return "".join(
        f"<code>{cell(part)}</code>" if i % 2 else cell(part) for i, part in enumerate(parts)
    )


def row(v: KernelVerdict) -> str:
    verdict = f"{STATUS[v.state].icon} {STATUS[v.state].verdict}"
    return f"| {code(v.kernel)} | {verdict} | {prose(headline(v))} |\n"


def metric_row(c: Comparison) -> str:
    state = comparison_word(c.state)
    if c.explained:
        state += f"<br><sub>{cell(c.explained)}</sub>"
    elif c.message:
        state += f"<br><sub>{cell(c.message)}</sub>"
    both = f"{value(c.baseline, c.unit)} -> {value(c.current, c.unit)}"  # cell(): one line
    return f"| {code(c.metric)} | {cell(both)} | {cell(change(c))} | {cell(c.bound)} | {state} |\n"


def change_row(c: ChangeFinding, program: ProgramVerdict | None) -> str:
    cost = cell(change_cost(c, program))
    kernels = f"{c.replaced_kernels} -> {counted(c.by_kernels, 'kernel')}"
    both = f"{cell(kernels)}<br><sub>{cost}</sub>"
    return f"| **{cell(c.title)}** | {both} | {prose(c.lever)} |\n"


def change_details(c: ChangeFinding, program: ProgramVerdict | None) -> str:
    """What a change replaced by what, and every kernel it explains, folded."""
    return (
        f"<details><summary>🔀 {cell(c.title)}</summary>\n\n"
        f"{cell(change_cost(c, program))}\n\n"
        f"- replaced {cell(kernels_text(c.replaced, c.replaced_kernels))}\n"
        f"- by {cell(kernels_text(c.by, c.by_kernels))}\n"
        + (f"- in {cell(kernels_text(c.scaled, c.scaled_kernels))}\n" if c.scaled_kernels else "")
        + (
            f"- launched more or less often with it: {cell(', '.join(c.recounted))}\n"
            if c.recounted
            else ""
        )
        + f"- *Try*: {prose(c.lever)}\n"
        f"- kernels under it: {', '.join(code(m) for m in c.members)}\n\n"
        "</details>\n\n"
    )


@dataclass(frozen=True)
class Pictures:
    """How the stall breakdown is drawn: `svg` names the picture files written beside the
    report (kernel id -> relative path); otherwise a mermaid chart, which GitHub draws.
    `trends`: (baseline path, kernel id) -> (metric, relative path) of the trend pictures
    drawn from a history (check --history)."""

    svg: Mapping[str, str] | None = None
    trends: Mapping[tuple[str, str], Sequence[tuple[str, str]]] | None = None


# The charts' two colours named where GitHub's mermaid has no legend (emoji of those colours).
LEGEND = "🟦 baseline · 🟧 current"
_CHART_CARD, _CHART_TEXT = "#ffffff", "#1f2328"


def _mermaid(kernel: str, before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """Grouped horizontal bars: per stall reason a baseline row and a current row, each
    labelled with its value, in the two colours of the SVG charts (two series, each zero on
    the other's rows, since mermaid draws a category's bars on top of each other)."""
    reasons = by_share(before, after)[:6]
    labels, then, now = [], [], []
    names: set[str] = set()
    for r in reasons:
        # Reasons are a baseline's keys: inside the code fence only characters that cannot end it.
        name = "".join(ch for ch in r if ch.isalnum() or ch in "_.-")[:40]
        # Mermaid draws categories of one name in one row: each reason keeps a name of its own.
        name = next(n for i in range(len(names) + 1) if (n := name + "-" * i) not in names)
        names.add(name)
        b, a = before.get(r, 0.0), after.get(r, 0.0)
        labels += [f'"{name} baseline {b:.1f}"', f'"{name} current {a:.1f}"']
        then += [f"{b:.1f}", "0"]
        now += ["0", f"{a:.1f}"]
    # Mermaid titles are quoted strings: keep them to safe characters (others, < > and the
    # like, which would be dropped as markup or end the string, become spaces).
    title = " ".join(
        "".join(ch if ch.isalnum() or ch in "_:.-,()" else " " for ch in kernel).split()
    )[:60]
    # Mermaid's dark theme would draw it on grey with light text: the chart is a white card
    # in both of GitHub's themes, as the SVG charts are. The value axis has no tick labels (each
    # row says its value): mermaid pads the axis by half the widest tick label, which starts
    # the bars a few pixels right of the plot's edge and shows the other side's zero as a stub.
    text = {
        f"{part}Color": _CHART_TEXT
        for part in (
            "title", "legendText", "dataLabel", "xAxisTitle", "xAxisLabel", "xAxisTick",
            "xAxisLine", "yAxisTitle", "yAxisLabel", "yAxisTick", "yAxisLine",
        )
    }  # fmt: skip
    palette = f"{BASELINE_COLOUR}, {CURRENT_COLOUR}"
    config = {
        "xyChart": {
            "width": 720,
            "height": 80 + 28 * len(labels),
            "showLegend": True,
            "yAxis": {"showLabel": False, "showTick": False},
        },
        "themeVariables": {
            "xyChart": {"backgroundColor": _CHART_CARD, **text, "plotColorPalette": palette}
        },
    }
    return (
        f"```mermaid\n%%{{init: {json.dumps(config)}}}%%\n"
        "xychart-beta horizontal\n"
        f'    title "{title}: stall shares"\n'
        f"    x-axis [{', '.join(labels)}]\n"
        '    y-axis "share of stalls (%)" 0 --> 100\n'
        f'    bar "baseline" [{", ".join(then)}]\n'
        f'    bar "current" [{", ".join(now)}]\n```\n'
    )


def _stall_section(kernel: str, comps: list[Comparison], pictures: Pictures) -> str:
    dominant = next((c for c in comps if c.metric == "dominant_stall"), None)
    if dominant is None or not (dominant.baseline_shares or dominant.current_shares):
        return ""
    before, after = dominant.baseline_shares or {}, dominant.current_shares or {}
    reasons = by_share(before, after)
    reasons = [r for r in reasons if max(before.get(r, 0.0), after.get(r, 0.0)) >= 0.5][:8]
    lines = [
        f"**Stalls** (share of the stalls, without `selected` and `not_selected`): dominant "
        f"{cell(str(dominant.baseline))} → {cell(str(dominant.current))}\n\n",
        "| Stall reason | Baseline | Current |\n|---|---|---|\n",
    ]
    lines += [
        f"| {cell(r)} | {before.get(r, 0.0):.1f}% | {after.get(r, 0.0):.1f}% |\n" for r in reasons
    ]
    lines.append("\n")
    if pictures.svg is None:
        lines.append(f"Chart: {LEGEND}\n\n")
    if pictures.svg is not None and kernel in pictures.svg:
        lines.append(
            f"![stall shares of {cell(kernel)}, baseline and current]({pictures.svg[kernel]})\n\n"
        )
    elif pictures.svg is None:
        lines.append(_mermaid(kernel, before, after) + "\n")
    return "".join(lines)


def _trend_section(baseline: str, kernel: str, pictures: Pictures) -> str:
    drawn = (pictures.trends or {}).get((baseline, kernel), ())
    return "".join(
        f"**Trend** of {code(metric)} over the history's runs on this fingerprint, this run "
        f"last:\n\n![{cell(metric)} of {cell(kernel)} over the history]({path})\n\n"
        for metric, path in drawn
    )


def _occupancy_line(comps: list[Comparison]) -> str:
    by_metric = {c.metric: c for c in comps}
    parts = []
    for metric, label in (
        ("occupancy_limiter", "limiter"),
        ("theoretical_occupancy", "theoretical"),
        ("achieved_occupancy", "achieved"),
        ("registers_per_thread", "registers per thread"),
    ):
        c = by_metric.get(metric)
        if c is not None and c.current is not None:
            before, now = value(c.baseline, c.unit), value(c.current, c.unit)
            parts.append(f"{label} {cell(before)}" + ("" if before == now else f" → {cell(now)}"))
    return f"**Occupancy**: {'; '.join(parts)}\n\n" if parts else ""


def _causes_section(v: KernelVerdict) -> str:
    out = []
    for cause in v.causes:
        label = {
            CauseKind.REGRESSION: "Root cause",
            CauseKind.TRADE_OFF: "Trade-off",
            CauseKind.IMPROVEMENT: "Improvement",
            CauseKind.CHANGE: "Change",
        }[cause.kind]
        # Titles such as "Trade-off: ..." already say their kind.
        lead = "" if cause.title.lower().startswith(label.lower()) else f"{label}: "
        line = f"- **{lead}{cell(cause.title)}**: {prose(cause.detail)}."
        if cause.lever:
            line += f" *Try*: {prose(cause.lever)}."
        if cause.evidence:
            line += f"<br><sub>{cell(evidence_text(cause))}</sub>"
        out.append(line + "\n")
        follows = [c.metric for c in v.failing if c.metric in cause.explains]
        if follows:
            out.append(f"  - follows from it: {', '.join(code(m) for m in follows)}\n")
    return "".join(out) + ("\n" if out else "")


def kernel_details(result: CheckResult, pictures: Pictures) -> list[str]:
    """One `<details>` block per kernel that needs attention: causes first, then numbers."""
    blocks = []
    for v in result.ordered():
        if passes_quietly(v.state):
            continue
        comps = list(v.comparisons)
        shown = [c for c in comps if c.state is not State.PASS or c.explained]
        table = ""
        if shown:
            table = METRIC_HEADER + "".join(metric_row(c) for c in shown) + "\n"
        where = ", ".join(code(p) for p in v.captures)
        launches = launches_text(v)
        blocks.append(
            f"<details><summary>{STATUS[v.state].icon} {code(v.kernel)}: "
            f"{cell(STATUS[v.state].verdict)}</summary>\n\n"
            + f"{code(v.name)}\n\n"
            + (f"{cell(launches)}; captured in {where}\n\n" if launches else "")
            + _causes_section(v)
            + table
            + _occupancy_line(comps)
            + _stall_section(v.kernel, comps, pictures)
            + _trend_section(result.baseline_path, v.kernel, pictures)
            + "</details>\n\n"
        )
    return blocks


def _head(report: Report) -> str:
    ok = report.exit_code == 0
    out = [
        f"### {'✅' if ok else '❌'} perfgate: "
        f"{cell(status_line(report).removeprefix('perfgate check '))}\n\n"
    ]
    for problem in report.problems:
        out.append(f"> ⚠️ {cell(problem)}\n\n")
    for line in not_judged_lines(report):
        out.append(f"> {'⛔' if line.startswith('not judged') else '⏭️'} {cell(line)}\n\n")
    for note in report.notes:
        out.append(f"> {cell(note)}\n\n")
    for result in report.results:
        captures = ", ".join(code(p) for p in result.capture_paths)
        gpu = f" (recorded on {cell(result.baseline_gpu)})" if result.baseline_gpu else ""
        out.append(f"Baseline {code(result.baseline_path)}{gpu}, capture {captures}.\n\n")
        for warning in result.warnings:
            out.append(f"> ⚠️ {cell(warning)}\n\n")
        if result.notice:
            out.append(f"> ⚠️ {cell(result.notice)}\n\n")
    return "".join(out)


def render(
    report: Report,
    pictures: Pictures | None = None,
    budget: int | None = None,
    full_report: str | None = None,
    marker: str | None = None,
) -> str:
    """The summary; with `budget` (bytes of UTF-8) it stays under it, pointing to `full_report`."""
    pictures = pictures or Pictures()
    explained = {(id(r), m) for r in report.results for m in r.explained()}
    changes = [
        (change_row(c, r.program), change_details(c, r.program))
        for r in report.results
        for c in r.changes
    ]
    attention = [
        v
        for r in report.results
        for v in r.ordered()
        if (not passes_quietly(v.state) or v.related) and (id(r), v.kernel) not in explained
    ]
    quiet = [
        v
        for r in report.results
        for v in r.ordered()
        if v not in attention and (id(r), v.kernel) not in explained
    ]
    details = [block for r in report.results for block in kernel_details(r, pictures)]
    head = (marker + "\n" if marker else "") + _head(report)
    sections: list[tuple[str, list[str], Callable[[int], str]]] = []
    if changes:
        sections.append((
            CHANGE_HEADER,
            [row for row, _ in changes[:CHANGE_ROWS]],
            lambda n: f"| … | {counted(n, 'more change')} not shown | |\n",
        ))  # fmt: skip
        sections.append(("", [details for _, details in changes], lambda n: ""))
    # The tables a reader sees unfolded hold SUMMARY_ROWS rows in all (issue 22): changes
    # first, then the kernels that need attention; the rest of those fold under a summary.
    room = max(SUMMARY_ROWS - min(len(changes), CHANGE_ROWS), 0)
    shown, folded = attention[:room], attention[room:]
    if shown:
        sections.append(
            (
                HEADER,
                [row(v) for v in shown],
                lambda n: f"| … | {counted(n, 'more kernel')} not shown | |\n",
            )
        )
    if folded:
        sections.append(_folded(f"{counted(len(folded), 'more kernel')} that changed", folded))
    if details:
        sections.append(("", details, lambda n: f"*{counted(n, 'more kernel')} not shown.*\n\n"))
    if quiet:
        sections.append(_folded(f"{counted(len(quiet), 'kernel')} passed, new or skipped", quiet))
    closing = {i for i, (opening, _, _) in enumerate(sections) if opening.startswith("<details>")}
    return _fit(head, sections, budget, full_report, closing=closing)


def _folded(
    summary: str, verdicts: Sequence[KernelVerdict]
) -> tuple[str, list[str], Callable[[int], str]]:
    """A kernel table under a fold that names what it holds (render closes the fold)."""
    return (
        f"<details><summary>{summary}</summary>\n\n" + HEADER,
        [row(v) for v in verdicts],
        lambda n: f"| … | {counted(n, 'more kernel')} not shown | |\n",
    )


def _fit(
    head: str,
    sections: list[tuple[str, list[str], Callable[[int], str]]],
    budget: int | None,
    full_report: str | None,
    closing: set[int],
) -> str:
    """Head, then each section's rows in order, until the budget is spent."""
    pointer = (
        "\n*The report was cut to fit GitHub's size limit; "
        f"the full report is {code(full_report)}.*\n"
        if full_report
        else "\n*The report was cut to fit GitHub's size limit.*\n"
    )
    reserve = len(pointer.encode()) + 512
    out = [head]
    used = len(head.encode())
    cut = False
    for index, (opening, rows, more) in enumerate(sections):
        close = "\n</details>\n" if index in closing else "\n"
        if budget is not None and used + len(opening.encode()) + reserve > budget:
            cut = True
            break
        out.append(opening)
        used += len(opening.encode())
        shown = 0
        for text in rows:
            size = len(text.encode())
            if budget is not None and used + size + reserve > budget:
                cut = True
                break
            out.append(text)
            used += size
            shown += 1
        if shown < len(rows):
            out.append(more(len(rows) - shown))
        out.append(close)
        used += len(close.encode())
        if cut:
            break
    if cut:
        out.append(pointer)
    return "".join(out)
