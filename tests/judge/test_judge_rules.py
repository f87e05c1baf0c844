"""One judgement path (perfgate.judge.rules): every rule that changes a comparison after the
metrics were compared is in one registry, declares the states it may rewrite, and is applied
on one route, whose fast way for an all-pass kernel is derived from the declarations.

The registry is enumerated here: a rule added to it fails the first test until it is listed
with its declaration. The declarations are held true on generated kernels (a rule rewrites no
comparison outside them), the fast route to running every rule on generated kernels and on
real captures, and the rules' decisions to what their docstrings say."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfgate.baseline.model import Baseline, KernelBaseline, KernelMatch, MetricBaseline
from perfgate.causes.model import CauseKind
from perfgate.ingest import read_captures
from perfgate.ingest.launches import Capture, merge
from perfgate.judge import rules
from perfgate.judge.common_mode import CommonFactor
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.policy import kernel_state
from perfgate.judge.rules import RULES, KernelFacts, Rule, judge
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.columns import LaunchTable
from perfgate.metrics.thresholds import ThresholdOverride
from perfgate.verdicts.check import CheckSettings, check
from perfgate.verdicts.kernel import CHANGED
from perfgate.verdicts.model import CheckResult, KernelVerdict
from tests.conftest import H200_REAL, ROOT

# Every rule of the registry, in its order, with the states it declares it may rewrite. A
# rule that can change a kernel whose every comparison passed must have PASS among them.
DECLARED: tuple[tuple[str, frozenset[State]], ...] = (
    ("explain-rates", frozenset({State.REGRESSED})),
    ("corroborate-stall-mix", frozenset({State.REGRESSED})),
    ("note-evidence", frozenset({State.REGRESSED, State.IMPROVED})),
    ("name-autotuner-choice", frozenset({State.REGRESSED})),
    ("word-noise", frozenset(State)),
    ("settle-not-judged", frozenset({State.SKIPPED})),
)


def test_the_registry_is_these_rules_in_this_order_with_these_declarations() -> None:
    assert [(r.name, r.acts_on) for r in RULES] == list(DECLARED)
    assert len({r.name for r in RULES}) == len(RULES)
    # Only the noise words reach a kernel that passes: "within noise" on a passing time.
    assert [r.name for r in RULES if r.on_all_pass] == ["word-noise"]


def test_a_rule_cannot_be_made_without_its_declaration() -> None:
    acts_on = next(f for f in dataclasses.fields(Rule) if f.name == "acts_on")
    assert acts_on.default is dataclasses.MISSING
    assert acts_on.default_factory is dataclasses.MISSING
    with pytest.raises(TypeError):
        Rule("no-declaration", apply=rules.settle)  # type: ignore[call-arg]
    for rule in RULES:
        assert rule.acts_on and rule.acts_on <= frozenset(State), rule.name
        assert rule.apply.__module__ == "perfgate.judge.rules" and rule.apply.__doc__, rule.name


# -- generated kernels -------------------------------------------------------------------------

_NUMERIC = (
    "duration", "total_time", "launches", "dram_throughput", "dram_bytes",
    "instructions_executed", "sm_throughput", "achieved_occupancy", "stall_cpi.long_scoreboard",
    "stall.long_scoreboard", "registers_per_thread", "l2_sectors", "tensor_pipe_utilization",
)  # fmt: skip
_STALLS = ("long_scoreboard", "barrier", "wait")


@st.composite
def _comparison(draw: st.DrawFn, metric: str) -> Comparison:
    state = draw(st.sampled_from(list(State)))
    if metric == "dominant_stall":
        before, after = draw(st.sampled_from(_STALLS)), draw(st.sampled_from(_STALLS))
        message = draw(st.sampled_from(["", f"changed from {before}", "wait is forbidden"]))
        return Comparison("k", metric, state, before, after, message=message)
    was = draw(st.sampled_from([0.0, 800.0, 5_000.0, 20_000.0, 1e6]))
    now = was * draw(st.sampled_from([0.5, 0.9, 0.99, 1.0, 1.01, 1.1, 2.0]))
    skip = draw(st.sampled_from([None, *Skip])) if state is State.SKIPPED else None
    return Comparison(
        "k", metric, state, was, now, change=now - was,
        relative_change=now / was - 1 if was else None,
        message=draw(st.sampled_from(["", "a message"])), skip=skip,
    )  # fmt: skip


@st.composite
def _kernel(draw: st.DrawFn) -> tuple[tuple[Comparison, ...], KernelFacts]:
    metrics = draw(
        st.lists(
            st.sampled_from([*_NUMERIC, "dominant_stall"]), min_size=1, max_size=8, unique=True
        )
    )
    comparisons = tuple(draw(_comparison(m)) for m in metrics)
    entries = []
    for c in comparisons:
        own = draw(st.sampled_from([None, ThresholdOverride(relative=0.05)]))
        entries.append(
            MetricBaseline(
                c.metric,
                c.baseline if c.baseline is not None else 0.0,
                threshold=own,
                calibration=draw(st.sampled_from([None, "calibrated"])),
            )
        )
    kernel = KernelBaseline(
        "k", KernelMatch(name="k"), tuple(entries),
        launches=draw(st.sampled_from([None, 1, 4])),
        info={"dram_bytes": 1e6, "instructions_executed": 1e6},
    )  # fmt: skip
    facts = KernelFacts(
        kernel,
        Baseline((kernel,)),
        waived=frozenset(draw(st.lists(st.sampled_from(list(Skip)), max_size=2))),
        current={
            "dram_bytes": draw(st.sampled_from([5e5, 1e6, 2e6])),
            "instructions_executed": 1e6,
        },
        factor=draw(st.sampled_from([None, CommonFactor(1.02, 3)])),
        choice=draw(st.sampled_from(["", "the autotuner chose BLOCK 64; BLOCK 128 was faster"])),
    )
    return comparisons, facts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_kernel())
def test_no_rule_rewrites_a_comparison_outside_its_declaration(
    kernel: tuple[tuple[Comparison, ...], KernelFacts],
) -> None:
    # judge() would drop such a rewrite: a rule's declaration must say all it does.
    comparisons, facts = kernel
    for rule in RULES:
        got = rule.apply(comparisons, facts)
        assert len(got) == len(comparisons), rule.name
        for old, new in zip(comparisons, got, strict=True):
            assert old.state in rule.acts_on or new == old, (rule.name, old, new)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_kernel(), st.booleans())
def test_the_fast_route_is_every_rule(
    kernel: tuple[tuple[Comparison, ...], KernelFacts], all_pass: bool
) -> None:
    comparisons, facts = kernel
    if all_pass:  # the kernels the fast route is for
        comparisons = tuple(
            dataclasses.replace(c, state=State.PASS, skip=None) for c in comparisons
        )
    assert judge(comparisons, facts) == judge(comparisons, facts, fast=False)


def _facts() -> KernelFacts:
    kernel = KernelBaseline(
        "k", KernelMatch(name="k"),
        (MetricBaseline("duration", 20_000.0, threshold=ThresholdOverride(relative=0.05),
                        calibration="calibrated"),
         MetricBaseline("dram_throughput", 50.0)),
    )  # fmt: skip
    return KernelFacts(kernel, Baseline((kernel,)))


def _passing() -> tuple[Comparison, ...]:
    return (
        Comparison("k", "duration", State.PASS, 20_000.0, 20_100.0, change=100.0,
                   relative_change=0.005),
        Comparison("k", "dram_throughput", State.PASS, 50.0, 49.0, change=-1.0),
    )  # fmt: skip


def test_the_fast_route_runs_only_the_rules_that_act_on_pass() -> None:
    ran: list[str] = []

    def spy(rule: Rule) -> Rule:
        def apply(c: rules.Comparisons, f: KernelFacts) -> rules.Comparisons:
            ran.append(rule.name)
            return rule.apply(c, f)

        return dataclasses.replace(rule, apply=apply)

    spied = tuple(spy(r) for r in RULES)
    judge(_passing(), _facts(), spied)
    assert ran == [r.name for r in RULES if r.on_all_pass]
    ran.clear()
    judge(_passing(), _facts(), spied, fast=False)
    assert ran == [r.name for r in RULES]


def _fail_slow(comparisons: rules.Comparisons, facts: KernelFacts) -> rules.Comparisons:
    """A rule made up for the test: any time 0.5% slower fails."""
    return tuple(
        dataclasses.replace(c, state=State.REGRESSED)
        if c.metric == "duration" and (c.relative_change or 0.0) > 0.004
        else c
        for c in comparisons
    )


def test_a_new_rule_that_acts_on_pass_runs_for_an_all_pass_kernel_and_the_rest_follow() -> None:
    new = Rule("fail-slow", frozenset({State.PASS}), _fail_slow)
    named = dataclasses.replace(_facts(), choice="the autotuner chose BLOCK 64")
    got = judge(_passing(), named, (new, *RULES))
    assert got[0].state is State.REGRESSED
    # The rules after it see the regression, those that act on no PASS included: the
    # autotuner's choice is named, and the words say the time is beyond its noise.
    assert (
        got[0].message == "the autotuner chose BLOCK 64; beyond noise: 0.1x the 5% the noise allows"
    )
    assert got == judge(_passing(), named, (new, *RULES), fast=False)


def test_a_rewrite_outside_the_declaration_is_dropped_on_both_routes() -> None:
    wrong = Rule("fail-slow", frozenset({State.REGRESSED}), _fail_slow)
    for fast in (True, False):
        assert judge(_passing(), _facts(), (wrong,), fast=fast) == _passing()


# -- what the rules decide -----------------------------------------------------------------------


def _rate_case(duration: State, change: float) -> tuple[Comparison, ...]:
    return (
        Comparison("k", "duration", duration, 20_000.0, 20_000.0 + change, change=change,
                   relative_change=change / 20_000.0),
        Comparison("k", "dram_throughput", State.REGRESSED, 50.0, 40.0, change=-10.0,
                   relative_change=-0.2),
    )  # fmt: skip


def _explicit_rate_facts(current: dict[str, float]) -> KernelFacts:
    kernel = KernelBaseline(
        "k", KernelMatch(name="k"),
        (MetricBaseline("duration", 20_000.0),
         # The baseline's own bound: the rate gates on its own (no evidence note).
         MetricBaseline("dram_throughput", 50.0, threshold=ThresholdOverride(relative=0.05))),
        info={"dram_bytes": 1e6},
    )  # fmt: skip
    return KernelFacts(kernel, Baseline((kernel,)), current=current)


def test_a_fall_of_duration_within_noise_excuses_no_gated_rate_regression() -> None:
    facts = _explicit_rate_facts({"dram_bytes": 1e6})
    within = judge(_rate_case(State.PASS, -300.0), facts)
    assert within[1].state is State.REGRESSED and not within[1].explained
    faster = judge(_rate_case(State.IMPROVED, -4_000.0), facts)
    assert faster[1].state is State.PASS
    assert faster[1].explained == "a rate: the kernel got faster (duration -20.0%)"
    # A slower kernel's rate stands even when its work fell: the time is the point.
    fewer = _explicit_rate_facts({"dram_bytes": 5e5})
    assert judge(_rate_case(State.REGRESSED, 4_000.0), fewer)[1].state is State.REGRESSED
    fell = judge(_rate_case(State.PASS, 0.0), fewer)[1]
    assert fell.state is State.PASS and fell.explained == "a rate: dram_bytes fell with it (-50.0%)"
    # 2% less work is no fall.
    assert (
        judge(_rate_case(State.PASS, 0.0), _explicit_rate_facts({"dram_bytes": 0.985e6}))[1].state
        is State.REGRESSED
    )


def test_a_gate_not_judged_fails_unless_waived_and_evidence_never_fails() -> None:
    gate = Comparison("k", "duration", State.SKIPPED, 1.0, skip=Skip.TIME_BASIS)
    evidence = Comparison("k", "dram_throughput", State.SKIPPED, 1.0, skip=Skip.CAPTURE_TYPE)
    facts = _facts()
    assert [c.state for c in judge((gate, evidence), facts)] == [State.UNJUDGED, State.SKIPPED]
    waived = dataclasses.replace(facts, waived=frozenset({Skip.TIME_BASIS}))
    assert [c.state for c in judge((gate, evidence), waived)] == [State.SKIPPED, State.SKIPPED]


def test_evidence_beyond_its_bound_fails_only_beside_a_primary_regression() -> None:
    occupancy = Comparison("k", "achieved_occupancy", State.REGRESSED, 50.0, 30.0, change=-20.0)
    work = Comparison("k", "instructions_executed", State.REGRESSED, 1e6, 2e6, change=1e6)
    facts = _facts()
    assert judge((occupancy,), facts)[0].state is State.NOTED
    assert judge((occupancy, work), facts)[0].state is State.REGRESSED
    better = dataclasses.replace(occupancy, state=State.IMPROVED, current=70.0, change=20.0)
    (noted,) = judge((better,), facts)
    assert noted.state is State.NOTED and noted.explained.endswith("no improvement to lock in")


def test_an_evidence_metric_the_baseline_bounds_itself_is_a_gate_when_not_judged() -> None:
    evidence = Comparison("k", "dram_throughput", State.SKIPPED, 1.0, skip=Skip.CAPTURE_TYPE)
    bounded = _explicit_rate_facts({})
    assert judge((evidence,), bounded)[0].state is State.UNJUDGED
    assert judge((evidence,), _facts())[0].state is State.SKIPPED


def test_the_noise_words_and_the_factor_are_said_on_times_only() -> None:
    facts = dataclasses.replace(_facts(), factor=CommonFactor(1.0125, 4))
    slower = (
        Comparison("k", "duration", State.PASS, 20_000.0, 20_600.0, relative_change=0.03),
        Comparison("k", "dram_throughput", State.PASS, 50.0, 60.0, relative_change=0.2),
    )
    got = judge(slower, facts)
    assert got[0].message == (
        "within noise: under the 5% that runs on other machine starts moved; judged against the "
        "recorded time x1.0125: this run's 4 other kernels of 10 us or more ran +1.25% as a "
        "whole (the common factor, docs/noise.md)"
    )
    assert got[1] == slower[1]
    # A time not judged says nothing of a factor it was not judged against.
    skipped = Comparison("k", "duration", State.SKIPPED, 20_000.0, skip=Skip.TIME_BASIS)
    assert judge((skipped,), facts)[0].message == ""


# -- real captures ------------------------------------------------------------------------------

FAM = ROOT / "tests" / "data" / "field" / "families"
H100 = ROOT / "tests" / "data" / "field" / "h100"
GATE = ROOT / "tests" / "data" / "field" / "gate"


def _runs(folder: Path, name: str, suffix: str = ".csv.gz") -> tuple[Path, ...]:
    return tuple(folder / f"{name}-run{i}{suffix}" for i in (1, 2, 3))


# (the baseline's three runs, the capture checked): a rate explained, a split kernel, a stall
# mix shifted, a common factor, an autotuner's choice, evidence noted, a gate capture.
PAIRS: tuple[tuple[tuple[Path, ...], Path], ...] = (
    (_runs(FAM / "fam-a", "jax-train"), FAM / "fam-b" / "jax-remat-run1.csv.gz"),
    (_runs(H100 / "h100-a", "hf-decoder"), H100.parent / "changes" / "h100-e" / "hf-decoder-eager-run1.csv.gz"),
    (_runs(H100 / "h100-a", "hf-decoder"), H100 / "h100-b" / "hf-decoder-run1.csv.gz"),
    (_runs(H200_REAL, "torch-flash", ".csv"), H200_REAL / "start2-torch-flash-run1.csv"),
    (_runs(H100 / "h100-a", "triton-autotune"), H100 / "h100-b" / "triton-autotune-run1.csv.gz"),
    (_runs(FAM / "fam-a", "train-step"), FAM / "fam-b" / "train-step-run1.csv.gz"),
    (_runs(FAM / "fam-a", "triton-sizes"), FAM / "fam-b" / "triton-sizes-fp32-out-run1.csv.gz"),
    (_runs(GATE / "h200-e", "reductions"), GATE / "h200-f" / "reductions-run1.csv.gz"),
)  # fmt: skip
SETTINGS = (
    CheckSettings(),
    CheckSettings(other_scope="scoped otherwise"),
    CheckSettings(other_basis="another basis", waived=frozenset({Skip.SCOPE})),
)


@functools.cache
def _capture(path: Path) -> Capture:
    return read_captures([str(path)])


@functools.cache
def _baseline(runs: tuple[Path, ...]) -> Baseline:
    return record(merge([_capture(p) for p in runs]), RecordSettings()).baseline


def _checks() -> Iterator[CheckResult]:
    for runs, path in PAIRS:
        for chosen in SETTINGS:
            yield check(_baseline(runs), _capture(path), chosen)


def test_both_routes_give_the_same_verdicts_on_real_captures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = list(_checks())
    # Every kernel metric by metric, every rule run on every kernel.
    monkeypatch.setattr(LaunchTable, "kernel", lambda self, group, cc: None)
    monkeypatch.setattr(rules, "judge", functools.partial(rules.judge, fast=False))
    slow = list(_checks())
    assert fast == slow
    verdicts = [v for r in fast for v in r.verdicts]
    comparisons = [c for v in verdicts for c in v.comparisons]
    # The pairs hold what each rule decides, and kernels the fast route is for.
    assert any(all(c.state is State.PASS for c in v.comparisons) for v in verdicts)
    assert any(c.explained.startswith("a rate:") for c in comparisons)
    assert any(c.explained.startswith("the stall mix shifted") for c in comparisons)
    assert any(c.state is State.NOTED for c in comparisons)
    assert any("judged against the recorded time x" in c.message for c in comparisons)
    assert any("within noise" in c.message for c in comparisons)
    assert any(c.state is State.UNJUDGED for c in comparisons)
    assert any(v.matched_by == "split" for v in verdicts)
    assert any(c.title == "Slower autotuner choice" for v in verdicts for c in v.causes)
    assert {KernelState.PASS, KernelState.REGRESSED, KernelState.UNJUDGED} <= {
        v.state for v in verdicts
    }


# -- the routes of a check -----------------------------------------------------------------------


def _check(runs: tuple[Path, ...], path: Path, chosen: CheckSettings) -> CheckResult:
    return check(_baseline(runs), _capture(path), chosen)


def _judged_passes(v: KernelVerdict) -> bool:
    return kernel_state([c for c in v.comparisons if c.skip is None]) is KernelState.PASS


def test_a_kernel_that_passes_is_not_diagnosed() -> None:
    # compile-max-autotune on h100-b: a passing kernel's loads got wider, which its diagnosis
    # would tell as a change; only a kernel that moved is diagnosed (docs/scale.md).
    got = _check(_runs(H100 / "h100-a", "compile-max-autotune"),
                 H100 / "h100-b" / "compile-max-autotune-run1.csv.gz", CheckSettings())  # fmt: skip
    passing = [v for v in got.verdicts if all(c.state is State.PASS for c in v.comparisons)]
    assert passing and got.verdicts != tuple(passing)
    # (A kernel matched by another identity is diagnosed whatever its comparisons say.)
    assert all(not v.causes for v in passing if not v.matched_by.startswith(CHANGED))


def test_metrics_decided_before_judging_are_not_diagnosed() -> None:
    got = _check(_runs(H100 / "h100-a", "compile-max-autotune"),
                 H100 / "h100-c" / "compile-max-autotune-run1.csv.gz",
                 CheckSettings(other_scope="scoped otherwise"))  # fmt: skip
    explained = [
        (c, {m.metric for m in v.comparisons if m.skip is Skip.SCOPE})
        for v in got.verdicts
        if v.comparisons
        for c in v.causes
    ]
    assert explained and all(decided for _, decided in explained)
    assert all(not set(c.explains) & decided for c, decided in explained)


def test_a_kernel_not_judged_keeps_only_the_causes_of_what_was_judged() -> None:
    # Gate captures against a gate baseline, of another time basis and not waived: every
    # kernel is UNJUDGED; one whose judged metrics pass has no regression named.
    got = _check(_runs(GATE / "h100-j", "compile-max-autotune"),
                 GATE / "h100-k" / "compile-max-autotune-run2.csv.gz",
                 CheckSettings(other_basis="another basis"))  # fmt: skip
    quiet = [v for v in got.verdicts if v.state is KernelState.UNJUDGED and _judged_passes(v)]
    assert quiet and any(v.causes for v in quiet)
    assert all(c.kind is CauseKind.CHANGE for v in quiet for c in v.causes)


def test_a_time_says_it_was_judged_against_a_factor_only_where_it_was() -> None:
    runs = _runs(H200_REAL, "torch-flash", ".csv")
    got = _check(runs, H200_REAL / "start2-torch-flash-run1.csv", CheckSettings())
    recorded = {k.id: k.value("duration") for k in _baseline(runs).kernels}
    times = [
        (c, recorded[v.kernel])
        for v in got.verdicts
        for c in v.comparisons
        if c.metric == "duration"
    ]
    scaled = [c.baseline != was for c, was in times]
    assert any(scaled) and not all(scaled)
    for (c, _), moved in zip(times, scaled, strict=True):
        assert ("judged against the recorded time x" in c.message) is moved, c


def _bounded(baseline: Baseline, metric: str) -> Baseline:
    """`baseline` with a bound of its own on `metric` of every kernel."""
    own = ThresholdOverride(relative=0.1)
    return dataclasses.replace(baseline, kernels=tuple(
        dataclasses.replace(k, metrics=tuple(
            dataclasses.replace(m, threshold=own, calibration=None) if m.name == metric else m
            for m in k.metrics
        ))
        for k in baseline.kernels
    ))  # fmt: skip


def test_a_bound_of_the_baselines_own_on_a_metric_not_compared_makes_it_a_gate() -> None:
    # Another time basis: DRAM throughput (evidence) is not compared, split kernel included.
    base = _baseline(_runs(H100 / "h100-a", "hf-decoder"))
    capture = _capture(H100.parent / "changes" / "h100-e" / "hf-decoder-eager-run1.csv.gz")
    chosen = CheckSettings(other_basis="another basis")

    def states(b: Baseline) -> set[State]:
        verdicts = check(b, capture, chosen).verdicts
        assert any(v.matched_by == "split" for v in verdicts)
        return {c.state for v in verdicts for c in v.comparisons if c.metric == "dram_throughput"}

    assert states(base) == {State.SKIPPED}
    assert states(_bounded(base, "dram_throughput")) == {State.UNJUDGED}
    chosen = dataclasses.replace(chosen, waived=frozenset({Skip.CAPTURE_TYPE}))
    assert states(_bounded(base, "dram_throughput")) == {State.SKIPPED}


def test_a_metric_not_compared_shows_the_value_its_entry_recorded() -> None:
    # An autotuned entry is judged against its best configuration's time; a duration not
    # compared (another time basis) shows what the entry holds.
    base = _baseline(_runs(H100 / "h100-a", "triton-autotune"))
    tuned = next(k for k in base.kernels if k.tuned)
    slower = dataclasses.replace(tuned, metrics=tuple(
        dataclasses.replace(m, value=float(m.value) * 1.5) if m.name == "duration" else m
        for m in tuned.metrics
    ))  # fmt: skip
    edited = dataclasses.replace(
        base, kernels=tuple(slower if k is tuned else k for k in base.kernels)
    )
    capture = _capture(H100 / "h100-b" / "triton-autotune-run1.csv.gz")
    got = check(edited, capture, CheckSettings(other_basis="another basis"))
    (shown,) = [
        c for v in got.verdicts if v.kernel == tuned.id for c in v.comparisons
        if c.metric == "duration"
    ]  # fmt: skip
    assert shown.skip is Skip.TIME_BASIS and shown.baseline == slower.value("duration")
    assert shown.baseline != tuned.value("duration")
