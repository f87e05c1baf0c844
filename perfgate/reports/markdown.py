"""The markdown summary: a status line, then one table, regressions first.

Kernel names are real C++ signatures (`void at::reduce_kernel<512, 1, at::ReduceOp<float,
...>>(...)`): every character that markdown or HTML could take for syntax is written as an
entity, so GitHub shows the name intact and no `|` breaks a table row.
"""

from __future__ import annotations

from perfgate.compare import CheckResult, Comparison, State
from perfgate.reports.format import VERDICT, change, value
from perfgate.reports.summary import status_line

ICON = {
    State.PASS: "✅",
    State.REGRESSED: "❌",
    State.IMPROVED: "🟢",
    State.MISSING_KERNEL: "❌",
    State.MISSING_METRIC: "❌",
    State.NEW_KERNEL: "🆕",
    State.ERROR: "⚠️",
}
# ASCII punctuation markdown or HTML give meaning to; the rest of the text stays as it is.
_SPECIAL = set("&<>|*_`[]\\~#!{}$")


def cell(text: str) -> str:
    """Text that renders literally inside a GFM table cell."""
    out = []
    for ch in text:
        if ch in _SPECIAL:
            out.append(f"&#{ord(ch)};")
        elif ch in "\r\n\t":
            out.append(" ")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append("�")
        else:
            out.append(ch)
    return "".join(out)


def code(text: str) -> str:
    return f"<code>{cell(text)}</code>"


HEADER = (
    "| Kernel | Metric | Baseline | Current | Change | Bound | Verdict |\n"
    "|---|---|---|---|---|---|---|\n"
)


def row(c: Comparison) -> str:
    kernel = code(c.kernel)
    if c.kernel_name and c.kernel_name != c.kernel:
        kernel += f"<br><sub>{code(c.kernel_name)}</sub>"
    metric = code(c.metric) if c.metric else ""
    verdict = f"{ICON[c.state]} {VERDICT[c.state]}"
    if c.message:
        verdict += f"<br><sub>{cell(c.message)}</sub>"
    return (
        f"| {kernel} | {metric} | {cell(value(c.baseline, c.unit))} "
        f"| {cell(value(c.current, c.unit))} "
        f"| {cell(change(c))} | {cell(c.bound)} | {verdict} |\n"
    )


def render(result: CheckResult) -> str:
    code_ok = result.exit_code == 0
    head = status_line(result).replace("perfgate check ", "")
    out = [f"### {'✅' if code_ok else '❌'} perfgate: {cell(head)}\n\n"]
    captures = ", ".join(code(p) for p in result.capture_paths)
    gpu = f" (recorded on {cell(result.baseline_gpu)})" if result.baseline_gpu else ""
    out.append(f"Baseline {code(result.baseline_path)}{gpu}, capture {captures}.\n\n")
    for warning in result.warnings:
        out.append(f"> ⚠️ {cell(warning)}\n\n")
    ordered = result.ordered()
    attention = [c for c in ordered if c.state is not State.PASS]
    passing = [c for c in ordered if c.state is State.PASS]
    if attention:
        out.append(HEADER)
        out.extend(row(c) for c in attention)
        out.append("\n")
    if passing:
        out.append(f"<details><summary>{len(passing)} passing comparisons</summary>\n\n")
        out.append(HEADER)
        out.extend(row(c) for c in passing)
        out.append("\n</details>\n")
    return "".join(out)
