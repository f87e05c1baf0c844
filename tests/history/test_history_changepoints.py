"""Change points and drift over a history (perfgate.history.changepoints, `history detect`).

The series are real: each kernel's metrics measured per capture file of the field corpus's
unchanged re-captures (tests/data/field/h100, six machine starts), as `baseline record`
measures them, resampled over the starts; the steps and drifts are injected into them. The
command runs end to end on an SQLite history built with `perfgate history add` from the
families' real captures, with a real change (fam-b's nvrtc-uncoalesced: the copy kernel reads
with a 32-way stride) partway through."""

from __future__ import annotations

import json
import statistics
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from perfgate.cli import main
from perfgate.history import changepoints as cp
from perfgate.history import detect
from perfgate.history.store import open_store
from perfgate.identity.grouping import group_launches
from perfgate.ingest import read_capture
from perfgate.metrics.catalog import lookup
from perfgate.metrics.measure import Measured, measure
from perfgate.metrics.thresholds import Direction
from tests.conftest import ROOT

FIELD = ROOT / "tests" / "data" / "field"
STARTS = {"h100-a": 3, "h100-b": 2, "h100-c": 2, "h100-d": 1, "h100-e": 1, "h100-f": 1}
NOISY = ("duration", "dram_bytes", "instructions_executed", "l2_sectors")


@cache
def real_runs(workload: str) -> dict[str, list[list[float]]]:
    """Per kernel name (present once in every run, same launch configuration) and metric:
    the values per machine start, runs in capture order."""
    per_file: list[tuple[str, dict[str, dict[str, float]]]] = []
    for start, runs in STARTS.items():
        for i in range(1, runs + 1):
            capture = read_capture(FIELD / "h100" / start / f"{workload}-run{i}.csv.gz")
            kernels: dict[str, dict[str, float]] = {}
            for group in group_launches(capture.launches):
                values = {}
                for metric in NOISY:
                    got = measure(lookup(metric), group.launches, capture.columns)
                    if isinstance(got, Measured) and isinstance(got.value, float):
                        values[metric] = got.value
                kernels[repr(group.key)] = values
            per_file.append((start, kernels))
    common = set(per_file[0][1]).intersection(*(k for _, k in per_file[1:]))
    out: dict[str, list[list[float]]] = {}
    for key in sorted(common):
        for metric in NOISY:
            by_start: dict[str, list[float]] = {}
            for start, kernels in per_file:
                if metric in kernels[key]:
                    by_start.setdefault(start, []).append(kernels[key][metric])
            if sum(len(v) for v in by_start.values()) == sum(STARTS.values()):
                out[f"{key} {metric}"] = list(by_start.values())
    return out


def resampled(starts: list[list[float]], length: int, seed: int) -> list[float]:
    """Main's history: a machine start at random, 1 to all of its runs in order, again."""
    rng = np.random.default_rng(seed)
    out: list[float] = []
    while len(out) < length:
        runs = starts[int(rng.integers(0, len(starts)))]
        first, block = int(rng.integers(0, len(runs))), int(rng.integers(1, len(runs) + 1))
        out += [runs[(first + j) % len(runs)] for j in range(block)]
    return out[:length]


def long_durations(workload: str) -> dict[str, list[list[float]]]:
    """Kernels of 20 us or more: their cross-start noise is small next to a 5% step."""
    return {
        k: v
        for k, v in real_runs(workload).items()
        if k.endswith(" duration") and statistics.median(x for s in v for x in s) >= 20_000
    }


# -- the statistics ------------------------------------------------------------------------


def test_the_distance_sums_are_the_pairwise_definition() -> None:
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 8, 33, 100):
        x = rng.normal(size=n).round(1)  # ties included
        pairwise = np.abs(x[:, None] - x[None, :])
        assert np.allclose(cp._distance_sums(x), pairwise.sum(axis=0))
        assert np.allclose(cp._left_distance_sums(x), np.triu(pairwise, 1).sum(axis=0))


def test_the_best_split_maximises_the_size_weighted_energy_distance() -> None:
    def q(x: np.ndarray, tau: int) -> float:
        a, b = x[:tau], x[tau:]
        m, k = len(a), len(b)
        between = 2 * np.abs(a[:, None] - b[None, :]).mean()
        within_a = np.abs(a[:, None] - a[None, :]).sum() / (m * (m - 1))
        within_b = np.abs(b[:, None] - b[None, :]).sum() / (k * (k - 1))
        return float(m * k / (m + k) * (between - within_a - within_b))

    x = np.random.default_rng(3).normal(size=40)
    x[26:] += 1.5
    tau, best = cp._best_split(x, 3)
    expected = max(range(3, 38), key=lambda t: q(x, t))
    assert tau == expected == 26
    assert best == pytest.approx(q(x, 26))


def test_an_exact_counter_changes_level_at_every_new_value() -> None:
    assert cp.change_points([32.0, 32, 32, 40, 40, 40, 32], exact=True) == [3, 6]
    assert cp.change_points([4.0] * 50, exact=True) == []


def test_no_change_point_in_real_unchanged_series() -> None:
    found = {}
    for workload in ("hf-decoder", "gemms", "reductions"):
        for name, starts in real_runs(workload).items():
            got = cp.change_points(resampled(starts, 60, seed=len(name)))
            if got:
                found[f"{workload} {name}"] = got
    assert not found


@pytest.mark.parametrize(
    ("step", "workloads"), [(0.05, ("gemms", "cnn-fp32", "cnn-tf32")), (0.03, ("gemms",))]
)
def test_a_step_is_found_at_its_first_run(step: float, workloads: tuple[str, ...]) -> None:
    series = {k: v for w in workloads for k, v in long_durations(w).items()}
    assert len(series) >= 4
    for name, starts in series.items():
        values = resampled(starts, 60, seed=len(name))
        stepped = values[:40] + [v * (1 + step) for v in values[40:]]
        assert cp.change_points(stepped) == [40], name


def test_a_five_percent_step_is_found_within_three_runs_on_long_kernels() -> None:
    for name, starts in long_durations("gemms").items():
        values = resampled(starts, 43, seed=len(name))
        stepped = values[:40] + [v * 1.05 for v in values[40:]]
        assert cp.change_points(stepped) == [40], name


def test_a_move_below_the_smallest_reported_is_no_change_point() -> None:
    # The runs of one start, twice over, then 1.5% more: significant, and below 2%.
    values = [100.0, 100.2, 99.9, 100.1, 99.8, 100.0, 100.3, 99.9] * 5
    shifted = values + [v * 1.015 for v in values]
    assert cp.e_divisive(shifted) == [40]
    assert cp.change_points(shifted) == []
    assert cp.change_points(values + [v * 1.025 for v in values]) == [40]


def test_the_answer_is_the_same_every_time() -> None:
    starts = next(iter(long_durations("gemms").values()))
    values = resampled(starts, 80, seed=5)
    values = values[:50] + [v * 1.04 for v in values[50:]]
    first = cp.change_points(values)
    assert first == [50]
    assert all(cp.change_points(values) == first for _ in range(3))


def test_three_thousand_runs_with_three_levels() -> None:
    rng = np.random.default_rng(11)
    values = 1000 * (1 + 0.005 * rng.standard_t(3, size=3000))
    values[1000:] *= 1.05
    values[2200:] *= 0.96
    assert cp.change_points(list(values)) == [1000, 2200]


# -- the drift rule ------------------------------------------------------------------------


def test_the_drift_rule_flags_a_slow_drift_within_ten_runs() -> None:
    for name, starts in long_durations("gemms").items():
        values = resampled(starts, 40, seed=len(name))
        drifting = values[:30] + [v * (1 + 0.01 * (i + 1)) for i, v in enumerate(values[30:])]
        flagged = [
            t
            for t in range(30, 40)
            if (got := cp.drift(drifting[:t], drifting[t], Direction.HIGHER_IS_WORSE))
            and got.drifted
        ]
        assert flagged and flagged[0] < 30 + 10, name


def test_the_drift_rule_passes_real_unchanged_runs() -> None:
    flagged = []
    for name, starts in long_durations("gemms").items():
        values = resampled(starts, 60, seed=len(name))
        for t in range(30, 60):
            got = cp.drift(values[:t], values[t], Direction.HIGHER_IS_WORSE)
            assert got is not None and got.runs == 30
            if got.drifted:
                flagged.append((name, t))
    assert not flagged


def test_the_drift_rule_judges_the_worse_direction_only_and_needs_enough_runs() -> None:
    history = [100.0, 101, 99, 100, 102, 98, 100, 101, 99, 100]
    assert cp.drift(history[:9], 150.0, Direction.HIGHER_IS_WORSE) is None
    up = cp.drift(history, 110.0, Direction.HIGHER_IS_WORSE)
    assert up is not None and up.drifted and up.median == 100 and up.change == pytest.approx(0.1)
    down = cp.drift(history, 90.0, Direction.HIGHER_IS_WORSE)
    assert down is not None and not down.drifted
    assert cp.drift(history, 90.0, Direction.LOWER_IS_WORSE).drifted  # type: ignore[union-attr]
    # Within the floor (3%) and the spreads: not flagged.
    assert not cp.drift(history, 102.5, Direction.ANY_CHANGE).drifted  # type: ignore[union-attr]


# A noisy kernel's history: consecutive runs 4 apart, so one run's spread is sqrt(16 / 2) and
# one run may stand 3 x 2.83 = 8.5% above the median of 100 before it is flagged.
JUMPY = [98.0, 102.0] * 15
JUMPY_SIGMA = float(np.sqrt(16 / 2))


def _level_limit(rule: cp.DriftRule, runs: int = 3) -> float:
    return max(rule.floor, rule.level_spreads * JUMPY_SIGMA / np.sqrt(runs) / 100)


def test_the_level_of_the_newest_runs_catches_a_step_one_run_hides() -> None:
    rule = cp.DEFAULT_DRIFT
    step = 1 + (_level_limit(rule) + 8.5 / 100) / 2  # past the level's limit, within one run's
    assert rule.level_runs == 3 and _level_limit(rule) < step - 1 < 0.085
    values = [*JUMPY, 100 * step, 100 * step, 100 * step]
    first = cp.drift(values[:30], values[30], Direction.HIGHER_IS_WORSE, rule)
    third = cp.drift(values[:32], values[32], Direction.HIGHER_IS_WORSE, rule)
    assert first is not None and not first.drifted and not first.alone
    assert third is not None and third.drifted and not third.alone
    assert first.limit == pytest.approx(3 * JUMPY_SIGMA / 100)  # the value alone: 8.5%
    level = third.level
    assert level is not None and level.drifted
    assert (level.runs, level.reference) == (3, 30)
    assert (level.mean, level.median) == (pytest.approx(100 * step), 100.0)
    assert level.spread == pytest.approx(JUMPY_SIGMA)
    assert level.limit == pytest.approx(_level_limit(rule))
    assert level.change == pytest.approx(step - 1)
    # One run per level: the value alone, which the step does not pass.
    alone = cp.drift(values[:32], values[32], Direction.HIGHER_IS_WORSE,
                     cp.DriftRule(level_runs=1))  # fmt: skip
    assert alone is not None and not alone.drifted and alone.level is None
    # In the better direction the same move is no drift.
    assert not cp.drift(values[:32], values[32], Direction.LOWER_IS_WORSE, rule).drifted  # type: ignore[union-attr]


def test_a_run_back_at_the_old_level_is_not_flagged_for_the_runs_before_it() -> None:
    rule = cp.DEFAULT_DRIFT
    values = [*JUMPY, 112.0, 112.0]
    for value in (99.0, 100.5, 104.0):
        back = cp.drift(values, value, Direction.HIGHER_IS_WORSE, rule)
        assert back is not None and back.level is not None
        assert back.level.change > back.level.limit  # the mean is past its limit ...
        # ... but the value is nearer the old level than the mean: (112 + 112 + 104) / 3 is
        # 109.3, and 104 is 4% of the 9.3% from the median.
        assert not back.level.drifted and not back.drifted, value
    still = cp.drift(values, 105.0, Direction.HIGHER_IS_WORSE, rule)  # 5% of 9.7%
    assert still is not None and still.level is not None and still.level.drifted


def test_the_level_needs_its_own_reference_runs_and_an_exact_counter_has_none() -> None:
    history = [100.0, 101, 99, 100, 102, 98, 100, 101, 99, 100, 100]
    got = cp.drift(history, 100.0, Direction.HIGHER_IS_WORSE)
    # 11 runs kept: the value is judged against all of them; its level against the 9 before
    # the newest two, fewer than min_runs.
    assert got is not None and got.runs == 11 and got.level is None
    got = cp.drift([*history, 100.0], 100.0, Direction.HIGHER_IS_WORSE)
    assert got is not None and got.level is not None and got.level.reference == 10
    exact = cp.DEFAULT_DRIFT.exact()
    assert (exact.spreads, exact.floor, exact.level_runs) == (0.0, 0.0, 1)
    moved = cp.drift([5.0] * 30, 6.0, Direction.HIGHER_IS_WORSE, exact)
    assert moved is not None and moved.drifted and moved.alone and moved.level is None


def test_the_level_is_flagged_past_its_limit_not_at_it() -> None:
    # A flat history: no spread, so the limit is the 3% floor. Exactly 3% is not past it.
    flat = [100.0] * 30
    at = cp.drift([*flat, 103.0, 103.0], 103.0, Direction.HIGHER_IS_WORSE)
    assert at is not None and at.level is not None
    assert at.level.change == at.level.limit == 0.03 and not at.level.drifted
    past = cp.drift([*flat, 103.0, 103.0], 103.5, Direction.HIGHER_IS_WORSE)
    assert past is not None and past.level is not None and past.level.drifted


def test_a_run_exactly_halfway_to_the_mean_belongs_to_the_new_level() -> None:
    # 105, 105, 102: a mean of 104 (+4%), the run +2%, half of it.
    got = cp.drift([*([100.0] * 30), 105.0, 105.0], 102.0, Direction.HIGHER_IS_WORSE)
    assert got is not None and got.level is not None
    assert (got.level.mean, got.level.change) == (104.0, 0.04)
    assert got.level.drifted and got.drifted


def test_a_level_of_two_runs_and_a_rule_without_a_minimum() -> None:
    two = cp.DriftRule(level_runs=2)
    got = cp.drift([*([100.0] * 30), 104.0], 104.0, Direction.HIGHER_IS_WORSE, two)
    assert got is not None and got.level is not None
    assert (got.level.runs, got.level.reference, got.level.mean) == (2, 30, 104.0)
    assert got.level.drifted
    # No minimum of runs: the value is judged against the one run kept, its level against
    # none (no run is left before the newest three), so not at all.
    bare = cp.DriftRule(min_runs=0)
    got = cp.drift([100.0, 100.0], 200.0, Direction.HIGHER_IS_WORSE, bare)
    assert got is not None and got.drifted and got.level is None
    got = cp.drift([100.0], 200.0, Direction.HIGHER_IS_WORSE, bare)
    assert got is not None and got.level is None


def test_a_median_of_zero_allows_the_floor() -> None:
    got = cp.drift([0.0] * 30, 0.0, Direction.HIGHER_IS_WORSE)
    assert got is not None and got.limit == cp.DEFAULT_DRIFT.floor
    assert got.level is not None and got.level.limit == cp.DEFAULT_DRIFT.floor
    assert not got.drifted


def test_the_spread_of_fewer_than_two_runs_is_zero() -> None:
    assert cp.spread([]) == 0.0 and cp.spread([5.0]) == 0.0
    assert cp.spread([1.0, 3.0]) == pytest.approx(np.sqrt(2.0))


def test_the_spread_is_not_widened_by_the_drift_it_judges() -> None:
    ramp = [100.0 + i for i in range(30)]  # +1 a run: a drift with no noise
    assert cp.spread(ramp) == pytest.approx(np.sqrt(0.5))
    assert statistics.pstdev(ramp) > 8


def test_the_spread_weighs_the_jumps_between_machine_starts() -> None:
    # Three starts of ten runs each: 0.1% noise within a start, 3% between them. The mean
    # absolute difference hardly sees the two jumps; the mean square difference does.
    rng = np.random.default_rng(5)
    levels = [100.0, 103.0, 100.5]
    values = [lv + 0.1 * float(rng.standard_normal()) for lv in levels for _ in range(10)]
    steps = np.abs(np.diff(values))
    assert cp.spread(values) > 2 * (np.sqrt(np.pi) / 2 * steps.mean())
    assert cp.spread(values) == pytest.approx(np.sqrt(np.mean(np.diff(values) ** 2) / 2))


# -- the command, end to end ---------------------------------------------------------------

FAMILIES = FIELD / "families"
UNCHANGED = ("fam-a/nvrtc-run1", "fam-a/nvrtc-run2", "fam-a/nvrtc-run3", "fam-b/nvrtc-run1",
             "fam-c/nvrtc-run1", "fam-d/nvrtc-run1", "fam-e/nvrtc-run1")  # fmt: skip
CHANGED = "fam-b/nvrtc-uncoalesced-run1"
# main: the 7 unchanged runs, then 3 of them again (10); two pull-request runs; main again
# with the change merged (4 runs). The change point's first run is run-13.
RUNS = (
    *((c, "main") for c in UNCHANGED),
    *((c, "main") for c in UNCHANGED[:3]),
    (CHANGED, "pr-7"),
    ("fam-b/nvrtc-run1", "pr-8"),
    *((CHANGED, "main") for _ in range(4)),
)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def nvrtc_baseline(folder: Path) -> Path:
    """The NVRTC family's baseline, recorded from fam-a's three runs into `folder`."""
    baseline = folder / "nvrtc.yaml"
    runs = [FAMILIES / "fam-a" / f"nvrtc-run{i}.csv.gz" for i in (1, 2, 3)]
    code, _, err = invoke("baseline", "record", *(a for r in runs for a in ("-c", str(r))),
                          "-o", str(baseline))  # fmt: skip
    assert code == 0, err
    return baseline


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("history")
    baseline = nvrtc_baseline(folder)
    db = folder / "history.sqlite"
    for n, (capture, branch) in enumerate(RUNS, 1):
        code, _, err = invoke(
            "history", "add", "--db", str(db), "-b", str(baseline),
            "-c", str(FAMILIES / f"{capture}.csv.gz"), "--run-id", f"run-{n:02d}",
            "--commit", f"{n:02d}c0ffee{'0' * 32}", "--branch", branch,
        )  # fmt: skip
        assert code == 0, err
    return db


def test_detect_names_the_first_run_its_commit_and_the_cause(history: Path) -> None:
    code, out, err = invoke("history", "detect", "--db", str(history), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["runs"] == 14  # main's runs only: the pull requests' are not main's history
    points = doc["change_points"]
    # The other two kernels held still; every level of the copy kernel moved at run-13.
    assert {(p["kernel"], p["index"]) for p in points} == {("copy_vec", 10)}
    metrics = {p["metric"]: p for p in points}
    assert {"global_load_efficiency", "global_load_sectors", "duration"} <= set(metrics)
    efficiency = metrics["global_load_efficiency"]  # an exact counter; lower is worse
    assert (efficiency["before"], efficiency["after"], efficiency["worse"]) == (100, 12.5, True)
    duration = metrics["duration"]
    assert duration["index"] == 10 and duration["change"] > 0.3 and duration["gates"]
    first = duration["first_run"]
    assert first["run_id"] == "run-13" and first["commit"].startswith("13c0ffee")
    assert first["kernel_state"] == "regressed"
    assert first["finding"]["title"] == "Global loads became uncoalesced"


def test_detect_text_says_it_on_one_line_per_change(history: Path) -> None:
    code, out, _ = invoke("history", "detect", "--db", str(history), "copy_vec", "-m",
                          "duration")  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert (
        lines[0]
        == "perfgate history detect: 1 change point in 1 series over 14 runs of branch main"
    )
    assert lines[1].startswith("  copy_vec duration: 54,") and "(+4" in lines[1]
    assert "from run run-13 (commit 13c0ffee0000," in lines[1] and "run 11 of 14" in lines[1]
    assert lines[2] == "    regressed: Global loads became uncoalesced"


def test_fail_on_change_exits_1_and_last_limits_the_runs_looked_at(history: Path) -> None:
    code, _, _ = invoke("history", "detect", "--db", str(history), "--fail-on-change")
    assert code == 1
    code, out, _ = invoke("history", "detect", "--db", str(history), "--last", "3",
                          "--fail-on-change")  # fmt: skip
    assert code == 0 and out.startswith("perfgate history detect: 0 change points")
    code, _, _ = invoke("history", "detect", "--db", str(history), "poly_eval",
                        "transpose_tiled", "--fail-on-change")  # fmt: skip
    assert code == 0


def test_drift_holds_a_pull_request_run_to_mains_recent_history(history: Path) -> None:
    code, out, err = invoke("history", "detect", "--db", str(history), "--drift", "--run",
                            "run-11", "--format", "json", "--fail-on-change")  # fmt: skip
    assert code == 1, err
    doc = json.loads(out)
    assert doc["judged_run"]["branch"] == "pr-7"
    drifted = {(d["kernel"], d["metric"]) for d in doc["drifts"]}
    assert ("copy_vec", "duration") in drifted and ("copy_vec", "global_load_sectors") in drifted
    assert {k for k, _ in drifted} == {"copy_vec"}
    duration = next(d for d in doc["drifts"] if d["metric"] == "duration")
    assert duration["runs"] == 10 and duration["change"] > duration["limit"] > 0
    code, out, _ = invoke("history", "detect", "--db", str(history), "--drift", "--run",
                          "run-12", "--fail-on-change")  # fmt: skip
    assert code == 0
    assert out.startswith("perfgate history detect --drift: 0 of ")


def test_a_check_held_to_the_history_flags_what_detect_drift_flags(history: Path) -> None:
    """held_to_history reads one series per metric; `detect --drift --run` loads every run:
    the same flags, the same figures, for a pull request's run with the change and one
    without."""
    with open_store(str(history), create=False) as store:
        for run_id, flagged in (("run-11", True), ("run-12", False)):
            record = store.load(run_id)
            assert record is not None
            held = detect.held_to_history(record, store)
            full = detect.detect(store, detect.DetectRequest(drift=True, run_id=run_id), "h")
            assert [(d.series.kernel, d.series.metric, d.result, d.gates) for d in held] == [
                (d.series.kernel, d.series.metric, d.result, d.gates) for d in full.drifts
            ]
            assert [d.series.values for d in held] == [d.series.values for d in full.drifts]
            assert any(d.gates for d in held) is flagged
        # Only the runs recorded before the one held: run-11 is not held to run-13's change.
        record = store.load("run-11")
        assert record is not None
        (duration,) = [d for d in detect.held_to_history(record, store)
                       if d.series.metric == "duration"]  # fmt: skip
        assert len(duration.series.points) == 10 and duration.run.kernel_state == "regressed"
        # A run of main already kept is held to the runs before it, never to itself: run-13,
        # the first with the change merged, to main's ten before it.
        record = store.load("run-13")
        assert record is not None
        (duration,) = [d for d in detect.held_to_history(record, store)
                       if d.series.metric == "duration"]  # fmt: skip
        assert [p.run_id for p in duration.series.points] == [f"run-{n:02d}" for n in range(1, 11)]


def test_what_counts_against_the_build_is_what_a_check_counts() -> None:
    assert detect.gates("duration", 54_000.0, 80_000.0)
    # A kernel under 10 us whose time moved by 1.5 us or less: evidence, as in a check.
    assert not detect.gates("duration", 3_000.0, 3_300.0)
    assert detect.gates("duration", 3_000.0, 6_000.0)
    assert detect.gates("registers_per_thread", 32.0, 40.0)
    assert not detect.gates("stall_cpi.long_scoreboard", 1.0, 3.0)  # evidence


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--db", "{missing}"), "no such history"),
        (("--db", "{db}", "no_such_kernel"), "no runs of kernel 'no_such_kernel' on branch main"),
        (("--db", "{db}", "--metric", "no_such_metric"), "no numbers of metric 'no_such_metric'"),
        (("--db", "{db}", "--drift", "--run", "run-99"), "no run 'run-99' in this history"),
        (("--db", "{db}", "--run", "run-01"), "--run names the run --drift holds"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    history: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    filled = [a.format(db=history, missing=tmp_path / "none.sqlite") for a in args]
    code, _, err = invoke("history", "detect", *filled)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "none.sqlite").exists()


def test_check_drift_warns_of_what_detect_drift_flags_and_keeps_the_check_s_exit(
    history: Path,
) -> None:
    """`perfgate check --history DB --drift main`: this run held to main's recent runs, as
    `history detect --drift --run` holds a kept one; warnings on stderr, the exit code the
    check's own (docs/history.md)."""
    baseline = str(history.parent / "nvrtc.yaml")
    code, _, err = invoke("check", "-b", baseline, "-c", str(FAMILIES / f"{CHANGED}.csv.gz"),
                          "--history", str(history), "--drift", "main")  # fmt: skip
    assert code == 1, err  # the uncoalesced copy regresses in the check itself
    assert "beyond the recent history of branch main" in err
    assert "copy_vec duration" in err and "copy_vec global_load_sectors" in err
    code, _, err = invoke("check", "-b", baseline, "-c", str(FAMILIES / "fam-b/nvrtc-run1.csv.gz"),
                          "--history", str(history), "--drift", "main")  # fmt: skip
    assert code == 0, err
    assert "recent history" not in err
    # Held to a branch with no runs of these kernels: nothing to hold it to, no warning.
    code, _, err = invoke("check", "-b", baseline, "-c", str(FAMILIES / f"{CHANGED}.csv.gz"),
                          "--history", str(history), "--drift", "no-such-branch")  # fmt: skip
    assert code == 1 and "recent history" not in err


def test_check_drift_needs_a_history() -> None:
    code, _, err = invoke("check", "-b", "x.yaml", "-c", "y.csv", "--drift", "main")
    assert code == 2 and "--drift holds this run to the runs a history keeps" in err
