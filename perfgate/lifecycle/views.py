"""What a reviewer of a baseline change needs to see, on plain data: one baseline condensed
(`perfgate baseline show`) and what changed between two (`perfgate baseline diff`).

Bounds are shown as the check will apply them (catalog default, then the file's `thresholds:`,
then the metric's own), so a reviewer reads the gate, not the YAML's layering.

What the check reads is listed once, as worded rules (`metric_rules`, `kernel_rules`,
`file_rules`): `diff` compares them and `show` prints them, so an edit that changes how a
kernel is gated (a widened `min`/`max`, dropped `calibration:` notes, a categorical rule, the
`program:` section, a configuration, a match field) cannot be seen by one and missed by the
other (issue 23; tests/lifecycle/test_review_rules.py walks the schema's properties).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfgate.baseline.fingerprint import Fingerprint
from perfgate.baseline.model import Baseline, HistoryEntry, KernelBaseline, MetricBaseline
from perfgate.common import patterns as user_patterns
from perfgate.judge.comparison import State, compare_metric, merged_bounds
from perfgate.lifecycle.ownership import threshold_is_perfgates
from perfgate.metrics.thresholds import CategoricalOverride, ThresholdOverride, describe_bound

Value = float | str
Rule = tuple[str, str]  # (what the check reads, worded): "min", "21.97"
UNSET = "-"


def _text(v: object) -> str:
    """One value of a rule, exactly (a reviewer compares 22.2 with 22.25)."""
    if v is None:
        return UNSET
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return f"{v:.12g}"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k} {_text(x)}" for k, x in v.items()) + "}"
    if hasattr(v, "value") and not isinstance(v, str):  # an enum (Direction)
        return str(v.value)
    return str(v)


@dataclass(frozen=True)
class MetricView:
    name: str
    value: Value
    unit: str
    bound: str  # as the check applies it
    hand_set: bool  # a threshold somebody wrote (not the calibrated or catalog one)
    rules: tuple[Rule, ...] = ()  # metric_rules() less value, unit and bound (printed apart)


@dataclass(frozen=True)
class KernelView:
    id: str
    name: str | None
    launches: int | None
    metrics: tuple[MetricView, ...]
    history: tuple[HistoryEntry, ...]
    rules: tuple[Rule, ...] = ()  # kernel_rules() less id and launches (printed apart)


@dataclass(frozen=True)
class BaselineView:
    path: str
    fingerprint: Fingerprint
    provenance: dict[str, object]
    kernels: tuple[KernelView, ...]
    total_kernels: int
    rules: tuple[Rule, ...] = ()  # file_rules()
    program_history: tuple[HistoryEntry, ...] = ()  # changes taken into the program time


def bound_text(baseline: Baseline, metric: MetricBaseline) -> str:
    defn = metric.definition
    if defn.categorical:
        return "categorical"
    judged_by = merged_bounds(defn, metric, baseline)
    return describe_bound(judged_by.threshold, judged_by.direction, metric.unit or defn.unit)


def metric_rules(baseline: Baseline, metric: MetricBaseline) -> tuple[Rule, ...]:
    """Everything the check reads of one metric, worded: `baseline diff` compares these and
    `baseline show` prints them. Bounds and categorical rules are the effective ones (catalog
    default, the file's `thresholds:`, the metric's own), as judge.comparison applies them."""
    defn = metric.definition
    rules: list[Rule] = [("value", _text(metric.value)), ("unit", metric.unit or defn.unit)]
    bounds = merged_bounds(defn, metric, baseline)
    if defn.categorical or isinstance(metric.value, str):
        check = bounds.check
        rules += [
            ("stable", _text(check.stable)),
            ("expect", _text(check.expect)),
            ("forbid", _text(check.forbid)),
            ("margin", _text(check.margin)),
        ]
    else:
        rules.append(("bound", bound_text(baseline, metric)))
        # judge.comparison.compare_metric: a calibrated bound is judged from the median, any
        # other from the edge of the recorded launches' range (min, max).
        ranged = metric.calibration is None or metric.threshold is None
        rules.append(("judged from", "the launch range" if ranged else "the median"))
    rules += [
        ("min", _text(metric.low)),
        ("max", _text(metric.high)),
        ("calibration", _text(metric.calibration)),
        ("source", _text(metric.source or None)),
        ("group", _text(metric.group)),
        ("family", _text(metric.family)),
        ("reasons", _text(metric.reasons)),
        ("shares", _text(metric.shares)),
    ]
    return tuple(rules)


def _configuration_text(kernel: KernelBaseline) -> str:
    if not kernel.configurations:
        return UNSET
    return "; ".join(
        f"{c.describe()}, {c.runs} runs"
        + (f", best {_text(c.duration)} ns" if c.duration is not None else "")
        for c in kernel.configurations
    )


def kernel_rules(kernel: KernelBaseline) -> tuple[Rule, ...]:
    """What the check reads of a kernel's entry besides its metrics: how its launches are
    matched, how many there are, its launch configurations (an autotuned entry gates less)."""
    return (
        ("id", kernel.id),
        ("launches per run", _text(kernel.launches)),
        ("identity", kernel.match.describe()),
        ("name", _text(kernel.name)),
        ("family", _text(kernel.family)),
        ("configurations", _configuration_text(kernel)),
        # A kernel only some recorded runs launched is not required: a check skips it absent.
        (
            "not required",
            f"launched in {kernel.seen_in[0]} of {kernel.seen_in[1]} recorded runs"
            if kernel.seen_in
            else UNSET,
        ),
    )


def _override_text(threshold: ThresholdOverride | None, check: CategoricalOverride | None) -> str:
    parts = [
        f"{key} {_text(getattr(item, key))}"
        for item, keys in (
            (threshold, ("relative", "absolute", "direction")),
            (check, ("stable", "expect", "forbid", "margin")),
        )
        if item is not None
        for key in keys
        if getattr(item, key) is not None
    ]
    return ", ".join(parts) or UNSET


def file_rules(baseline: Baseline) -> tuple[Rule, ...]:
    """What the check reads of the file as a whole besides the fingerprint: `thresholds:`
    (numeric and categorical, for every kernel), the `program:` section, `identity:`,
    `waive:`."""
    rules: list[Rule] = [
        (
            f"thresholds.{name}",
            _override_text(baseline.thresholds.get(name), baseline.checks.get(name)),
        )
        for name in sorted(set(baseline.thresholds) | set(baseline.checks))
    ]
    p = baseline.program
    if p is None:
        rules.append(("program.gpu_time", "not recorded (the check skips it)"))
    else:
        rules += [
            ("program.gpu_time.value", f"{_text(p.value)} {p.unit}"),
            ("program.gpu_time.threshold", f"relative {_text(p.relative)}"),
            ("program.gpu_time.runs", _text(p.runs)),
            ("program.gpu_time.calibration", _text(p.calibration)),
        ]
    rules.append(("identity.nvtx", _text(baseline.by_nvtx)))
    # Gates a check may leave unjudged without failing (docs/check.md "Not judged").
    rules.append(("waive", ", ".join(baseline.waive) if baseline.waive else "nothing"))
    return tuple(rules)


_SHOWN_APART = {"value", "unit", "bound", "id", "launches per run"}


# Rules `show` leaves out at their usual value: what an entry without them is judged by.
_USUAL = {("judged from", "the launch range")}


def _shown(rules: tuple[Rule, ...], also_same: Rule | None = None) -> tuple[Rule, ...]:
    """The rules `show` lists beside what it prints apart, less those not set or usual
    (`also_same`: one more rule to leave out, such as a name the identity already says)."""
    return tuple(
        (k, v)
        for k, v in rules
        if k not in _SHOWN_APART
        and v not in (UNSET, "[]")
        and (k, v) not in _USUAL
        and (k, v) != also_same
    )


def _metric_view(baseline: Baseline, metric: MetricBaseline) -> MetricView:
    return MetricView(
        name=metric.name,
        value=metric.value,
        unit=metric.unit or metric.definition.unit,
        bound=bound_text(baseline, metric),
        hand_set=metric.threshold is not None and not threshold_is_perfgates(metric),
        rules=_shown(metric_rules(baseline, metric)),
    )


def _selected(kernel: KernelBaseline, patterns: Sequence[str]) -> bool:
    return not patterns or any(
        user_patterns.search(p, kernel.id) or user_patterns.search(p, kernel.name or "")
        for p in patterns
    )


def view(baseline: Baseline, patterns: Sequence[str] = ()) -> BaselineView:
    for pattern in patterns:
        user_patterns.checked(pattern, "--kernel")
    kernels = tuple(
        KernelView(
            id=k.id,
            name=k.name,
            launches=k.launches,
            metrics=tuple(_metric_view(baseline, m) for m in k.metrics),
            history=k.history,
            rules=_shown(kernel_rules(k), ("name", k.match.name) if k.match.name else None),
        )
        for k in baseline.kernels
        if _selected(k, patterns)
    )
    return BaselineView(
        baseline.path,
        baseline.gpu,
        dict(baseline.provenance),
        kernels,
        len(baseline.kernels),
        file_rules(baseline),
        baseline.program.history if baseline.program is not None else (),
    )


# ------------------------------------------------------------------------------------ diff


@dataclass(frozen=True)
class MetricChange:
    metric: str
    before: Value | None  # None: the metric is new to the kernel
    after: Value | None  # None: no longer gated
    unit: str
    bound_before: str
    bound_after: str
    beyond: bool = True  # moved beyond the old bound, or a rule changed (a check would differ)
    # The other rules of metric_rules() that changed: (what, before, after).
    rules: tuple[tuple[str, str, str], ...] = ()

    @property
    def relative(self) -> float | None:
        if isinstance(self.before, float) and isinstance(self.after, float) and self.before:
            return (self.after - self.before) / abs(self.before)
        return None


@dataclass(frozen=True)
class KernelChange:
    id: str
    kind: str  # "added", "removed", "changed"
    metrics: tuple[MetricChange, ...] = ()
    history: tuple[HistoryEntry, ...] = ()  # entries B has that A had not
    launches: tuple[int | None, int | None] | None = None
    match: tuple[str, str] | None = None  # identity before, after
    # The other rules of kernel_rules() that changed: (what, before, after).
    rules: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class BaselineDiff:
    before: str
    after: str
    fingerprint: tuple[tuple[str, object, object], ...]  # (field, before, after)
    kernels: tuple[KernelChange, ...]
    # file_rules() that changed: (what, before, after), e.g. ("thresholds.duration", ...).
    thresholds: tuple[tuple[str, str, str], ...]
    program_history: tuple[HistoryEntry, ...] = ()  # entries B's program time has, A's not

    @property
    def identical(self) -> bool:
        return not (self.fingerprint or self.kernels or self.thresholds or self.program_history)


def _changed(a: tuple[Rule, ...], b: tuple[Rule, ...]) -> list[tuple[str, str, str]]:
    """The rules that differ, in order: (what, before, after); a rule one side lacks is unset."""
    before, after = dict(a), dict(b)
    names = [*before, *(k for k in after if k not in before)]
    return [
        (k, before.get(k, UNSET), after.get(k, UNSET))
        for k in names
        if before.get(k, UNSET) != after.get(k, UNSET)
    ]


def _pair(a: Baseline, b: Baseline) -> list[tuple[KernelBaseline | None, KernelBaseline | None]]:
    """Kernels of A and B paired by id, then by identity (a re-recorded id can differ)."""
    b_by_id = {k.id: k for k in b.kernels}
    b_by_match = {k.match: k for k in b.kernels}
    used: set[str] = set()
    pairs: list[tuple[KernelBaseline | None, KernelBaseline | None]] = []
    for k in a.kernels:
        other = b_by_id.get(k.id) or b_by_match.get(k.match)
        if other is not None and other.id not in used:
            used.add(other.id)
            pairs.append((k, other))
        else:
            pairs.append((k, None))
    pairs.extend((None, k) for k in b.kernels if k.id not in used)
    return pairs


_APART = {"value", "bound"}  # MetricChange holds these in fields of their own
# Rules a re-record rewrites while the gate stays as it was: the calibration's wording (whether
# there is one is the rule "judged from"), a dominant stall's recorded shares (its margin
# reads the capture's), and min/max where the bound is judged from the median on both sides.
# A change of only these is listed with --all, like a value that moved within its bound.
_NOTES = {"calibration", "shares"}
_RANGE = {"min", "max"}


def _gating(changed: tuple[tuple[str, str, str], ...], median: bool) -> bool:
    return any(what not in _NOTES and not (median and what in _RANGE) for what, _, _ in changed)


def _new_history(
    a: tuple[HistoryEntry, ...], b: tuple[HistoryEntry, ...]
) -> tuple[HistoryEntry, ...]:
    seen = {(h.date, h.reason) for h in a}
    return tuple(h for h in b if (h.date, h.reason) not in seen)


def _kernel_change(
    a: Baseline, b: Baseline, ka: KernelBaseline, kb: KernelBaseline
) -> KernelChange | None:
    ma = {m.name: m for m in ka.metrics}
    mb = {m.name: m for m in kb.metrics}
    changes = []
    for name in [*ma, *(n for n in mb if n not in ma)]:
        x, y = ma.get(name), mb.get(name)
        rules_x = metric_rules(a, x) if x else ()
        rules_y = metric_rules(b, y) if y else ()
        if x and y and rules_x == rules_y:
            continue
        before_bound = dict(rules_x).get("bound", "categorical" if x else "")
        after_bound = dict(rules_y).get("bound", "categorical" if y else "")
        others = tuple(r for r in _changed(rules_x, rules_y) if r[0] not in _APART)
        unit = (y or x).unit or (y or x).definition.unit  # type: ignore[union-attr]
        beyond = True
        if x and y and isinstance(x.value, float) and isinstance(y.value, float):
            defn = x.definition
            moved = compare_metric(ka.id, x, defn, y.value, unit, merged_bounds(defn, x, a))
            median = (
                dict(rules_x).get("judged from")
                == dict(rules_y).get("judged from")
                == ("the median")
            )
            beyond = (
                moved.state is not State.PASS
                or before_bound != after_bound
                or _gating(others, median)
            )
        changes.append(
            MetricChange(
                name,
                x.value if x else None,
                y.value if y else None,
                unit,
                before_bound,
                after_bound,
                beyond,
                others if x and y else (),
            )
        )
    history = _new_history(ka.history, kb.history)
    launches = (ka.launches, kb.launches) if ka.launches != kb.launches else None
    match = (ka.match.describe(), kb.match.describe()) if ka.match != kb.match else None
    rules = tuple(
        r
        for r in _changed(kernel_rules(ka), kernel_rules(kb))
        if r[0] not in ("launches per run", "identity")
    )
    if not (changes or history or launches or match or rules):
        return None
    return KernelChange(kb.id, "changed", tuple(changes), history, launches, match, rules)


# The fingerprint's fields, each of which changes what a check gates (which captures it takes,
# which values it compares: scope, time basis, clock and cache control, the stall family...):
# every one of them, by the dataclass's own list, so a field added to the fingerprint is in the
# diff without a second list to keep (tests/lifecycle/test_review_rules.py walks the schema's).
FINGERPRINT_FIELDS = tuple(f.name for f in dataclasses.fields(Fingerprint) if f.name != "metrics")


def fingerprint_changes(a: Fingerprint, b: Fingerprint) -> tuple[tuple[str, object, object], ...]:
    """(field, before, after) for each fingerprint field that differs; the raw metrics as the
    ones removed and the ones added."""
    fp = tuple(
        (f, getattr(a, f), getattr(b, f))
        for f in FINGERPRINT_FIELDS
        if getattr(a, f) != getattr(b, f)
    )
    metrics_a, metrics_b = set(a.metrics), set(b.metrics)
    if metrics_a != metrics_b:
        fp += (
            (
                "metrics",
                ", ".join(sorted(metrics_a - metrics_b)) or "-",
                ", ".join(sorted(metrics_b - metrics_a)) or "-",
            ),
        )
    return fp


def diff(a: Baseline, b: Baseline) -> BaselineDiff:
    fp = fingerprint_changes(a.gpu, b.gpu)
    kernels: list[KernelChange] = []
    for ka, kb in _pair(a, b):
        if ka is None and kb is not None:
            kernels.append(KernelChange(kb.id, "added", history=kb.history))
        elif kb is None and ka is not None:
            kernels.append(KernelChange(ka.id, "removed"))
        elif ka is not None and kb is not None:
            change = _kernel_change(a, b, ka, kb)
            if change is not None:
                kernels.append(change)
    settings = tuple(_changed(file_rules(a), file_rules(b)))
    program_history = _new_history(
        a.program.history if a.program is not None else (),
        b.program.history if b.program is not None else (),
    )
    return BaselineDiff(a.path, b.path, fp, tuple(kernels), settings, program_history)
