"""`perfgate explain`: the diagnosis of each kernel of a capture, without a baseline."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from perfgate import __version__
from perfgate.causes.without_baseline import CaptureDiagnosis, ExplainResult
from perfgate.reports.escape import log_text
from perfgate.reports.format import counted, finite, value
from perfgate.reports.markup import cell, code


def diagnosis_dict(d: CaptureDiagnosis) -> dict[str, Any]:
    return {
        "kernel": d.kernel,
        "name": d.name,
        "launches": d.launches,
        "quadrant": d.quadrant,
        "findings": [
            {
                "rule": f.rule,
                "title": f.title,
                "detail": f.detail,
                "lever": f.lever,
                "evidence": [
                    {
                        "metric": e.metric,
                        "value": finite(e.value),
                        "unit": e.unit,
                        "source": e.source,
                    }
                    for e in f.evidence
                ],
            }
            for f in d.findings
        ],
        "not_evaluated": list(d.not_evaluated),
    }


def render_text(result: ExplainResult) -> str:
    lines = [
        f"perfgate explain: {counted(len(result.diagnoses), 'kernel')} in "
        + ", ".join(result.capture_paths)
    ]
    lines += [f"warning: {w}" for w in result.warnings]
    for d in result.diagnoses:
        quadrant = f" [{d.quadrant}]" if d.quadrant else ""
        lines += ["", f"{d.kernel} ({counted(d.launches, 'launch', 'launches')}){quadrant}"]
        if d.name != d.kernel:
            lines.append(f"  {d.name}")
        for f in d.findings:
            lines.append(f"  - {f.title}: {f.detail}")
            lines.append(f"    try: {f.lever}")
            cites = "; ".join(
                f"{e.metric} = {value(e.value, e.unit)} ({e.source})" for e in f.evidence
            )
            lines.append(f"    from: {cites}")
        if not d.findings:
            lines.append("  - no rule fired")
        lines += [f"  (not evaluated: {rule})" for rule in d.not_evaluated]
    return log_text(lines)


def render_markdown(result: ExplainResult) -> str:
    out = [f"### perfgate explain: {counted(len(result.diagnoses), 'kernel')}\n\n"]
    out.append("| Kernel | Speed of light | Top finding | Lever |\n|---|---|---|---|\n")
    for d in result.diagnoses:
        top = d.findings[0] if d.findings else None
        out.append(
            f"| {code(d.kernel)} | {cell(d.quadrant or '-')} "
            f"| {cell(top.title + ': ' + top.detail) if top else '-'} "
            f"| {cell(top.lever) if top else '-'} |\n"
        )
    return "".join(out)


def render_json(result: ExplainResult) -> str:
    doc = {
        "perfgate_version": __version__,
        "captures": list(result.capture_paths),
        "warnings": list(result.warnings),
        "diagnoses": [diagnosis_dict(d) for d in result.diagnoses],
    }
    return json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


RENDERERS: dict[str, Callable[[ExplainResult], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
