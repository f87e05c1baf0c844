"""`perfgate explain`: the diagnosis of a capture's kernels, without a baseline."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.causes.without_baseline import ExplainResult, diagnose, raw_inputs
from perfgate.identity.grouping import group_launches, readable_ids, select
from perfgate.ingest import MetricSelection, read_captures
from perfgate.metrics.values import check_values
from perfgate.usecases.choices import ExplainFormat
from perfgate.usecases.console import Document, Outcome


@dataclass(frozen=True)
class ExplainRequest:
    capture_files: tuple[str, ...]
    kernel_patterns: tuple[str, ...] = ()


def run_explain(request: ExplainRequest) -> ExplainResult:
    capture = read_captures(request.capture_files, MetricSelection(raw_inputs()))
    check_values(capture)
    launches = select(capture.launches, request.kernel_patterns)
    groups = group_launches(launches)
    ids = readable_ids([g.key for g in groups])
    diagnoses = tuple(diagnose(ids[g.key], list(g.launches), capture.columns) for g in groups)
    return ExplainResult(capture.paths, diagnoses, capture.warnings)


def explain_outcome(request: ExplainRequest, fmt: ExplainFormat) -> Outcome:
    from perfgate.reports import explain

    return Outcome((Document(explain.RENDERERS[fmt.value](run_explain(request))),))
