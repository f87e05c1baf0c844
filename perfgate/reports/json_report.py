"""The whole result for machines (`--json PATH`); its schema is schemas/result.schema.json."""

from __future__ import annotations

import json
import re
from typing import Any

from perfgate import __version__
from perfgate.causes.changes import ChangeFinding
from perfgate.causes.model import RootCause
from perfgate.judge.comparison import Comparison
from perfgate.judge.policy import EXIT_WORDS
from perfgate.judge.skips import describe
from perfgate.judge.states import KernelState
from perfgate.reports.format import finite, noted_count
from perfgate.reports.summary import program_text
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict, Report

SCHEMA_ID = "https://github.com/perfgate/perfgate/schemas/result.schema.json"


def _shares(shares: Any) -> dict[str, float] | None:
    if shares is None:
        return None
    return {k: x for k, v in shares.items() if (x := finite(v)) is not None}  # type: ignore[misc]


def _comparison(c: Comparison) -> dict[str, Any]:
    return {
        "metric": c.metric,
        "state": c.state.value,
        "baseline": finite(c.baseline),
        "current": finite(c.current),
        "unit": c.unit,
        "change": finite(c.change),
        "relative_change": finite(c.relative_change),
        "bound": c.bound,
        "message": c.message,
        "explained": c.explained,
        "baseline_shares": _shares(c.baseline_shares),
        "current_shares": _shares(c.current_shares),
        "skip": c.skip.value if c.skip is not None else None,
    }


def _cause(c: RootCause) -> dict[str, Any]:
    return {
        "mechanism": c.mechanism,
        "kind": c.kind.value,
        "title": c.title,
        "detail": c.detail,
        "lever": c.lever,
        "explains": list(c.explains),
        "evidence": [
            {
                "metric": e.metric,
                "before": finite(e.before),
                "after": finite(e.after),
                "unit": e.unit,
                "raw": list(e.raw),
            }
            for e in c.evidence
        ],
    }


def _verdict(v: KernelVerdict) -> dict[str, Any]:
    return {
        "kernel": v.kernel,
        "name": v.name,
        "state": v.state.value,
        "family": v.family,
        "nvtx": v.nvtx,
        "matched_by": v.matched_by,
        "message": v.message,
        "related": list(v.related),
        "captures": list(v.captures),
        "launches": None
        if v.launches is None
        else {"baseline": finite(v.launches.baseline), "current": list(v.launches.current)},
        "causes": [_cause(c) for c in v.causes],
        "comparisons": [_comparison(c) for c in v.comparisons],
    }


def _counts(verdicts: tuple[KernelVerdict, ...]) -> dict[str, int]:
    out = {s.value: 0 for s in KernelState}
    for v in verdicts:
        out[v.state.value] += 1
    return out


def _program(p: ProgramVerdict | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "state": p.state.value,
        "baseline_ns": p.baseline,
        "current_ns": p.current,
        "change": p.change,
        "bound": p.bound,
        "runs_ns": list(p.runs),
        "new_kernels_ns": p.new_time,
        "missing_kernels_ns": p.missing_time,
        "reason": p.reason,
        "skip": p.skip.value if p.skip is not None else None,
        "text": program_text(p),
    }


def _change(c: ChangeFinding) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "title": c.title,
        "replaced": [{"name": n, "launches": x} for n, x in c.replaced],
        "by": [{"name": n, "launches": x} for n, x in c.by],
        "replaced_kernels": c.replaced_kernels,
        "by_kernels": c.by_kernels,
        "before_ns": finite(c.before_ns),
        "after_ns": finite(c.after_ns),
        "lever": c.lever,
        "members": list(c.members),
        "recounted": list(c.recounted),
    }


def _result(r: CheckResult) -> dict[str, Any]:
    return {
        "baseline": r.baseline_path,
        "gpu": r.baseline_gpu,
        "captures": list(r.capture_paths),
        "devices": list(r.devices),
        "warnings": list(r.warnings),
        "notice": r.notice,
        "counts": _counts(r.verdicts),
        "noted": noted_count(r.verdicts),
        "kernels": [_verdict(v) for v in r.ordered()],
        "program": _program(r.program),
        "changes": [_change(c) for c in r.changes],
    }


def to_dict(report: Report) -> dict[str, Any]:
    code = int(report.exit_code)
    return {
        "$schema": SCHEMA_ID,
        "perfgate_version": __version__,
        "status": EXIT_WORDS[report.exit_code].json,
        "exit_code": code,
        "problems": list(report.problems),
        "notes": list(report.notes),
        "counts": _counts(report.verdicts),
        "noted": noted_count(report.verdicts),
        "root_causes": report.cause_count,
        "not_judged": [
            {
                "reason": n.skip.value,
                "fails": n.fails,
                "metrics": list(n.metrics),
                "kernels": n.kernels,
                "comparisons": n.comparisons,
                "program": n.program,
                "text": describe(n.skip, n.fails, n.metrics, n.kernels, n.program),
            }
            for n in report.not_judged()
        ],
        "results": [_result(r) for r in report.results],
    }


# A lone surrogate: a byte of a kernel name that is not UTF-8 (NVIDIA's ncu_report hands one
# over as U+DC80-U+DCFF). No UTF-8 file or stream holds one, and JSON's own escape of it
# ("\\udcff") is no character either; it is written as the visible text the other reports
# show (common.escape.one_line): a backslash, "u" and four hex digits.
_SURROGATE = re.compile("[\ud800-\udfff]")


def render(report: Report) -> str:
    text = json.dumps(to_dict(report), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    return _SURROGATE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", text)
