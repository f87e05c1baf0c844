"""A kernel's judgement after its metrics: the rules that change a comparison once every metric
of the kernel was compared on its own (perfgate.judge.comparison.compare_metric), in one
registry, RULES, applied by one function, judge().

A rule is a small pure function of the kernel's comparisons and its facts (KernelFacts) that
gives the comparisons back, each the same or rewritten: a rate explained by faster work, an
evidence metric noted, a gate not judged settled, a time comparison worded against its noise.
Each rule declares the comparison states it may rewrite (`acts_on`), and judge() keeps a
rule's rewrite of a comparison only where that comparison's state was one it declared. So a
kernel whose every comparison passed can be changed only by the rules that act on PASS, and
judge() runs only those for it: the fast route of the common all-pass kernel is derived from
the declarations, never written beside them, and a rule added to RULES runs on every route
it can change (tests/judge/test_judge_rules.py enumerates the registry and holds the fast route
to running every rule, on real captures)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.judge.common_mode import CommonFactor, noise_words
from perfgate.judge.comparison import Comparison, State, Value
from perfgate.judge.skips import Skip, passes
from perfgate.judge.two_runs import runs_words
from perfgate.metrics.catalog import (
    SHORT_KERNEL_NS,
    SHORT_KERNEL_SLACK_NS,
    Role,
    lookup,
    role_of,
)
from perfgate.metrics.thresholds import CategoricalOverride

# The metrics that judge a kernel's time (a launch, and a run's sum of its launches), which a
# common factor corrects (perfgate.judge.common_mode) and the noise words are for.
CORRECTED = ("duration", "total_time")


@dataclass(frozen=True)
class KernelFacts:
    """What the rules read beside a kernel's comparisons."""

    # The kernel's entry as judged: per configuration, its times scaled by a common factor,
    # without the metrics decided before judging (another scope's launch counts).
    kernel: KernelBaseline
    baseline: Baseline
    # The entry as recorded, where `kernel` lost metrics: whose bounds the baseline set
    # itself is read from it (None: `kernel` is the entry as recorded).
    recorded: KernelBaseline | None = None
    # The reasons the user waived by name (perfgate.judge.skips).
    waived: frozenset[Skip] = frozenset()
    # The kernel's values in the capture beyond its comparisons (a rate's work metrics); the
    # check measures them when a rule first reads one.
    current: Mapping[str, Value] = field(default_factory=dict)
    # Its process's common factor, where its time was judged against the recorded time x it.
    factor: CommonFactor | None = None
    # An autotuned kernel's slower configuration in words (perfgate.identity.configs).
    choice: str = ""
    # The time metrics bounded by the floor of a check of `runs` capture files
    # (perfgate.judge.two_runs): the comparison says so.
    two_run: frozenset[str] = frozenset()
    runs: int = 1
    # Those of them judged as measured under the four-run floor: no common factor.
    as_measured: frozenset[str] = frozenset()

    @functools.cached_property
    def explicit(self) -> frozenset[str]:
        """The metrics whose bound the baseline sets itself (explicit_metrics); read by few
        kernels, so worked out on first read."""
        return explicit_metrics(self.recorded or self.kernel, self.baseline)


Comparisons = tuple[Comparison, ...]


@dataclass(frozen=True)
class Rule:
    """One rule of a kernel's judgement. `acts_on`: the comparison states it may rewrite; it
    can change a kernel whose every comparison passed only if PASS is among them."""

    name: str
    acts_on: frozenset[State]
    apply: Callable[[Comparisons, KernelFacts], Comparisons]

    @property
    def on_all_pass(self) -> bool:
        return State.PASS in self.acts_on


def explicit_metrics(kernel: KernelBaseline, baseline: Baseline) -> frozenset[str]:
    """The metrics whose bound the baseline sets itself: a per-metric `threshold:` perfgate
    did not calibrate (a calibrated one has `calibration:` beside it), a `check:`, or an entry
    of the file's `thresholds:` or `checks:` map."""
    own = {
        m.name
        for m in kernel.metrics
        if (m.threshold is not None and m.calibration is None) or _sets_check(m.check)
    }
    return frozenset(own | set(baseline.thresholds) | set(baseline.checks))


def _sets_check(check: CategoricalOverride | None) -> bool:
    # The loader gives every metric an override, empty where the file wrote none.
    return check is not None and any(
        v is not None for v in (check.stable, check.expect, check.forbid, check.margin)
    )


def explain_rates(comparisons: Comparisons, facts: KernelFacts) -> Comparisons:
    """A rate (DRAM %, throughput %) divides work by time: when the kernel got faster, or the
    work fell with the rate, the lower rate is the consequence of a good change, not a
    regression (a kernel reading half the bytes 20% faster uses less DRAM bandwidth)."""
    duration = next((c for c in comparisons if c.metric == "duration"), None)
    # The change's sign, not the state alone: a baseline may override duration's direction.
    # A fall within its noise (PASS) is no faster kernel, and excuses nothing.
    faster = duration is not None and duration.state is State.IMPROVED and _fell(duration)
    # A slower kernel's rates are never explained away by its work: the time is the point.
    slower = duration is not None and duration.state is State.REGRESSED and not _fell(duration)
    out = list(comparisons)
    for i, c in enumerate(comparisons):
        rate_of = lookup(c.metric).rate_of if c.state is State.REGRESSED else ()
        if not rate_of:
            continue
        reason = ""
        if faster and duration is not None:
            reason = f"the kernel got faster (duration {_pct(duration.relative_change)})"
        for work in () if slower else rate_of:
            reason = _fell_with(work, facts) or reason
        if reason:
            out[i] = replace(c, state=State.PASS, explained=f"a rate: {reason}")
    return _same_or(comparisons, out)


def _fell_with(work: str, facts: KernelFacts) -> str:
    """`work` fell by more than 2% from its recorded value, in words; "" otherwise."""
    before, after = facts.kernel.value(work), facts.current.get(work)
    if not isinstance(before, float) or not isinstance(after, float) or before <= 0:
        return ""
    if after < before * 0.98:
        return f"{work} fell with it ({_pct(after / before - 1)})"
    return ""


def _fell(comparison: Comparison) -> bool:
    return comparison.change is not None and comparison.change < 0


def _pct(rel: float | None) -> str:
    return "" if rel is None else f"{rel * 100:+.1f}%"


_MIX_SHIFTED = (
    "the stall mix shifted, but no reason's stall cycles per instruction grew beyond its bound"
)


def corroborate_stall_mix(comparisons: Comparisons, facts: KernelFacts) -> Comparisons:
    """Shares are zero-sum: when two reasons are close, the dominant one flips between runs
    with no stall getting longer (seen: a Triton matmul's barrier and long_scoreboard on an
    H100, within one machine start). A changed dominant stall counts when the stall cycles
    per instruction of some reason regressed beyond their own bound; without stall_cpi in the
    baseline the categorical check stands alone."""
    cpi = [c for c in comparisons if c.metric.startswith("stall_cpi.")]
    if not cpi or any(c.state is State.REGRESSED for c in cpi):
        return comparisons
    return tuple(
        replace(c, state=State.PASS, explained=_MIX_SHIFTED)
        # Only the "must not change" check: an expect or forbid the user wrote stands.
        if c.metric == "dominant_stall"
        and c.state is State.REGRESSED
        and c.message.startswith("changed from")
        else c
        for c in comparisons
    )


def note_evidence(comparisons: Comparisons, facts: KernelFacts) -> Comparisons:
    """An evidence metric (perfgate.metrics.catalog.Role) beyond its bound fails its kernel
    only beside a primary regression of the same kernel, or under a bound the baseline set
    itself; otherwise it is NOTED. Beyond its bound the better way it is NOTED too, never
    IMPROVED, unless the baseline set its bound itself. Rates, shares and stall cycles moved
    that far between machine starts of unchanged builds (tests/data/field/h100,
    docs/noise.md), while the work and launch configuration did not."""
    kernel = facts.kernel
    recorded = kernel.value("duration")
    duration = recorded if isinstance(recorded, float | int) else None

    def role(c: Comparison) -> Role:
        moved = moved_per_launch(c, kernel)
        if c.state is State.IMPROVED and moved is not None:
            moved = abs(moved)  # a short kernel faster by more than the slack gained for real
        return role_of(c.metric, duration, moved)

    primary = any(c.state is State.REGRESSED and role(c) is Role.PRIMARY for c in comparisons)
    # Beside a primary regression an evidence regression explains it and stays; an evidence
    # move the better way is never an improvement: the same noise between machine starts
    # (tests/data/field against h100-a: a fill kernel's achieved occupancy +42% on h100-c, an
    # add's stall cycles per instruction -24% and a layout kernel's store sectors -7.5% on
    # h100-b) would otherwise be reported as one, and tightened in by the ratchet.
    noted = [
        c.metric
        for c in comparisons
        if (c.state is State.IMPROVED or (c.state is State.REGRESSED and not primary))
        and role(c) is Role.EVIDENCE
    ]
    if not noted:
        return comparisons
    explicit = facts.explicit
    return tuple(
        replace(c, state=State.NOTED, explained=why_noted(c.metric, c.state is State.IMPROVED))
        if c.metric in noted and c.metric not in explicit
        else c
        for c in comparisons
    )


def moved_per_launch(c: Comparison, kernel: KernelBaseline) -> float | None:
    """How far a time comparison moved, in ns a launch (total_time is per run)."""
    if not isinstance(c.current, float | int) or not isinstance(c.baseline, float | int):
        return None
    launches = kernel.launches if c.metric == "total_time" and kernel.launches else 1
    return (c.current - c.baseline) / launches


def why_noted(metric: str, better: bool = False) -> str:
    if role_of(metric) is Role.PRIMARY:  # primary in general: evidence for a short kernel
        return (
            f"evidence only: a kernel under {SHORT_KERNEL_NS / 1000:g} us that moved by at most "
            f"{SHORT_KERNEL_SLACK_NS / 1000:g} us a launch, whose time the program's GPU time "
            "gates; "
            + ("no improvement to lock in" if better else "no primary metric of it regressed")
        )
    if better:
        return "evidence only: not gated, so no improvement to lock in"
    return "evidence only: no primary metric of this kernel regressed"


def name_choice(comparisons: Comparisons, facts: KernelFacts) -> Comparisons:
    """An autotuned kernel slower than the best configuration its baseline saw: its duration
    says which configuration the autotuner chose and which was the best."""
    if not facts.choice:
        return comparisons
    named = facts.choice
    return tuple(
        replace(c, message=f"{c.message}; {named}" if c.message else named)
        if c.metric == "duration" and c.state is State.REGRESSED
        else c
        for c in comparisons
    )


def word_noise(comparisons: Comparisons, facts: KernelFacts) -> Comparisons:
    """Each time comparison says how its change reads against the noise; where a common
    factor was taken out (perfgate.judge.common_mode), that it was judged against the
    recorded time x the factor; and where its bound is the floor of a check of two runs or
    more (perfgate.judge.two_runs), that it is. Words only: no state changes."""
    factor = facts.factor
    why = (
        f"judged against the recorded time x{factor.factor:.4f}: this run's {factor.peers} "
        f"other kernels of 10 us or more ran {(factor.factor - 1) * 100:+.2f}% as a whole "
        "(the common factor, docs/noise.md)"
        if factor is not None
        else ""
    )
    bounds = {
        m.name: m.threshold.relative
        for m in facts.kernel.metrics
        if m.name in CORRECTED and m.threshold is not None and m.threshold.relative is not None
    }
    out = list(comparisons)
    for i, c in enumerate(comparisons):
        if c.metric not in CORRECTED or c.skip is not None:
            continue
        regressed = c.state is State.REGRESSED
        bound = bounds.get(c.metric, 0.0)
        words = noise_words(c.relative_change, bound, regressed)
        measured = c.metric in facts.as_measured
        runs = runs_words(facts.runs, bound, measured) if c.metric in facts.two_run else ""
        extra = "; ".join(w for w in (runs, words, "" if measured else why) if w)
        if extra:
            out[i] = replace(c, message=f"{c.message}; {extra}" if c.message else extra)
    return _same_or(comparisons, out)


def settle(comparisons: Comparisons, facts: KernelFacts) -> Comparisons:
    """A gate the baseline holds that was not judged fails (UNJUDGED) unless its reason was
    waived by name (perfgate.judge.skips); an evidence metric is no gate, so it stays
    SKIPPED, named."""
    out = list(comparisons)
    for i, c in enumerate(comparisons):
        # Only a comparison not judged carries its reason, and it is made SKIPPED.
        if c.skip is None or c.state is not State.SKIPPED:
            continue
        gate = role_of(c.metric) is Role.PRIMARY or c.metric in facts.explicit
        fails = gate and not passes(c.skip, facts.waived)
        out[i] = replace(c, state=State.UNJUDGED if fails else State.SKIPPED)
    return _same_or(comparisons, out)


def _same_or(comparisons: Comparisons, out: list[Comparison]) -> Comparisons:
    """`comparisons` itself where no rule rewrote one (judge() then has nothing to keep)."""
    if all(a is b for a, b in zip(comparisons, out, strict=True)):
        return comparisons
    return tuple(out)


_ALL_STATES = frozenset(State)

# The registry, in the order the rules apply: a later rule reads what an earlier one decided
# (the autotuner's choice words a duration that is still a regression once evidence is noted).
RULES: tuple[Rule, ...] = (
    Rule("explain-rates", frozenset({State.REGRESSED}), explain_rates),
    Rule("corroborate-stall-mix", frozenset({State.REGRESSED}), corroborate_stall_mix),
    Rule("note-evidence", frozenset({State.REGRESSED, State.IMPROVED}), note_evidence),
    Rule("name-autotuner-choice", frozenset({State.REGRESSED}), name_choice),
    # Words on a passing time as well ("within noise"), whatever the state.
    Rule("word-noise", _ALL_STATES, word_noise),
    # Not judged: SKIPPED is the only state a comparison with a reason is made in.
    Rule("settle-not-judged", frozenset({State.SKIPPED}), settle),
)


def judge(
    comparisons: Sequence[Comparison],
    facts: KernelFacts,
    rules: Sequence[Rule] = RULES,
    fast: bool = True,
) -> Comparisons:
    """The kernel's comparisons after every rule of `rules`, in order. A rule's rewrite of a
    comparison is kept only where the comparison's state is one the rule acts on. `fast`:
    while every comparison passes, a rule that does not act on PASS is not run, since it
    could change nothing (the same result as running it: tests/judge/test_judge_rules.py)."""
    out = tuple(comparisons)
    passing = fast and _all_pass(out)
    for rule in rules:
        if passing and not rule.on_all_pass:
            continue
        got = rule.apply(out, facts)
        if got is out:
            continue
        kept = tuple(
            new if old.state in rule.acts_on else old for old, new in zip(out, got, strict=True)
        )
        if kept != out:
            out = kept
            passing = fast and _all_pass(out)
    return out


def _all_pass(comparisons: Comparisons) -> bool:
    # Identity, not a set of states: an enum's hash is Python code.
    return all(c.state is State.PASS for c in comparisons)
