"""Tests written for the survivors of `python scripts/mutate.py --select pooled` (docs/mutation.md
"A baseline from several machine starts"): the parts of the pooled rule, and of the check's
time bounds and autotuner's choice, the first tests left open. Real captures
(tests/data/field/gate/ and the full captures of tests/data/field/h100/, each start's folder its
machine start, as benchmarks/detection.py `_baseline` names them), a capture or a baseline
changed by hand where none reaches an edge (each such test says so), and hand values for the
pure functions.
Expected values come from the captures' raw rows (gzip and csv alone) and the rule as
docs/noise.md "A baseline from several machine starts" states it, never from the baseline
under test."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.ingest import read_captures
from perfgate.lifecycle.calibrate import calibrate_pooled
from perfgate.lifecycle.pooled import pooled_value
from perfgate.lifecycle.program import pooled_program
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.catalog import lookup
from perfgate.metrics.timefloors import program_floor, time_floor_at, two_run_floor_at
from tests.conftest import ROOT
from tests.lifecycle.test_pooled import TIME, number, pooled_capture, raw_launches

FIELD = ROOT / "tests" / "data" / "field"
GATE = FIELD / "gate"
FULL = FIELD / "h100"
H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
# The rule's factor on the largest distance of a start from the median (docs/noise.md).
ACROSS_K = 1.15
INSTRUCTIONS = "smsp__inst_executed.sum"
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def files(folder: Path, starts: Sequence[str], workload: str) -> list[Path]:
    found = [p for s in starts for p in sorted((folder / s).glob(f"{workload}-run*.csv.gz"))]
    assert len({p.parent.name for p in found}) == len(starts), found
    return found


def grid(kernel: KernelBaseline) -> str:
    assert kernel.match.grid is not None
    return str(tuple(kernel.match.grid))


def rows_of(path: Path, kernel: KernelBaseline) -> list[dict[str, str]]:
    assert kernel.match.name is not None
    return [
        r for r in raw_launches(path)
        if r["Kernel Name"] == kernel.match.name and r["Grid Size"] == grid(kernel)
    ]  # fmt: skip


def by_start(
    paths: Sequence[Path], kernel: KernelBaseline
) -> dict[str, list[list[dict[str, str]]]]:
    """Each start's runs, each run the kernel's raw rows in that file."""
    out: dict[str, list[list[dict[str, str]]]] = {}
    for p in paths:
        out.setdefault(p.parent.name, []).append(rows_of(p, kernel))
    return out


def exact(starts: dict[str, list[list[dict[str, str]]]]) -> bool:
    """Whether the kernel is exact: its runs' instruction counts (the median over each run's
    launches) differ by less than 0.1% (docs/noise.md; a kernel that is not exact adds its
    spread to its time's floor under 20 us)."""
    counts = [
        statistics.median(number(r[INSTRUCTIONS]) for r in run)
        for runs in starts.values() for run in runs
    ]  # fmt: skip
    return spread(counts) < 0.001


def metric(kernel: KernelBaseline, name: str) -> MetricBaseline:
    return next(m for m in kernel.metrics if m.name == name)


def only(baseline: Baseline, prefix: str) -> KernelBaseline:
    found = [k for k in baseline.kernels if (k.match.name or "").startswith(prefix)]
    assert len(found) == 1, [k.id for k in baseline.kernels]
    return found[0]


def spread(values: Sequence[float]) -> float:
    """(max - min) / median, as docs/noise.md defines a spread of runs."""
    return (max(values) - min(values)) / statistics.median(values)


# --------------------------------------------------------------- calibrate_pooled, pooled_value


def test_a_spread_equal_to_the_floor_is_named_the_floor() -> None:
    """2 x the spread within a start exactly at the floor (2.75% x 2 = 5.5%, a 50 us H200
    kernel's floor): the bound is that value and the rule names the floor, as a one-start
    record's does where the spread does not pass the floor."""
    assert time_floor_at(50_000.0, H200) == 0.055 == 2 * 0.0275
    cal = calibrate_pooled(
        lookup("duration"), 6, 0.0275, 0.0, 50_000.0, 50_000.0, gpu=H200, starts=3
    )
    assert cal.relative == 0.055
    assert cal.rule.endswith(": floor 5.50%"), cal.rule


def test_a_median_of_zero_has_no_distance_across_starts() -> None:
    """Two starts of three read 0 and one 4: the median is 0, from which no start has a relative
    distance; the across part is 0, not 100%."""
    got = pooled_value([0.0, 0.0, 4.0], [(0.0, 0.0), (0.0, 0.0), (2.0, 6.0)], [])
    assert got.value == 0.0 and got.across == 0.0 and got.within == 0.0


# ----------------------------------------------------------------------------- pooled_program


def test_the_pooled_program_spread_counts_only_starts_of_two_runs_or_more() -> None:
    """Start A ran 100 and 104 (spread 4/100 = 4%: over its fastest run), B 110 once, C 95, 99.75
    and 97 (4.75/95 = 5%): the spread within a start is the median over A and C, 4.5%, B's single
    run left out; the value the median of 100, 110, 95 = 100; the largest distance 10% (B).
    2 x 4.5% = 9% and the 2% floor are below 1.15 x 10% = 11.5%, which sets the bound."""
    runs = (100.0, 104.0, 110.0, 95.0, 99.75, 97.0)
    starts = ("A", "A", "B", "C", "C", "C")
    value, bound, rule = pooled_program(runs, starts, H100, ACROSS_K)
    assert value == 100.0
    assert "spread within a start 4.50%" in rule and "across starts 10.00% x 1.15" in rule
    assert bound == round(ACROSS_K * 0.10, 4) == 0.115
    assert rule.startswith("3 machine starts, 6 runs") and rule.endswith("= 11.50%")


def test_the_pooled_program_bound_can_be_twice_the_spread_rounded_to_four_digits() -> None:
    """Two starts of two runs: spreads 3% and 3.4567% (over each start's fastest run), their
    median 3.22835%; the value the median of 100 and 100.5; the largest distance 0.25%. The
    bound: 2 x 3.22835% = 6.4567%, written with four digits, 0.0646."""
    runs = (100.0, 103.0, 100.5, 100.5 * 1.034567)
    value, bound, rule = pooled_program(runs, ("A", "A", "B", "B"), H100, ACROSS_K)
    within = statistics.median([0.03, 0.034567])
    assert value == pytest.approx(100.25)
    assert bound == round(2 * within, 4) == 0.0646
    assert f"spread within a start {within:.2%}" in rule
    assert rule.endswith(f"= {2 * within:.2%}")


def test_the_pooled_program_of_single_runs_has_no_spread_within_a_start() -> None:
    """Three starts of one run each: no spread within a start (0%), so the floor or the distance
    across starts sets the bound; here the H100 floor of 2% (distances 0.5% x 1.15)."""
    value, bound, rule = pooled_program((200.0, 201.0, 199.0), ("A", "B", "C"), H100, ACROSS_K)
    assert value == 200.0
    assert "spread within a start 0.00%" in rule
    assert bound == program_floor(H100) == 0.02


def test_the_pooled_program_skips_a_start_whose_fastest_total_is_zero() -> None:
    """A start whose fastest run totals 0 (no time) has no relative spread and the median
    (0 here) no relative distance: neither divides by zero, and the one start of two timed runs
    gives the spread (2%)."""
    runs = (0.0, 5.0, 0.0, 100.0, 102.0)
    value, bound, rule = pooled_program(runs, ("A", "A", "B", "C", "C"), H100, ACROSS_K)
    assert value == 0.0
    assert "spread within a start 2.00%" in rule and "across starts 0.00%" in rule
    assert bound == round(max(2 * 0.02, program_floor(H100)), 4) == 0.04


def test_a_program_whose_starts_differ_more_than_its_runs_is_bounded_by_the_distance() -> None:
    """Four H100 starts of Inductor's max-autotune program (full captures, h100-a to h100-d):
    each start's fastest total (every launch's gpu__time_duration.sum of a file, summed here from
    the raw rows), the median of those, and a bound of 1.15 x the largest distance of a start
    from it, which passes both 2 x the spread within a start and the 2% floor."""
    paths = files(FULL, ("h100-a", "h100-b", "h100-c", "h100-d"), "compile-max-autotune")
    totals: dict[str, list[float]] = {}
    for p in paths:
        totals.setdefault(p.parent.name, []).append(sum(number(r[TIME]) for r in raw_launches(p)))
    fastest = [min(t) for t in totals.values()]
    value = statistics.median(fastest)
    across = max(abs(f / value - 1) for f in fastest)
    within = statistics.median((max(t) - min(t)) / min(t) for t in totals.values() if len(t) >= 2)
    assert ACROSS_K * across > max(2 * within, program_floor(H100))
    program = record(pooled_capture(paths), RecordSettings()).baseline.program
    assert program is not None and program.calibration is not None
    assert program.value == value
    assert program.relative == round(ACROSS_K * across, 4)
    assert f"across starts {across:.2%} x 1.15" in program.calibration


# --------------------------------------------------------------- _pooled_metric, on real captures


@pytest.fixture(scope="module")
def h200_gemms() -> tuple[list[Path], Baseline]:
    paths = files(GATE, ("h200-f", "h200-g", "h200-h"), "gemms")
    return paths, record(pooled_capture(paths), RecordSettings()).baseline


def test_an_exact_metric_whose_runs_agree_gets_no_bound_of_its_own(
    h200_gemms: tuple[list[Path], Baseline],
) -> None:
    """Registers per thread and launches per capture, the same in every raw row and file of a
    kernel over three starts: recorded without a bound or a rule (the catalog's exact default),
    as one start's record leaves them."""
    paths, baseline = h200_gemms
    checked = 0
    for kernel in baseline.kernels:
        starts = by_start(paths, kernel)
        counts = {len(run) for runs in starts.values() for run in runs}
        registers = {r["launch__registers_per_thread"] for rs in starts.values() for run in rs
                     for r in run}  # fmt: skip
        if len(counts) != 1 or len(registers) != 1:
            continue
        for name in ("registers_per_thread", "launches"):
            m = metric(kernel, name)
            assert m.threshold is None and m.calibration is None, (kernel.id, name, m)
        checked += 1
    assert checked >= 8


def test_instructions_that_never_differ_keep_the_nearly_exact_floor(
    h200_gemms: tuple[list[Path], Baseline],
) -> None:
    """A kernel whose every launch of every run executed the same instructions: its instruction
    count is bounded by the 1% floor of an exact count (docs/noise.md), not the 2.5% of a count
    whose recorded runs differ."""
    paths, baseline = h200_gemms
    checked = 0
    for kernel in baseline.kernels:
        counts = {
            number(r[INSTRUCTIONS]) for runs in by_start(paths, kernel).values()
            for run in runs for r in run
        }  # fmt: skip
        if len(counts) != 1:
            continue
        m = metric(kernel, "instructions_executed")
        assert m.value == counts.pop()
        assert m.threshold is not None and m.threshold.relative == 0.01, (kernel.id, m)
        assert m.calibration is not None and m.calibration.endswith(": floor 1.00%")
        checked += 1
    assert checked >= 5


def test_a_launch_range_bounds_a_median_metric(h200_gemms: tuple[list[Path], Baseline]) -> None:
    """The nvjet GEMM's DRAM bytes (read + write, the median over a start's launches) vary by
    a factor of two between its launches of one run: the bound is the launch range (docs/noise.md:
    the largest of the parts, the launch range among them), each start's smallest and largest
    launch relative to its own value, the median over starts, high minus low."""
    paths, baseline = h200_gemms
    kernel = only(baseline, "nvjet_sm90_hsh_128x64_64x8_1x2_h_bz_NNT")
    lows, highs, values = [], [], []
    for runs in by_start(paths, kernel).values():
        dram = [sum(number(r[c]) for c in DRAM) for run in runs for r in run]
        v = statistics.median(dram)
        values.append(v)
        lows.append(min(dram) / v)
        highs.append(max(dram) / v)
    launch_range = statistics.median(highs) - statistics.median(lows)
    assert launch_range > 0.5
    m = metric(kernel, "dram_bytes")
    assert m.value == statistics.median(values)
    assert m.threshold is not None and m.threshold.relative == round(launch_range, 4)
    assert m.calibration is not None
    assert m.calibration.endswith(f": launch range {launch_range:.2%}, absolute 65536")


def test_a_duration_is_not_bounded_by_its_launch_range() -> None:
    """A time is the fastest launch, not a median over launches: its slower launches are no
    noise of it. Three H100 starts of the gemms workload (h100-k, o, p, two runs each): every
    exact kernel has the bound max(2 x the median spread within a start,
    1.15 x the largest distance across starts, the H100 floor), computed from the raw rows; for
    some kernel its launch range is wider than that bound."""
    paths = files(GATE, ("h100-k", "h100-o", "h100-p"), "gemms")
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    wider = 0
    for kernel in baseline.kernels:
        starts = by_start(paths, kernel)
        if kernel.tuned or not exact(starts):
            continue
        fastest = {s: [min(number(r[TIME]) for r in run) for run in rs] for s, rs in starts.items()}
        values = [min(v) for v in fastest.values()]
        value = statistics.median(values)
        within = statistics.median(spread(v) for v in fastest.values())
        across = max(abs(v / value - 1) for v in values)
        want = round(max(2 * within, ACROSS_K * across, time_floor_at(value, H100)), 4)
        duration = metric(kernel, "duration")
        assert duration.value == value
        assert duration.threshold is not None and duration.threshold.relative == want, kernel.id
        slowest = [
            max(number(r[TIME]) for run in rs for r in run) / min(v)
            for rs, v in zip(starts.values(), fastest.values(), strict=True)
        ]
        wider += statistics.median(slowest) - 1 > want
    assert wider >= 1


def test_three_runs_of_two_starts_are_calibrated_with_the_spread_of_the_start_of_two() -> None:
    """h200-f's two gemms runs and h200-g's first: three runs, enough to calibrate; the spread
    within a start is h200-f's alone (a start of one run has none), which the rule names; the
    bound max(2 x it, 1.15 x the distance, the floor) for every kernel of 20 us or more."""
    paths = [*files(GATE, ("h200-f",), "gemms"), files(GATE, ("h200-g",), "gemms")[0]]
    assert len(paths) == 3
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    long, spread_shown = 0, 0
    for kernel in baseline.kernels:
        starts = by_start(paths, kernel)
        f = [min(number(r[TIME]) for r in run) for run in starts["h200-f"]]
        g = [min(number(r[TIME]) for r in run) for run in starts["h200-g"]]
        value = statistics.median([min(f), min(g)])
        if kernel.tuned or value < 20_000.0:
            continue
        within = spread(f)
        across = max(abs(min(f) / value - 1), abs(min(g) / value - 1))
        duration = metric(kernel, "duration")
        assert duration.calibration is not None and duration.threshold is not None
        assert duration.calibration.startswith(
            f"2 machine starts, 3 runs: the median of the starts; spread within a start "
            f"{within:.2%} x 2"
        ), (kernel.id, duration.calibration)
        want = round(max(2 * within, ACROSS_K * across, time_floor_at(value, H200)), 4)
        assert duration.threshold.relative == want, kernel.id
        long += 1
        spread_shown += f"{within:.2%}" != f"{within / 2:.2%}"
    assert long >= 4 and spread_shown >= 1


def test_an_exact_count_that_differs_between_runs_is_calibrated() -> None:
    """CUB's DeviceCompactInitKernel of the moe family ran 3 times a run, 5 in h100-m's third run
    (its routing): launches per capture, an exact metric, took two values over the ten runs of
    h100-m, n, q and r, so the record calibrates it over the starts: each start's value the
    median of its runs' counts, a bound of 0% here (every start's value is 3; h100-m's spread
    of 67% is outvoted by q's and r's 0%)."""
    paths = files(GATE, ("h100-m", "h100-n", "h100-q", "h100-r"), "moe")
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    kernel = only(baseline, "void scan::DeviceCompactInitKernel")
    counts = {s: [float(len(run)) for run in rs] for s, rs in by_start(paths, kernel).items()}
    assert len({c for cs in counts.values() for c in cs}) == 2
    values = [statistics.median(c) for c in counts.values()]
    value = statistics.median(values)
    within = statistics.median(spread(c) for c in counts.values() if len(c) >= 2)
    across = max(abs(v / value - 1) for v in values)
    m = metric(kernel, "launches")
    assert m.value == value == 3.0
    assert m.calibration is not None and m.calibration.startswith("4 machine starts, 10 runs")
    assert m.threshold is not None
    assert m.threshold.relative == round(max(2 * within, ACROSS_K * across), 4) == 0.0


def test_a_metric_only_one_starts_captures_hold_is_recorded_as_that_starts_runs() -> None:
    """h100-a's three full gemms captures beside h100-j's three gate captures: the duration,
    in both, is pooled over the two starts; achieved occupancy, which only the full captures
    hold, cannot be (one start gives it a number) and is calibrated from h100-a's runs alone."""
    paths = [*files(FULL, ("h100-a",), "gemms"), *files(GATE, ("h100-j",), "gemms")]
    assert "sm__warps_active.avg.pct_of_peak_sustained_active" not in raw_launches(paths[-1])[0]
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    checked = 0
    for kernel in baseline.kernels:
        occupancy = next((m for m in kernel.metrics if m.name == "achieved_occupancy"), None)
        if kernel.tuned or occupancy is None:
            continue
        assert occupancy.calibration is not None and occupancy.calibration.startswith(
            "3 runs: spread"
        ), (kernel.id, occupancy.calibration)
        duration = metric(kernel, "duration")
        assert duration.calibration is not None
        assert duration.calibration.startswith("2 machine starts, 6 runs"), kernel.id
        checked += 1
    assert checked >= 5


def test_a_raw_metric_is_recorded_as_captured_not_pooled(
    h200_gemms: tuple[list[Path], Baseline],
) -> None:
    """A raw ncu metric asked for by name is gated as it is (docs/baselines.md): pooled captures
    record it as one start's would, the median over every launch, without a bound of its own."""
    paths, _ = h200_gemms
    settings = RecordSettings(metrics=("duration", "dram__bytes_read.sum"))
    baseline = record(pooled_capture(paths), settings).baseline
    kernel = only(baseline, "void gemmSN_NN_kernel<float, 256, 4, 2, 8, 4, 4, 0")
    starts = by_start(paths, kernel)
    every = [number(r["dram__bytes_read.sum"]) for rs in starts.values() for run in rs for r in run]
    per_start = statistics.median(
        statistics.median(number(r["dram__bytes_read.sum"]) for run in rs for r in run)
        for rs in starts.values()
    )
    raw = metric(kernel, "dram__bytes_read.sum")
    assert raw.value == statistics.median(every) != per_start
    assert raw.threshold is None and raw.calibration is None
    assert (metric(kernel, "duration").calibration or "").startswith("3 machine starts")


def test_a_metric_whose_median_over_starts_is_zero_gets_no_launch_range() -> None:
    """The drain stall of an H100 scan kernel (full captures, h100-a to h100-d): 0 in every launch
    but one of h100-c's, so three starts of four read 0 and the median is 0. A range relative to
    0 says nothing: the bound is the stall floor (half the catalog's default, docs/noise.md), not
    a launch range of 100%."""
    paths = files(FULL, ("h100-a", "h100-b", "h100-c", "h100-d"), "reductions")
    drain = "smsp__warp_issue_stalled_drain_per_warp_active.pct"
    stalled: dict[str, list[float]] = {}
    for p in paths:
        for r in raw_launches(p):
            if "tensor_kernel_scan_innermost_dim<float, std::plus<float>>" in r["Kernel Name"]:
                stalled.setdefault(p.parent.name, []).append(number(r[drain]))
    assert len(stalled) == 4
    assert sorted(s for s, v in stalled.items() if any(v)) == ["h100-c"]
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    kernel = only(
        baseline, "void native::tensor_kernel_scan_innermost_dim<float, std::plus<float>>"
    )
    m = metric(kernel, "stall_cpi.drain")
    defn = lookup("stall_cpi.drain")
    assert m.value == 0.0 and m.low == 0.0 and m.high == 0.0
    assert m.threshold is not None and m.threshold.relative == defn.threshold.relative / 2
    assert m.calibration is not None and m.calibration.startswith("4 machine starts, 8 runs")


# --------------------------------------------------------------------------- time_bounds


def test_three_runs_on_h100_get_the_two_run_floor() -> None:
    """The gemms baseline pooled over h100-k, o and p, checked against h100-j's three runs: every
    kernel of 10 us or more whose bound the time floor set is judged under the floor of a check
    of two runs or more at its recorded duration (docs/noise.md "Two runs per check"), as three
    runs, in words; an H100 time is judged as measured (no corrected floor)."""
    from perfgate.verdicts.check import check

    paths = files(GATE, ("h100-k", "h100-o", "h100-p"), "gemms")
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    three = files(GATE, ("h100-j",), "gemms")
    assert len(three) == 3
    result = check(baseline, read_captures(three))
    checked = 0
    for verdict in result.verdicts:
        kernel = next(k for k in baseline.kernels if k.id == verdict.kernel)
        recorded = metric(kernel, "duration")
        assert isinstance(recorded.value, float) and recorded.threshold is not None
        if recorded.value < 10_000.0 or recorded.threshold.relative != round(
            time_floor_at(recorded.value, H100), 4
        ):
            continue
        floor = two_run_floor_at(recorded.value, H100)
        assert floor is not None and floor < recorded.threshold.relative
        duration = next(c for c in verdict.comparisons if c.metric == "duration")
        assert duration.bound == f"+{floor * 100:g}%", verdict.kernel
        assert duration.message.startswith(f"3 runs: bound {floor * 100:.3g}%")
        assert "judged against the recorded time" not in duration.message
        checked += 1
    assert checked >= 5


def test_a_baseline_of_the_time_metrics_alone_is_judged_as_a_full_one() -> None:
    """h200-e's gemms recorded twice, with every default metric and with duration and total
    time alone, checked against h200-f's two runs: each kernel's time comparisons (the bound
    after the common factor and the two-run floor, and the words saying so) are the same,
    whatever else the entry holds."""
    from perfgate.verdicts.check import check

    base = read_captures(files(GATE, ("h200-e",), "gemms"))
    full = record(base, RecordSettings()).baseline
    times = record(base, RecordSettings(metrics=("duration", "total_time"))).baseline
    assert all({m.name for m in k.metrics} == {"duration", "total_time"} for k in times.kernels)
    capture = read_captures(files(GATE, ("h200-f",), "gemms"))

    def compared(baseline: Baseline) -> dict[tuple[str, str], tuple[str, str]]:
        return {
            (v.kernel, c.metric): (c.bound, c.message)
            for v in check(baseline, capture).verdicts for c in v.comparisons
            if c.metric in ("duration", "total_time")
        }  # fmt: skip

    got, want = compared(times), compared(full)
    assert got == want
    corrected = [
        k for k, (_, message) in got.items() if "judged against the recorded time" in message
    ]
    assert len({kernel for kernel, _ in corrected}) >= 3
    assert {metric for _, metric in corrected} == {"duration", "total_time"}


def test_an_entry_without_a_recorded_duration_keeps_its_total_times_bound() -> None:
    """A kernel entry holding its total time but no duration (as a metric or among its info:
    a baseline written so by hand) has no recorded time for the floors to read: a check of two
    runs judges its total time at the recorded bound, neither corrected nor tightened."""
    from perfgate.verdicts.check import check

    base = record(
        read_captures(files(GATE, ("h200-e",), "gemms")), RecordSettings(metrics=("total_time",))
    ).baseline
    kernels = tuple(
        replace(k, info={n: v for n, v in k.info.items() if n != "duration"}) for k in base.kernels
    )
    baseline = replace(base, kernels=kernels)
    assert all(k.value("duration") is None for k in baseline.kernels)
    result = check(baseline, read_captures(files(GATE, ("h200-f",), "gemms")))
    for verdict in result.verdicts:
        kernel = next(k for k in baseline.kernels if k.id == verdict.kernel)
        total = metric(kernel, "total_time")
        assert total.threshold is not None and total.threshold.relative is not None
        compared = next(c for c in verdict.comparisons if c.metric == "total_time")
        assert compared.bound == f"+{total.threshold.relative * 100:g}%", verdict.kernel
        assert "judged against" not in compared.message and "runs: bound" not in compared.message


def test_three_runs_get_the_two_run_floor_where_no_common_factor_applies() -> None:
    """Triton's two autotuned kernels take no part in a common factor (another configuration's
    time is no noise) and their program has no other kernel of 10 us: no factor. Checked with
    h100-j's three runs against the baseline of h100-k, o and p, each is judged at its best
    recorded configuration's duration (from 20 us: H100's two-run floor, 3%) under the floor of
    a check of two runs or more, as three runs."""
    from perfgate.verdicts.check import check

    paths = files(GATE, ("h100-k", "h100-o", "h100-p"), "triton-autotune")
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    three = files(GATE, ("h100-j",), "triton-autotune")
    assert len(three) == 3
    verdicts = {v.kernel: v for v in check(baseline, read_captures(three)).verdicts}
    for name in ("perfgate_autotuned_mm", "perfgate_rmsnorm_kernel"):
        kernel = next(k for k in baseline.kernels if k.id == name)
        assert kernel.tuned
        best = min(c.duration for c in kernel.configurations if c.duration is not None)
        assert best >= 20_000.0
        floor = two_run_floor_at(best, H100)
        assert floor == 0.03
        duration = next(c for c in verdicts[name].comparisons if c.metric == "duration")
        assert duration.bound == "+3%", (name, duration.bound)
        assert duration.message.startswith("3 runs: bound 3%"), duration.message


# ------------------------------------------------------------------------------ _choice


def test_a_choice_whose_launches_carry_no_time_is_named_without_one() -> None:
    """Triton's rmsnorm kernel, the baseline pooled over h200-h, i and j, checked against h200-m's
    two runs, each of which chose another configuration (block 128 and block 32, its .out.txt);
    run 1's launches of it lose their time (a capture of a partial metric list, say). Its time
    still regresses on run 2's launches, and the autotuner's choice names both configurations:
    block 128 without a time, block 32 with the fastest of its raw launches."""
    from perfgate.verdicts.check import check

    paths = files(GATE, ("h200-h", "h200-i", "h200-j"), "triton-autotune")
    baseline = record(pooled_capture(paths), RecordSettings()).baseline
    runs = files(GATE, ("h200-m",), "triton-autotune")
    capture = read_captures(runs)
    name = "perfgate_rmsnorm_kernel"
    untimed = str(runs[0])
    launches = tuple(
        replace(la, metrics={k: v for k, v in la.metrics.items() if k != TIME})
        if la.name.startswith(name) and la.source == untimed
        else la
        for la in capture.launches
    )
    blocks = {la.block for la in launches if la.name.startswith(name)}
    assert blocks == {(128, 1, 1), (32, 1, 1)}
    fastest = min(number(r[TIME]) for r in raw_launches(runs[1]) if r["Kernel Name"] == name)
    verdict = next(
        v for v in check(baseline, replace(capture, launches=launches)).verdicts
        if v.kernel == name
    )  # fmt: skip
    assert verdict.headline is not None
    assert verdict.headline.mechanism == "autotuned-configuration"
    detail = verdict.headline.detail
    head, _, rest = detail.partition("block 128x1x1 (4 warps)")
    assert head and rest, detail
    assert rest.index(", grid 8192x1x1 block 32x1x1") < rest.find("(")
    assert f"({fastest / 1000:.1f} us, not seen when recorded)" in rest


def test_a_count_whose_runs_differ_by_exactly_a_tenth_of_a_percent_is_not_exact() -> None:
    """docs/noise.md: a count whose recorded runs differ by 0.1% or more is not exact (the
    2.5% floor, not 1%). The xmma GEMM's tensor instructions of the three H200 starts set by
    hand to 1,000,000 in h200-f's and h200-g's runs and 1,001,000 in h200-h's: the six runs'
    spread is 1,000 / 1,000,000 = 0.1% exactly (the median of the six is 1,000,000), so its
    bound is the 2.5% floor; its instructions, unchanged, are exact (1%)."""
    paths = files(GATE, ("h200-f", "h200-g", "h200-h"), "gemms")
    capture = pooled_capture(paths)
    column = "smsp__inst_executed_pipe_tensor.sum"
    xmma = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8"

    def count(source: str) -> float:
        return 1_001_000.0 if "/h200-h/" in source else 1_000_000.0

    launches = tuple(
        replace(la, metrics={**la.metrics, column: count(la.source)})
        if la.name.startswith(xmma)
        else la
        for la in capture.launches
    )
    assert sum(la.name.startswith(xmma) for la in launches) == 6
    baseline = record(replace(capture, launches=launches), RecordSettings()).baseline
    kernel = only(baseline, xmma)
    assert (1_001_000.0 - 1_000_000.0) / 1_000_000.0 == 0.001
    tensor = metric(kernel, "tensor_instructions")
    assert tensor.value == 1_000_000.0
    assert tensor.threshold is not None and tensor.threshold.relative == 0.025
    instructions = metric(kernel, "instructions_executed")
    assert instructions.threshold is not None and instructions.threshold.relative == 0.01
