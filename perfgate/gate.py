"""The gate's use cases on plain data: check a capture, record a baseline. The CLI builds the
settings; this module never touches click."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.baseline import dump_baseline, load_baseline
from perfgate.compare import CheckResult, CheckSettings, check
from perfgate.fileio import write_text_atomic
from perfgate.ingest import MetricSelection, read_captures
from perfgate.record import RecordResult, RecordSettings, record


@dataclass(frozen=True)
class CheckRequest:
    baseline: str
    captures: tuple[str, ...]
    report_new_kernels: bool = True


@dataclass(frozen=True)
class RecordRequest:
    captures: tuple[str, ...]
    output: str
    settings: RecordSettings


def run_check(request: CheckRequest) -> CheckResult:
    baseline = load_baseline(request.baseline)
    # Read only the columns the baseline's metrics can use: a --set full capture has ~2,000.
    capture = read_captures(request.captures, MetricSelection(baseline.raw_metrics()))
    return check(baseline, capture, CheckSettings(report_new_kernels=request.report_new_kernels))


def run_record(request: RecordRequest) -> RecordResult:
    capture = read_captures(request.captures)
    result = record(capture, request.settings)
    write_text_atomic(request.output, dump_baseline(result.baseline))
    return result
