"""The compact delta table (`--format delta`, `--format delta-markdown`): the status line, then
one row per kernel and metric that moved beyond its bound or could not be judged: kernel,
metric, baseline -> current, change, bound, state. A kernel gone or new is one row of its own;
the whole program's GPU time one row per baseline. Nothing else: the causes, levers and
evidence are in the full reports."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.judge.comparison import State
from perfgate.judge.policy import comparison_word, verdict_word
from perfgate.judge.states import KernelState
from perfgate.reports.escape import log_text
from perfgate.reports.format import change, value
from perfgate.reports.markup import cell, code
from perfgate.reports.summary import status_line
from perfgate.verdicts.model import ProgramVerdict, Report

# Metric rows of one kernel, what blocks a merge first.
_ORDER = (
    State.REGRESSED, State.UNJUDGED, State.MISSING_METRIC, State.ERROR, State.IMPROVED,
    State.NOTED,
)  # fmt: skip
_KERNEL_ROWS = {KernelState.MISSING, KernelState.NEW, KernelState.ERROR}
HEADER = ("kernel", "metric", "baseline -> current", "change", "bound", "state")
_WIDEST = 60  # a column is padded to at most this; a longer cell runs over in its own row

Row = tuple[str, str, str, str, str, str]


def _program_row(program: ProgramVerdict) -> Row | None:
    if program.state in (KernelState.PASS, KernelState.SKIPPED):
        return None
    before = value(program.baseline, "ns")
    now = value(program.current, "ns")
    shift = f"{program.change:+.1%}" if program.change is not None else ""
    bound = f"+{program.bound:.1%}" if program.bound is not None else ""
    return (
        "(program)",
        "gpu_time",
        f"{before} -> {now}",
        shift,
        bound,
        verdict_word(program.state),
    )


def rows(report: Report) -> list[Row]:
    """The table's rows, worst kernel first as the other reports order them."""
    out: list[Row] = []
    for result in report.results:
        if result.program is not None and (row := _program_row(result.program)):
            out.append(row)
        for v in result.ordered():
            if v.state in _KERNEL_ROWS:
                out.append((v.kernel, "(kernel)", "", "", "", verdict_word(v.state)))
                continue
            moved = sorted(
                (c for c in v.comparisons if c.state in _ORDER),
                key=lambda c: _ORDER.index(c.state),
            )
            out.extend(
                (
                    v.kernel,
                    c.metric,
                    f"{value(c.baseline, c.unit)} -> {value(c.current, c.unit)}",
                    change(c),
                    c.bound,
                    comparison_word(c.state),
                )
                for c in moved
            )
    return out


def _none_line(report: Report) -> str:
    return "no metric moved beyond its bound" if report.results else "nothing was compared"


def _aligned(table: Sequence[Row]) -> list[str]:
    widths = [min(max(len(r[i]) for r in table), _WIDEST) for i in range(len(HEADER))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]


def render(report: Report) -> str:
    """The plain-text table, columns aligned, one line per row."""
    lines = [status_line(report), *(f"note: {n}" for n in report.notes)]
    found = rows(report)
    if found:
        lines.extend(_aligned([tuple(h.upper() for h in HEADER), *found]))  # type: ignore[list-item]
    elif not report.problems:
        lines.append(_none_line(report))
    return log_text(lines)


def _markdown_row(r: Row) -> str:
    kernel = cell(r[0]) if r[0].startswith("(") else code(r[0])
    metric = cell(r[1]) if r[1].startswith("(") else code(r[1])
    return f"| {kernel} | {metric} | {cell(r[2])} | {cell(r[3])} | {cell(r[4])} | {cell(r[5])} |\n"


def render_markdown(report: Report) -> str:
    """The same table in GitHub markdown, under the status line."""
    ok = report.exit_code == 0
    head = (
        f"### {'✅' if ok else '❌'} perfgate: "
        f"{cell(status_line(report).removeprefix('perfgate check '))}\n\n"
    )
    head += "".join(f"> {cell(n)}\n\n" for n in report.notes)
    found = rows(report)
    if not found:
        return head + ("" if report.problems else f"{_none_line(report)}\n")
    table = "| Kernel | Metric | Baseline → current | Change | Bound | State |\n"
    table += "|---|---|---|---|---|---|\n"
    return head + table + "".join(_markdown_row(r) for r in found)
