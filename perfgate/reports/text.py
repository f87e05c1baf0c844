"""The console report: a status line, then what needs attention, one line each."""

from __future__ import annotations

from perfgate.compare import Report, State
from perfgate.reports.format import VERDICT, transition
from perfgate.reports.summary import status_line

_QUIET = {State.PASS, State.IMPROVED, State.NEW_KERNEL, State.SKIPPED}


def render(report: Report, verbose: bool = False) -> str:
    lines = [status_line(report)]
    for result in report.results:
        lines.extend(f"warning: {w}" for w in result.warnings)
        for c in result.ordered():
            if not verbose and c.state in _QUIET:
                continue
            label = VERDICT[c.state] if c.state in _QUIET else VERDICT[c.state].upper()
            where = f"{c.kernel}  {c.metric}" if c.metric else c.kernel
            if c.state in (State.REGRESSED, State.IMPROVED, State.PASS) and c.current is not None:
                detail = transition(c) + (f", bound {c.bound}" if c.bound else "")
                if c.message:
                    detail += f"; {c.message}"
            else:
                detail = c.message
            lines.append(f"  {label:<15} {where}: {detail}")
        for kernel, diagnosis in result.diagnoses.items():
            if diagnosis.findings:
                top = diagnosis.findings[0]
                lines.append(
                    f"  diagnosis       {kernel}: {top.title}: {top.detail}; try: {top.lever}"
                )
    improved = sum(1 for c in report.comparisons if c.state is State.IMPROVED)
    if improved and not verbose:
        lines.append(
            f"  ({improved} improved; re-record the baseline to lock the gains in; -v lists them)"
        )
    return "\n".join(lines) + "\n"
