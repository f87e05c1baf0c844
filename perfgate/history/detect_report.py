"""`perfgate history detect`'s output: text for people, JSON for tools. Here rather than in
reports/: the formatters never import the history (docs/architecture.md)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from perfgate.common.escape import log_line
from perfgate.history.changepoints import Level
from perfgate.history.detect import ChangePoint, Detected, DriftFlag, RunPoint
from perfgate.history.model import RunContext


def _number(v: float) -> str:
    # Counters are whole numbers of up to 10^12 (sectors, instructions): every digit shown.
    if v.is_integer() and abs(v) < 1e15:
        return f"{v:,.0f}"
    return f"{v:,.6g}"


def _percent(change: float) -> str:
    if math.isinf(change):
        return "from 0"
    return f"{change * 100:+.1f}%"


def _run(p: RunPoint | RunContext) -> str:
    commit = f"commit {p.commit[:12]}" if p.commit else "no commit kept"
    return f"run {p.run_id} ({commit}, {p.recorded_at[:19]})"


def _cause(p: RunPoint) -> str:
    if p.finding is not None:
        return f"{p.kernel_state}: {p.finding.title}"
    return f"{p.kernel_state}; the check named no cause for this kernel in that run"


def _judgement(worse: bool, gates: bool) -> str:
    if not worse:
        return "better"
    return "worse" if gates else "worse, evidence only"


def _change_lines(c: ChangePoint) -> list[str]:
    s = c.series
    unit = f" {s.unit}" if s.unit else ""
    return [
        f"  {s.kernel} {s.metric}: {_number(c.before)} -> {_number(c.after)}{unit} "
        f"({_percent(c.change)}, {_judgement(c.worse, c.gates)}) from {_run(c.first)}, "
        f"run {c.index + 1} of {len(s.points)} on {s.fingerprint.describe()}",
        f"    {_cause(c.first)}",
    ]


def drift_lines(d: DriftFlag) -> list[str]:
    """One flagged series: the run's value against the branch's recent median, the level of
    its newest runs where that was flagged, and its finding in that run. The judgement (worse,
    or evidence only) sits on the line whose move decided it: the value's where it was flagged
    by itself (perfgate.history.detect.drift_gates)."""
    s, r = d.series, d.result
    unit = f" {s.unit}" if s.unit else ""
    judged = "worse" if d.gates else "worse, evidence only"
    lines = [
        f"  {s.kernel} {s.metric}: {_number(d.run.value)}{unit} against a median of "
        f"{_number(r.median)}{unit} over the last {r.runs} runs{_of_start(d)} "
        f"({_percent(r.change)}, limit "
        f"{r.limit * 100:.1f}%{', ' + judged if r.alone else ''}) on {s.fingerprint.describe()}",
    ]
    level = r.level
    if level is not None and level.drifted:
        lines.append(
            f"    the mean of its last {level.runs} runs: {_number(level.mean)}{unit} against a "
            f"median of {_number(level.median)}{unit} over the {level.reference} runs before "
            f"them ({_percent(level.change)}, limit {level.limit * 100:.1f}%"
            f"{'' if r.alone else ', ' + judged})"
        )
    return [*lines, f"    {_cause(d.run)}"]


def _of_start(d: DriftFlag) -> str:
    return " of its machine start" if d.own_start else ""


def _branch(found: Detected) -> str:
    return f"branch {found.branch}" if found.branch is not None else "every branch"


def text(found: Detected) -> str:
    lines: list[str] = []
    if found.judged is not None:
        head = (
            f"{len(found.drifts)} of {found.series} metrics of {_run(found.judged)} beyond "
            f"the recent history of {_branch(found)} ({found.runs} earlier runs)"
        )
        lines.append(f"perfgate history detect --drift: {head}")
        for d in found.drifts:
            lines += drift_lines(d)
    else:
        n = len(found.change_points)
        lines.append(
            f"perfgate history detect: {n} change point{'s' if n != 1 else ''} in "
            f"{found.series} series over {found.runs} runs of {_branch(found)}"
        )
        for c in found.change_points:
            lines += _change_lines(c)
    return "\n".join(log_line(line) for line in lines) + "\n"


def _point(p: RunPoint) -> dict[str, Any]:
    doc = asdict(p)
    doc["finding"] = asdict(p.finding) if p.finding is not None else None
    return doc


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _level(level: Level | None) -> dict[str, Any] | None:
    if level is None:
        return None
    doc = asdict(level)
    doc["change"] = _finite(level.change)
    return doc


def to_json(found: Detected) -> str:
    doc: dict[str, Any] = {
        "branch": found.branch,
        "series": found.series,
        "runs": found.runs,
        "failing": found.failing,
        "change_points": [
            {
                "kernel": c.series.kernel,
                "name": c.series.name,
                "metric": c.series.metric,
                "unit": c.series.unit,
                "fingerprint": asdict(c.series.fingerprint),
                "index": c.index,
                "runs": len(c.series.points),
                "before": c.before,
                "after": c.after,
                "change": _finite(c.change),
                "worse": c.worse,
                "gates": c.gates,
                "first_run": _point(c.first),
            }
            for c in found.change_points
        ],
    }
    if found.judged is not None:
        doc["judged_run"] = asdict(found.judged)
        doc["drifts"] = [
            {
                "kernel": d.series.kernel,
                "name": d.series.name,
                "metric": d.series.metric,
                "unit": d.series.unit,
                "fingerprint": asdict(d.series.fingerprint),
                "value": d.run.value,
                "median": d.result.median,
                "spread": d.result.spread,
                "runs": d.result.runs,
                "change": _finite(d.result.change),
                "limit": d.result.limit,
                "alone": d.result.alone,
                "own_machine_start": d.own_start,
                "level": _level(d.result.level),
                "gates": d.gates,
                "finding": _point(d.run)["finding"],
            }
            for d in found.drifts
        ]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
