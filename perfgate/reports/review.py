"""`perfgate baseline show` and `perfgate baseline diff`: pure functions from the review
models (perfgate.lifecycle.views) to text or markdown."""

from __future__ import annotations

from collections.abc import Callable

from perfgate.baseline.model import HistoryEntry
from perfgate.lifecycle.views import (
    BaselineDiff,
    BaselineView,
    KernelChange,
    MetricChange,
    MetricView,
)
from perfgate.reports.escape import log_text, one_line
from perfgate.reports.format import counted, value
from perfgate.reports.markup import cell, code


def _fingerprint_line(v: BaselineView) -> str:
    fp = v.fingerprint
    parts = [fp.describe()]
    for label, field in (
        ("ncu", fp.ncu),
        ("driver", fp.driver),
        ("clock control", fp.clock_control),
        ("cache control", fp.cache_control),
        # Which launches the captures held: launch counts and the program time compare only
        # within one scope (a hand-written one switches them off for captures of another).
        ("scope", fp.scope),
    ):
        if field:
            parts.append(f"{label} {field}")
    if fp.time_basis != "full":
        parts.append(f"time basis {fp.time_basis} (recorded from gate captures)")
    if fp.stall_family:
        parts.append(f"stalls: {fp.stall_family}, {len(fp.stall_reasons)} reasons")
    if fp.metrics:
        parts.append(f"{len(fp.metrics)} raw metrics")
    return ", ".join(parts)


def _provenance_line(v: BaselineView) -> str:
    p = v.provenance
    captures = p.get("captures")
    runs = len(captures) if isinstance(captures, list) else 0
    parts = [f"recorded {p.get('recorded_at', '?')} from {runs} capture{'s' if runs != 1 else ''}"]
    if p.get("reason"):
        parts.append(f"reason: {p['reason']}")
    if p.get("updated_at"):
        parts.append(
            f"updated {p['updated_at']}" + (f" by {p['updated_by']}" if p.get("updated_by") else "")
        )
    return "; ".join(parts)


def _rules_text(rules: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{what} {text}" for what, text in rules)


def _metric_text(m: MetricView) -> str:
    hand = " (hand-set)" if m.hand_set else ""
    bound = "" if m.bound == "categorical" else f" {m.bound}{hand}"
    shown = value(m.value, m.unit)
    exact = _exact(m.value)
    if exact not in shown.replace(",", ""):  # rounded for reading: the recorded value too
        shown += f" ({exact})"
    rules = f"; {_rules_text(m.rules)}" if m.rules else ""
    return f"{m.name} {shown}{bound}{rules}"


def _exact(v: float | str) -> str:
    return v if isinstance(v, str) else f"{v:.12g}"


def _history_text(h: HistoryEntry) -> str:
    who = f" by {h.by}" if h.by else ""
    action = f"{h.action} " if h.action else ""
    was = ", ".join(f"{k} {value(v)}" for k, v in h.previous.items())
    return f"{action}{h.date}{who}: {h.reason}" + (f" (was: {was})" if was else "")


def show_text(v: BaselineView) -> str:
    shown = len(v.kernels)
    plural = "s" if v.total_kernels != 1 else ""
    head = f"{v.path}: {_fingerprint_line(v)}; {v.total_kernels} kernel{plural}"
    if shown != v.total_kernels:
        head += f" ({shown} shown)"
    lines = [head, f"  {_provenance_line(v)}"]
    lines.extend(f"  {what}: {text}" for what, text in v.rules)
    lines.extend(f"  program history: {_history_text(h)}" for h in v.program_history)
    for k in v.kernels:
        launches = (
            f", {k.launches} launch{'es' if k.launches != 1 else ''} per run"
            if k.launches is not None
            else ""
        )
        lines.extend(("", f"{k.id}{launches}"))
        lines.extend(f"  {what}: {text}" for what, text in k.rules)
        lines.extend(_wrapped([_metric_text(m) for m in k.metrics]))
        lines.extend(f"  history: {_history_text(h)}" for h in k.history)
    return log_text(lines)


def _wrapped(items: list[str], width: int = 100) -> list[str]:
    """Items joined with ' · ' into lines of about `width` characters."""
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(line) + 3 + len(item) > width:
            lines.append(f"  {line}")
            line = item
        else:
            line = f"{line} · {item}" if line else item
    if line:
        lines.append(f"  {line}")
    return lines


def show_markdown(v: BaselineView) -> str:
    out = [
        f"### Baseline {code(v.path)}\n\n",
        f"{cell(_fingerprint_line(v))}; {counted(v.total_kernels, 'kernel')}. "
        f"{cell(_provenance_line(v))}.\n\n",
        *(f"- {cell(what)}: {cell(text)}\n" for what, text in v.rules),
        "\n| kernel | launches/run | gated values (bound) |\n|---|---|---|\n",
    ]
    for k in v.kernels:
        values = "<br>".join(
            [*(cell(f"{what}: {text}") for what, text in k.rules)]
            + [cell(_metric_text(m)) for m in k.metrics]
        )
        out.append(f"| {code(k.id)} | {'' if k.launches is None else k.launches} | {values} |\n")
    history = [("program GPU time", h) for h in v.program_history]
    history += [(k.id, h) for k in v.kernels for h in k.history]
    if history:
        out.append("\n**History**\n\n")
        out.extend(f"- {code(kid)}: {cell(_history_text(h))}\n" for kid, h in history)
    return "".join(out)


def _change_text(c: MetricChange) -> str:
    if c.before is None:
        return f"{c.metric}: now gated at {value(c.after, c.unit)} ({c.bound_after})"
    if c.after is None:
        return f"{c.metric}: no longer gated (was {value(c.before, c.unit)})"
    text = f"{c.metric}: {value(c.before, c.unit)} -> {value(c.after, c.unit)}"
    if c.relative is not None:
        text += f" ({c.relative:+.1%})"
    if c.bound_before != c.bound_after:
        text += f"; bound {c.bound_before} -> {c.bound_after}"
    text += "".join(f"; {what} {a} -> {b}" for what, a, b in c.rules)
    return text


def _kernel_lines(k: KernelChange, fmt: Callable[[str], str], all_values: bool) -> list[str]:
    if k.kind == "added":
        return [fmt(f"+ {k.id}: added")] + [fmt(f"    {_history_text(h)}") for h in k.history]
    if k.kind == "removed":
        return [fmt(f"- {k.id}: removed")]
    lines = [fmt(f"~ {k.id}")]
    if k.match:
        lines.append(fmt(f"    identity: {k.match[0]} -> {k.match[1]}"))
    if k.launches:
        lines.append(fmt(f"    launches per run: {k.launches[0]} -> {k.launches[1]}"))
    lines.extend(fmt(f"    {what}: {a} -> {b}") for what, a, b in k.rules)
    beyond = [c for c in k.metrics if c.beyond or all_values]
    lines.extend(fmt(f"    {_change_text(c)}") for c in beyond)
    within = len(k.metrics) - len(beyond)
    if within:
        more = f"{within} more changed within their bounds, the gate as it was"
        lines.append(fmt(f"    ({more}; --all lists them)"))
    lines.extend(fmt(f"    {_history_text(h)}") for h in k.history)
    return lines


def _summary(d: BaselineDiff) -> str:
    if d.identical:
        return f"{d.before} and {d.after} gate the same values"
    counts = {
        kind: sum(1 for k in d.kernels if k.kind == kind)
        for kind in ("changed", "added", "removed")
    }
    parts = [f"{n} {kind}" for kind, n in counts.items() if n]
    if d.fingerprint:
        parts.append("fingerprint changed")
    if d.thresholds:
        parts.append(f"{len(d.thresholds)} file-level settings changed")
    if d.program_history:
        parts.append("program GPU time taken")
    return f"{d.before} -> {d.after}: {', '.join(parts)}"


def _fingerprint_value(v: object) -> str:
    """A fingerprint field's value as written: unset as "-", a list joined."""
    if v is None:
        return "-"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


def diff_text(d: BaselineDiff, all_values: bool = False) -> str:
    lines = [_summary(d)]
    lines.extend(
        f"  fingerprint {f}: {_fingerprint_value(a)} -> {_fingerprint_value(b)}"
        for f, a, b in d.fingerprint
    )
    lines.extend(f"  {m}: {a} -> {b}" for m, a, b in d.thresholds)
    lines.extend(f"  program history: {_history_text(h)}" for h in d.program_history)
    for k in d.kernels:
        lines.extend(_kernel_lines(k, lambda s: s, all_values))
    return log_text(lines)


def diff_markdown(d: BaselineDiff, all_values: bool = False) -> str:
    out = [f"### {cell(_summary(d))}\n\n"]
    out.extend(
        f"- fingerprint {cell(f)}: {cell(_fingerprint_value(a))} → {cell(_fingerprint_value(b))}\n"
        for f, a, b in d.fingerprint
    )
    out.extend(f"- {cell(m)}: {cell(a)} → {cell(b)}\n" for m, a, b in d.thresholds)
    out.extend(f"- program history: {cell(_history_text(h))}\n" for h in d.program_history)
    if d.kernels:
        out.append("\n```diff\n")
        for k in d.kernels:
            out.extend(
                one_line(line).replace("```", "'''") + "\n"
                for line in _kernel_lines(k, lambda s: s, all_values)
            )
        out.append("```\n")
    return "".join(out)


SHOW = {"text": show_text, "markdown": show_markdown}
DIFF = {"text": diff_text, "markdown": diff_markdown}
