"""The level of the newest runs in what `history detect --drift` and `check --drift` say: the
line that names the mean of the newest runs, the JSON fields, and whether the flag counts
against the build (docs/history.md "Drift"). The series are made by hand: a kernel whose runs
alternate 4% apart, so one run may stand 8.5% above the median, then a step of 6% that only
the mean of three runs shows."""

from __future__ import annotations

import json

from perfgate.history import changepoints as cp
from perfgate.history import detect
from perfgate.history.detect_report import drift_lines, to_json
from perfgate.history.model import RunContext, RunFingerprint
from perfgate.metrics.thresholds import Direction
from tests.conftest import ROOT

H100 = RunFingerprint(gpu="NVIDIA H100 80GB HBM3")


def _point(i: int, value: float) -> detect.RunPoint:
    return detect.RunPoint(f"run-{i}", f"2026-11-26T10:{i:02d}:00", f"{i:040x}", "main", value,
                           "pass", None)  # fmt: skip


def _flag(level_ns: float, step: float) -> detect.DriftFlag:
    """A kernel of `level_ns` whose runs alternate 2% either side of it, then two runs and the
    judged one `step` above it."""
    values = [level_ns * f for f in (0.98, 1.02) * 15] + [level_ns * (1 + step)] * 2
    value = level_ns * (1 + step)
    result = cp.drift(values, value, Direction.HIGHER_IS_WORSE)
    assert result is not None and result.drifted
    points = tuple(_point(i, v) for i, v in enumerate(values))
    series = detect.KeptSeries(H100, "k", "kernel_k", "duration", "ns", points)
    run = _point(len(values), value)
    return detect.DriftFlag(series, run, result, detect.drift_gates("duration", result, value))


def test_a_level_flag_names_the_mean_of_the_newest_runs_and_its_limit() -> None:
    flag = _flag(50_000.0, 0.06)
    r = flag.result
    assert not r.alone and r.level is not None and r.level.drifted
    lines = drift_lines(flag)
    # The value alone: no judgement on its line, as it did not pass its limit. Its last 30
    # runs hold 14 at 49,000, 14 at 51,000 and the two stepped ones: a median of 51,000.
    assert lines[0] == (
        "  k duration: 53,000 ns against a median of 51,000 ns over the last 30 runs (+3.9%, "
        f"limit {r.limit * 100:.1f}%) on NVIDIA H100 80GB HBM3"
    )
    assert 0.06 < r.limit < 0.10
    assert lines[1] == (
        "    the mean of its last 3 runs: 53,000 ns against a median of 50,000 ns over the 30 "
        f"runs before them (+6.0%, limit {r.level.limit * 100:.1f}%, worse)"
    )
    assert lines[2] == "    pass; the check named no cause for this kernel in that run"


def test_a_flag_of_the_value_alone_says_worse_on_its_own_line() -> None:
    flag = _flag(50_000.0, 0.12)  # past one run's 8.5% too
    assert flag.result.alone
    first = drift_lines(flag)[0]
    assert first.startswith("  k duration: 56,000 ns against a median of 51,000 ns")
    assert first.endswith(
        f"(+9.8%, limit {flag.result.limit * 100:.1f}%, worse) on NVIDIA H100 80GB HBM3"
    )


def test_what_counts_is_the_move_of_the_level_that_flagged_it() -> None:
    # 6% of 50 us is 3 us: a kernel's time from 10 us counts; 6% of 4 us (240 ns) is within
    # the 1.5 us that short kernels move between machine starts: evidence only.
    assert _flag(50_000.0, 0.06).gates
    short = _flag(4_000.0, 0.06)
    assert not short.gates
    assert drift_lines(short)[1].endswith("(+6.0%, limit 5.7%, worse, evidence only)")


def test_the_json_keeps_the_level_as_judged() -> None:
    flag = _flag(50_000.0, 0.06)
    judged = RunContext(run_id="run-32", recorded_at="2026-11-26T10:32:00", commit=None,
                        branch="main")  # fmt: skip
    found = detect.Detected("main", 1, 32, (), (flag,), judged)
    (doc,) = json.loads(to_json(found))["drifts"]
    level = flag.result.level
    assert level is not None
    assert doc["alone"] is False
    assert doc["level"] == {
        "runs": 3, "mean": level.mean, "median": 50_000.0, "spread": level.spread,
        "reference": 30, "change": level.change, "limit": level.limit, "drifted": True,
    }  # fmt: skip
    assert doc["gates"] is True


def test_the_docs_show_the_lines_a_level_flag_prints() -> None:
    docs = (ROOT / "docs" / "history.md").read_text()
    assert "\n".join(drift_lines(_flag(50_000.0, 0.06))[:2]) in docs


def _gates_of(history: list[float], value: float) -> tuple[cp.DriftResult, bool]:
    result = cp.drift(history, value, Direction.HIGHER_IS_WORSE)
    assert result is not None and result.drifted
    return result, detect.drift_gates("duration", result, value)


def test_a_run_that_passed_alone_counts_by_its_own_move() -> None:
    # An 8 us kernel, flat, then 9.7 us twice and 9.4 us: the run alone is +17.5% (+1.4 us,
    # within the 1.5 us a short kernel's time moves: evidence only), the three runs' mean
    # +20% (+1.6 us, which would count).
    result, counts = _gates_of([8_000.0] * 30 + [9_700.0, 9_700.0], 9_400.0)
    assert result.alone and result.level is not None and result.level.drifted
    assert detect.gates("duration", result.level.median, result.level.mean)
    assert not counts
    points = tuple(_point(i, v) for i, v in enumerate([8_000.0] * 30 + [9_700.0, 9_700.0]))
    flag = detect.DriftFlag(detect.KeptSeries(H100, "k", "k", "duration", "ns", points),
                            _point(32, 9_400.0), result, counts)  # fmt: skip
    lines = drift_lines(flag)
    assert lines[0].endswith("(+17.5%, limit 8.4%, worse, evidence only) on NVIDIA H100 80GB HBM3")
    assert lines[1].endswith("over the 30 runs before them (+20.0%, limit 3.0%)")


def test_a_run_flagged_by_its_level_alone_counts_by_the_level_s_move() -> None:
    # Runs 6% either side of 8 us: one run may stand 25% off, three runs' mean 17%. Then
    # 9.7 us twice and 9.4 us: the mean +20% (+1.6 us, counts), the run +10.8% against the
    # median of its own last 30 (8.48 us: +0.92 us, would not count).
    result, counts = _gates_of([7_520.0, 8_480.0] * 15 + [9_700.0, 9_700.0], 9_400.0)
    assert not result.alone and result.level is not None and result.level.drifted
    assert not detect.gates("duration", result.median, 9_400.0)
    assert counts
