"""Formatting values, changes, verdicts and causes for people: shared by every reporter so
that they say the same thing in the same words."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

from perfgate.causes.changes import ChangeFinding
from perfgate.causes.model import RootCause
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.policy import loud, verdict_word
from perfgate.judge.states import KernelState
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict

_SCALES = {
    "ns": ((1e9, "s"), (1e6, "ms"), (1e3, "us")),
    "byte": ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")),
}
# Units that read better left off: the metric's name already says what is counted.
_SILENT_UNITS = {
    "inst", "sector", "request", "conflict", "sector/request", "register/thread", "launch",
}  # fmt: skip


def by_share(before: Mapping[str, float], after: Mapping[str, float]) -> list[str]:
    """Stall reasons, the largest share on either side first; equal shares by name, so that a
    report is the same in every run (a set's order changes with the hash seed)."""
    return sorted(
        set(before) | set(after), key=lambda r: (-max(before.get(r, 0.0), after.get(r, 0.0)), r)
    )


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 kernel', '3 kernels', '2 more failing kernels': the noun's last word agrees."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def number(value: float, unit: str = "") -> str:
    """A value with its unit, scaled for reading: 13632 ns -> '13.63 us'."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    for factor, name in _SCALES.get(unit, ()):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {name}"
    if float(value).is_integer() and abs(value) < 1e15:
        text = f"{int(value):,}"
    elif abs(value) >= 100:
        text = f"{value:,.1f}"
    elif value == 0 or abs(value) >= 0.01:
        text = f"{value:.3g}"
    else:
        text = f"{value:.2e}"
    if unit == "%":
        return f"{text}%"
    if not unit or unit in _SILENT_UNITS:
        return text
    return f"{text} {unit}"


def value(v: float | str | None, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return number(v, unit)


def change(c: Comparison) -> str:
    """'+12.5%', 'x32.0' for ten-fold and more, or the plain difference from zero."""
    if c.change is None:
        return ""
    rel = c.relative_change
    if rel is not None and math.isfinite(rel):
        return f"x{1 + rel:.1f}" if rel >= 9 else f"{rel * 100:+.1f}%"
    return ("+" if c.change > 0 else "") + number(c.change, c.unit)


def transition(c: Comparison) -> str:
    """'baseline 16 -> current 40 (+150.0%)'."""
    text = f"baseline {value(c.baseline, c.unit)} -> current {value(c.current, c.unit)}"
    delta = change(c)
    return f"{text} ({delta})" if delta else text


def comparison_line(c: Comparison) -> str:
    """'registers_per_thread: baseline 32 -> current 40 (+25.0%), bound +0 (exact)'."""
    if c.current is None:
        return f"{c.metric}: {c.message}"
    text = f"{c.metric}: {transition(c)}" + (f", bound {c.bound}" if c.bound else "")
    if c.message:
        text += f"; {c.message}"
    if c.explained:
        text += f"; {c.explained}"
    return text


def folded(comparisons: Sequence[Comparison]) -> list[tuple[str, int]]:
    """comparison_line of each comparison, those without a value and with one message folded
    into one line ('dominant_stall, stall_cpi.barrier and 14 more: MESSAGE'), with how many
    comparisons each line stands for."""
    groups: dict[str, list[Comparison]] = {}
    order: list[Comparison | str] = []
    for c in comparisons:
        if c.current is None and c.message:
            if c.message not in groups:
                groups[c.message] = []
                order.append(c.message)
            groups[c.message].append(c)
        else:
            order.append(c)
    lines: list[tuple[str, int]] = []
    for item in order:
        if not isinstance(item, str):
            lines.append((comparison_line(item), 1))
            continue
        same = groups[item]
        if len(same) == 1:
            lines.append((comparison_line(same[0]), 1))
            continue
        names = ", ".join(c.metric for c in same[:2])
        rest = f" and {len(same) - 2} more" if len(same) > 2 else ""
        lines.append((f"{names}{rest}: {item}", len(same)))
    return lines


def evidence_text(cause: RootCause) -> str:
    parts = []
    for e in cause.evidence:
        if e.before is None:
            parts.append(f"{e.metric} {value(e.after, e.unit)}")
        else:
            parts.append(f"{e.metric} {value(e.before, e.unit)} -> {value(e.after, e.unit)}")
    return "; ".join(parts)


def headline(v: KernelVerdict) -> str:
    """One sentence that says what happened to a kernel and, where known, what to try."""
    cause = v.headline
    if v.state is KernelState.MISSING:
        return v.message
    if v.state is KernelState.NEW:
        return v.message
    if cause is not None and v.state in (KernelState.REGRESSED, KernelState.IMPROVED):
        text = f"{cause.title}: {cause.detail}"
        return f"{text}; try: {cause.lever}" if cause.lever else text
    failing = v.failing
    if failing:
        first, shown = folded(failing)[0]
        more = f" (and {len(failing) - shown} more)" if len(failing) > shown else ""
        return first + more
    improved = [c for c in v.comparisons if c.state is State.IMPROVED]
    if improved:
        return comparison_line(improved[0]) + (
            f" (and {len(improved) - 1} more)" if len(improved) > 1 else ""
        )
    return v.message


def noted(v: KernelVerdict) -> tuple[Comparison, ...]:
    """Evidence metrics beyond their bounds that the check noted, not failed."""
    return tuple(c for c in v.comparisons if c.state is State.NOTED)


def noted_count(verdicts: tuple[KernelVerdict, ...] | list[KernelVerdict]) -> int:
    return sum(len(noted(v)) for v in verdicts)


def launches_text(v: KernelVerdict) -> str:
    if v.launches is None:
        return ""
    now = "/".join(str(n) for n in v.launches.current)
    if v.launches.baseline is None:
        return f"{now} launches"
    return f"{value(v.launches.baseline)} -> {now} launches per capture"


def location(
    result: CheckResult, verdict: KernelVerdict, files: Mapping[str, str] | None = None
) -> tuple[str, int | None]:
    """Where a kernel's finding belongs: its baseline file (repository-relative where `files`
    says so) and the line of its entry there (None for a kernel new to the baseline)."""
    path = (files or {}).get(result.baseline_path, result.baseline_path)
    return path.replace("\\", "/"), verdict.line


def kernel_lines(v: KernelVerdict, verbose: bool = False) -> list[str]:
    # The verdict and whether it shouts are judge.policy's status table's, as in every writer.
    label = verdict_word(v.state).upper() if loud(v.state) else verdict_word(v.state)
    said = headline(v)
    lines = [f"  {label:<11} {v.kernel}" + (f": {said}" if said else "")]
    if not loud(v.state) and not verbose:
        return lines
    pad = " " * 14
    if v.matched_by in ("renamed", "reshaped", "reconfigured") and v.message:
        lines.append(f"{pad}matched as {v.message}")
    shown_cause = v.headline if v.state in (KernelState.REGRESSED, KernelState.IMPROVED) else None
    for cause in v.causes:
        if cause is not shown_cause and v.state is not KernelState.MISSING:
            lines.append(f"{pad}also {cause.kind.value}: {cause.title}: {cause.detail}")
        if cause.evidence and v.state is not KernelState.MISSING:
            lines.append(f"{pad}evidence: {evidence_text(cause)}")
        if cause.explains:
            follows = [c for c in v.failing if c.metric in cause.explains]
            if follows:
                lines.append(
                    f"{pad}follows from it: "
                    + ", ".join(f"{c.metric} {change(c) or c.current}" for c in follows)
                )
    unexplained = folded(list(v.unexplained()))
    if not v.causes and unexplained and headline(v).startswith(unexplained[0][0]):
        unexplained = unexplained[1:]  # already the headline
    for text, _ in unexplained:
        lines.append(f"{pad}{text}")
    lines.extend(f"{pad}noted: {comparison_line(c)}" for c in noted(v))
    if v.state is not KernelState.PASS and v.captures:
        lines.append(f"{pad}in {', '.join(v.captures)}")
    return lines


def finite(v: float | str | None) -> float | str | None:
    """A value as JSON can hold it: NaN and infinity become None (null)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


WIDTH = 120  # columns of a change finding's text: it fits a terminal


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f} us"


def _times(n: float) -> str:
    return f"x{n:g}" if n == int(n) else f"x{n:.1f}"


def kernels_text(names: tuple[tuple[str, float], ...], total: int) -> str:
    """'12 kernels: nchwToNhwcKernel<…> x18, …': the heaviest few by name, once each."""
    shown = ", ".join(f"{n} {_times(x)}" for n, x in names)
    more = f", and {total - len(names)} more" if total > len(names) else ""
    return f"{counted(total, 'kernel')}: {shown}{more}" if total else "nothing"


def change_cost(change: ChangeFinding, program: ProgramVerdict | None) -> str:
    """'its kernels 236.8 us -> 432.8 us a run (+196.0 us); program 395.9 us -> 592.5 us'."""
    delta = change.after_ns - change.before_ns
    text = (
        f"GPU time of its kernels {_us(change.before_ns)} -> {_us(change.after_ns)} a run "
        f"({'+' if delta >= 0 else '-'}{_us(abs(delta))})"
    )
    if program is not None and program.baseline is not None and program.current is not None:
        text += f"; program {_us(program.baseline)} -> {_us(program.current)}"
    return text


def _clip(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def change_lines(change: ChangeFinding, program: ProgramVerdict | None) -> list[str]:
    """A change finding for the console: at most 7 lines of at most WIDTH columns."""
    pad = " " * 14
    lines = [
        _clip(f"  {'CHANGE':<11} {change.title}"),
        _clip(f"{pad}{change_cost(change, program)}"),
    ]
    lists = [
        ("replaced", change.replaced, change.replaced_kernels),
        ("by", change.by, change.by_kernels),
    ]
    if change.scaled_kernels:  # kernels still there that it explains: no "replaced nothing"
        lists = [x for x in lists if x[2]] + [("in", change.scaled, change.scaled_kernels)]
    for lead, names, total in lists:
        lines += textwrap.wrap(
            f"{lead} {kernels_text(names, total)}",
            WIDTH,
            initial_indent=pad,
            subsequent_indent=pad + "  ",
            max_lines=2,
            placeholder=" …",
            break_long_words=False,
        )
    if change.recounted:
        lines.append(
            _clip(f"{pad}launched more or less often with it: {', '.join(change.recounted)}")
        )
    lines += textwrap.wrap(
        change.lever,
        WIDTH,
        initial_indent=f"{pad}try: ",
        subsequent_indent=f"{pad}     ",
        max_lines=3,
        placeholder=" …",
    )
    return lines
