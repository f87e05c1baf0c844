"""The whole-program GPU time's rules, one function at a time (perfgate/metrics/program.py,
perfgate/lifecycle/program.py, perfgate/verdicts/program.py; docs/noise.md "Whole-program
time"). Launches are a real launch of a real capture (tests/data/field/h100/h100-a) with its
time and source file replaced: synthetic, derived from a real one."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from perfgate.baseline.model import (
    Baseline,
    KernelBaseline,
    KernelMatch,
    MetricBaseline,
    ProgramBaseline,
)
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.states import KernelState
from perfgate.lifecycle.program import FLOOR, FLOORS, program_bound, record_program
from perfgate.metrics.program import GPU_TIME, time_in, time_per_run
from perfgate.verdicts.program import judge_program, recorded_time
from tests.conftest import ROOT


@cache
def _real() -> Launch:
    path = ROOT / "tests" / "data" / "field" / "h100" / "h100-a" / "gemms-run1.csv.gz"
    return read_capture(path).launches[0]


def _launch(source: str, ns: float | None, index: int = 0) -> Launch:
    metrics = {k: v for k, v in _real().metrics.items() if k != GPU_TIME}
    if ns is not None:
        metrics[GPU_TIME] = ns
    return replace(_real(), metrics=metrics, source=source, index=index)


def _capture(*files: tuple[str, tuple[float | None, ...]]) -> Capture:
    launches = tuple(_launch(path, ns, i) for path, times in files for i, ns in enumerate(times))
    return Capture(tuple(p for p, _ in files), launches, frozenset({GPU_TIME}))


# ------------------------------------------------------------------ per capture file


def test_each_file_sums_its_own_launches_from_zero() -> None:
    cap = _capture(("a", (100.0, 50.0)), ("b", (30.0,)))
    assert time_per_run(cap.launches, cap.paths) == (150.0, 30.0)


def test_a_file_with_an_untimed_launch_or_no_launch_has_no_total() -> None:
    cap = _capture(("a", (100.0, None)), ("b", (30.0,)))
    assert time_per_run(cap.launches, ("a", "b", "c")) == (None, 30.0, None)


def test_time_in_counts_only_that_files_timed_launches() -> None:
    launches = [_launch("a", 10.0), _launch("a", None), _launch("b", 7.0)]
    assert time_in(launches, "a") == 10.0
    assert time_in(launches, "b") == 7.0
    assert time_in(launches, "c") == 0.0


# ------------------------------------------------------------------ the bound


def test_the_bound_is_twice_the_spread_of_the_runs_rounded_to_four_places() -> None:
    # fastest 1000, slowest 1061.7284: spread 6.17284%, twice that 12.34568% -> 0.1235.
    bound, rule = program_bound((1061.7284, 1000.0, 1030.0))
    assert bound == 0.1235
    assert "3 runs" in rule and "= 12.35%" in rule


def test_a_steady_program_gets_the_cross_start_floor() -> None:
    assert program_bound((1000.0, 1001.0))[0] == FLOOR


def test_the_program_floor_is_the_gpus_and_another_kind_gets_the_widest() -> None:
    h100 = program_bound((1000.0, 1001.0), "NVIDIA H100 80GB HBM3")
    h200 = program_bound((1000.0, 1001.0), "NVIDIA H200")
    other = program_bound((1000.0, 1001.0), "NVIDIA A100-SXM4-80GB")
    assert h100[0] < h200[0] == other[0] == max(FLOORS.values())
    assert "on H100" in h100[1] and "on H200" in other[1]


@pytest.mark.parametrize("runs", [(0.0, 0.0), (0.5, 0.6)])
def test_totals_under_one_ns_are_still_a_spread_and_zero_is_none(runs: tuple[float, ...]) -> None:
    bound = program_bound(runs)[0]
    expected = FLOOR if runs[0] == 0.0 else round(2 * (0.6 - 0.5) / 0.5, 4)
    assert bound == expected


def test_record_writes_nothing_when_a_file_has_an_untimed_launch() -> None:
    assert record_program(_capture(("a", (100.0,)), ("b", (100.0, None)))) is None
    recorded = record_program(_capture(("a", (100.0,)), ("b", (104.0,))))
    assert recorded is not None
    assert recorded.value == 100.0 and recorded.runs == (100.0, 104.0)
    assert recorded.relative == 0.08  # twice the 4% spread, above the 2% floor


# ------------------------------------------------------------------ judging


def _kernel(launches: int | None, **values: float) -> KernelBaseline:
    metrics = tuple(MetricBaseline(name, value) for name, value in values.items())
    return KernelBaseline("k", KernelMatch(name="k"), metrics, launches=launches)


def test_a_missing_kernels_time_is_its_total_else_launches_times_duration() -> None:
    assert recorded_time(_kernel(3, total_time=900.0, duration=100.0)) == 900.0
    assert recorded_time(_kernel(3, duration=100.0)) == 300.0
    assert recorded_time(_kernel(None, duration=100.0)) == 100.0
    assert recorded_time(_kernel(2)) == 0.0


def _baseline(value: float, relative: float) -> Baseline:
    return Baseline((), program=ProgramBaseline(value, relative, (value,)))


def test_the_fastest_capture_file_is_judged() -> None:
    cap = _capture(("slow", (110.0,)), ("fast", (101.0,)))
    verdict = judge_program(_baseline(100.0, 0.05), cap, [], [])
    assert verdict.state is KernelState.PASS and verdict.current == 101.0


def test_no_timed_file_is_incomplete_with_the_reason() -> None:
    # The baseline gates the program time and no file can give it: incomplete, as a kernel
    # whose gated metric is absent (it fails under the default policy), never skipped.
    cap = _capture(("a", (None,)))
    verdict = judge_program(_baseline(100.0, 0.05), cap, [], [])
    assert verdict.state is KernelState.INCOMPLETE
    assert "gpu__time_duration.sum" in verdict.reason and verdict.baseline == 100.0
