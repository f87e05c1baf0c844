"""The whole result for machines (`--json PATH`); its schema is schemas/result.schema.json."""

from __future__ import annotations

import json
import math
from typing import Any

from perfgate import __version__
from perfgate.compare import CheckResult, Comparison, Report, State
from perfgate.diagnosis import Diagnosis

SCHEMA_ID = "https://github.com/perfgate/perfgate/schemas/result.schema.json"


def _number(v: float | str | None) -> float | str | None:
    if isinstance(v, float) and not math.isfinite(v):
        return None  # JSON has no NaN or infinity
    return v


def _comparison(c: Comparison) -> dict[str, Any]:
    return {
        "kernel": c.kernel,
        "kernel_name": c.kernel_name,
        "metric": c.metric,
        "state": c.state.value,
        "baseline": _number(c.baseline),
        "current": _number(c.current),
        "unit": c.unit,
        "change": _number(c.change),
        "relative_change": _number(c.relative_change),
        "bound": c.bound,
        "message": c.message,
        "launches": c.launches,
        "baseline_shares": c.baseline_shares,
        "current_shares": c.current_shares,
    }


def diagnosis_dict(d: Diagnosis) -> dict[str, Any]:
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
                        "value": _number(e.value),
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


def _counts(comparisons: tuple[Comparison, ...] | list[Comparison]) -> dict[str, int]:
    out = {s.value: 0 for s in State}
    for c in comparisons:
        out[c.state.value] += 1
    return out


def _result(r: CheckResult) -> dict[str, Any]:
    return {
        "baseline": r.baseline_path,
        "gpu": r.baseline_gpu,
        "captures": list(r.capture_paths),
        "devices": list(r.devices),
        "warnings": list(r.warnings),
        "counts": _counts(r.comparisons),
        "comparisons": [_comparison(c) for c in r.ordered()],
        "diagnoses": {k: diagnosis_dict(d) for k, d in r.diagnoses.items()},
    }


def to_dict(report: Report) -> dict[str, Any]:
    code = int(report.exit_code)
    return {
        "$schema": SCHEMA_ID,
        "perfgate_version": __version__,
        "status": {0: "passed", 1: "failed"}.get(code, "error"),
        "exit_code": code,
        "problems": list(report.problems),
        "counts": _counts(report.comparisons),
        "results": [_result(r) for r in report.results],
    }


def render(report: Report) -> str:
    return json.dumps(to_dict(report), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
