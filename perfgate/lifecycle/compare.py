"""`perfgate compare BEFORE AFTER`: two captures and no baseline file. The baseline is recorded
from BEFORE in memory, as `perfgate baseline record` would write it (the catalog's default
metrics, each with the noise model's default bound; one run calibrates nothing), and AFTER is
checked against it as `perfgate check` checks: same judgement, same reports, same exit codes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.load import parse_baseline
from perfgate.baseline.model import Baseline
from perfgate.ingest import read_captures
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.values import check_values


def recorded(capture_files: Sequence[str]) -> Baseline:
    """The baseline `baseline record -c BEFORE...` would write, never written: named after the
    first capture (reports say "Baseline BEFORE.csv"), with no line of a file to point at."""
    capture = read_captures(capture_files)
    check_values(capture)
    result = record(capture, RecordSettings(reason="perfgate compare"))
    # Through the file format and back, so that it is judged exactly as the written one would be.
    baseline = parse_baseline(dump_baseline(result.baseline), capture_files[0])
    return replace(baseline, kernels=tuple(replace(k, line=None) for k in baseline.kernels))
