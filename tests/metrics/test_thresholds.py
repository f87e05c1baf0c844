from __future__ import annotations

from perfgate.baseline.model import MetricBaseline
from perfgate.judge.comparison import Bounds, Comparison, State, compare_metric
from perfgate.judge.outcome import Outcome, judge_categorical
from perfgate.metrics.catalog import lookup
from perfgate.metrics.thresholds import CategoricalCheck, Direction, Threshold, ThresholdOverride

HIGHER = Direction.HIGHER_IS_WORSE
LOWER = Direction.LOWER_IS_WORSE
_OUTCOME = {State.PASS: Outcome.WITHIN, State.REGRESSED: Outcome.WORSE,
            State.IMPROVED: Outcome.BETTER}  # fmt: skip


def judge_numeric(
    baseline: float,
    current: float,
    threshold: Threshold,
    direction: Direction,
    low: float | None = None,
    high: float | None = None,
) -> Comparison:
    """compare_metric, the check's one judgement, on a numeric metric recorded at `baseline`
    (over `low`..`high`) under `threshold`, whose own direction wins over the catalog's."""
    metric = MetricBaseline("instructions_executed", baseline, low, high)
    bounds = Bounds(threshold, CategoricalCheck(), threshold.direction or direction)
    return compare_metric("k", metric, lookup(metric.name), current, "", bounds)


def outcome(comparison: Comparison) -> Outcome:
    return _OUTCOME[comparison.state]


def test_a_change_must_exceed_both_bounds() -> None:
    stall = Threshold(relative=0.20, absolute=5.0)
    assert (
        outcome(judge_numeric(0.0, 0.27, stall, HIGHER)) is Outcome.WITHIN
    )  # huge relative, tiny absolute
    assert outcome(judge_numeric(60.0, 70.0, stall, HIGHER)) is Outcome.WITHIN  # +10 points, +16.7%
    assert outcome(judge_numeric(40.0, 52.0, stall, HIGHER)) is Outcome.WORSE  # +12 points, +30%
    duration = Threshold(0.15, 2000.0)
    assert outcome(judge_numeric(2_000_000.0, 2_002_000.0, duration, HIGHER)) is Outcome.WITHIN


def test_exact_metrics_fail_on_any_worse_change() -> None:
    exact = Threshold(0.0, 0.0)
    assert outcome(judge_numeric(32.0, 32.0, exact, HIGHER)) is Outcome.WITHIN
    assert outcome(judge_numeric(32.0, 33.0, exact, HIGHER)) is Outcome.WORSE
    assert outcome(judge_numeric(32.0, 31.0, exact, HIGHER)) is Outcome.BETTER
    # Float noise from text is not a change.
    assert outcome(judge_numeric(4.83984375, 4.83984375 + 1e-12, exact, HIGHER)) is Outcome.WITHIN


def test_direction() -> None:
    t = Threshold(0.10, 2.0)
    assert outcome(judge_numeric(80.0, 60.0, t, LOWER)) is Outcome.WORSE
    assert outcome(judge_numeric(60.0, 80.0, t, LOWER)) is Outcome.BETTER
    assert outcome(judge_numeric(60.0, 80.0, t, Direction.ANY_CHANGE)) is Outcome.WORSE
    assert outcome(judge_numeric(60.0, 40.0, t, Direction.ANY_CHANGE)) is Outcome.WORSE
    assert outcome(judge_numeric(60.0, 61.0, t, Direction.ANY_CHANGE)) is Outcome.WITHIN
    # A baseline may turn the catalog's direction around.
    flipped = t.merged(ThresholdOverride(direction=Direction.HIGHER_IS_WORSE))
    assert outcome(judge_numeric(60.0, 80.0, flipped, LOWER)) is Outcome.WORSE


def test_bounds_start_at_the_edge_of_the_baselines_own_range() -> None:
    t = Threshold(0.20, 5.0)
    # Median 0.5 but one good launch showed 6.1 (a cold instruction cache): 6.1 is no regression.
    assert outcome(judge_numeric(0.5, 6.1, t, HIGHER, low=0.4, high=6.1)) is Outcome.WITHIN
    assert outcome(judge_numeric(0.5, 6.1, t, HIGHER)) is Outcome.WORSE
    assert outcome(judge_numeric(0.5, 12.0, t, HIGHER, low=0.4, high=6.1)) is Outcome.WORSE
    verdict = judge_numeric(10.0, 12.0, Threshold(), HIGHER, low=9.0, high=11.0)
    assert verdict.change == 2.0 and verdict.relative_change == 0.2  # reported from the median


def test_override_keeps_unset_fields() -> None:
    merged = Threshold(0.1, 2.0).merged(ThresholdOverride(relative=0.5))
    assert merged == Threshold(0.5, 2.0)


def test_categorical_checks() -> None:
    stable = CategoricalCheck(stable=True)
    assert judge_categorical("warps", "warps", stable).outcome is Outcome.WITHIN
    assert judge_categorical("warps", "registers", stable).outcome is Outcome.WORSE
    assert (
        judge_categorical("warps", "registers", CategoricalCheck(stable=False)).outcome
        is Outcome.WITHIN
    )
    expect = CategoricalCheck(stable=False, expect=("long_scoreboard", "wait"))
    assert judge_categorical(None, "drain", expect).outcome is Outcome.WORSE
    assert judge_categorical(None, "wait", expect).outcome is Outcome.WITHIN
    forbid = CategoricalCheck(stable=False, forbid=("lg_throttle",))
    assert judge_categorical(None, "lg_throttle", forbid).outcome is Outcome.WORSE
    margin = CategoricalCheck(stable=True, margin=5.0)
    assert judge_categorical("wait", "long_scoreboard", margin, lead=2.0).outcome is Outcome.WITHIN
    assert judge_categorical("wait", "long_scoreboard", margin, lead=30.0).outcome is Outcome.WORSE
