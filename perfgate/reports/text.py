"""The console report: a status line, then what needs attention, one line each."""

from __future__ import annotations

from perfgate.compare import CheckResult, State
from perfgate.reports.format import VERDICT, transition
from perfgate.reports.summary import status_line

_QUIET = {State.PASS, State.IMPROVED, State.NEW_KERNEL}


def render(result: CheckResult, verbose: bool = False) -> str:
    lines = [status_line(result)]
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    shown = [c for c in result.ordered() if verbose or c.state not in _QUIET]
    for c in shown:
        label = VERDICT[c.state].upper() if c.state not in _QUIET else VERDICT[c.state]
        where = f"{c.kernel}  {c.metric}" if c.metric else c.kernel
        if c.state in (State.REGRESSED, State.IMPROVED, State.PASS) and c.current is not None:
            detail = transition(c) + (f", bound {c.bound}" if c.bound else "")
            if c.message:
                detail += f"; {c.message}"
        else:
            detail = c.message
        lines.append(f"  {label:<15} {where}: {detail}")
    improved = sum(1 for c in result.comparisons if c.state is State.IMPROVED)
    if improved and not verbose:
        lines.append(
            f"  ({improved} improved; re-record the baseline to lock the gains in; -v lists them)"
        )
    return "\n".join(lines) + "\n"
