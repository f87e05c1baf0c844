"""Warp stall reasons and the metric families ncu reports them in.

One numerator, several families (base names checked against GH100's
`ncu --query-metrics`, the CSV column adds the rollup or submetric):

1. `smsp__warp_issue_stalled_<r>_per_warp_active.pct`: percent of active cycles (only when
   asked for by name),
2. `smsp__average_warps_issue_stalled_<r>_per_issue_active.ratio`: warps per issue-active cycle
   (in `--set full`; values such as 22,040 are not percentages),
3. `smsp__average_warp_latency_issue_stalled_<r>.ratio`: cycles a warp spent stalled on r per
   issued instruction,
4. `smsp__warps_issue_stalled_<r>.sum`: the counter itself (warp-cycles),
5. `smsp__pcsamp_warps_issue_stalled_<r>`: sampled counts (SourceCounters section; spells
   `no_instructions`).

Families 1 to 4 divide the same counter by constants of the launch, so a reason's share of the
family's sum is the same in all four: one comparability group, *counters*. Family 5 is sampled
and moves by a few points between runs; its shares are never compared with the counters.

`selected` is issuing and `not_selected` is an eligible warp another warp was picked over
(enough parallelism): neither is a stall, so neither is ever in a share or the dominant stall.
Every warp-cycle is in exactly one state, so the states add up with `selected`: r / selected
is the cycles stalled on r per instruction issued (`stall_cpi`), an absolute measure that does
not fall when another reason grows, unlike a share.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from perfgate.ingest.launches import Value, cc_version

REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss",
    "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
    "no_instruction", "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
    "warpgroup_arrive",
)  # fmt: skip
ISSUING = "selected"
NOT_STALLS = frozenset({ISSUING, "not_selected"})
STALL_REASONS: tuple[str, ...] = tuple(r for r in REASONS if r not in NOT_STALLS)

# Which reasons exist where (GH100's `ncu --query-metrics` list): gmma needs CC 9.0, imc_miss
# CC <= 9.0; warpgroup_arrive is reported only by PC sampling, and PC sampling on sm_90 has
# no gmma (seen in a --set full capture: warpgroup_arrive instead).
_CC9_ONLY = {"gmma"}
_UP_TO_CC9 = {"imc_miss"}
_SAMPLING_ONLY = {"warpgroup_arrive"}
_COUNTERS_ONLY = {"gmma"}


_METRIC_NAMES: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class StallFamily:
    name: str
    group: str  # shares compare only within one group
    template: str  # raw metric name with {reason}
    spelling: Mapping[str, str] = field(default_factory=dict)  # reason -> this family's spelling
    # True: the value is already cycles per issued instruction; False: divide by `selected`.
    per_instruction: bool = False

    def metric(self, reason: str) -> str:
        # Called for every reason of every launch: the names are built once.
        key = (self.template, reason)
        name = _METRIC_NAMES.get(key)
        if name is None:
            name = _METRIC_NAMES[key] = self.template.format(
                reason=self.spelling.get(reason, reason)
            )
        return name

    def metrics(self, cc: str | None = None, with_selected: bool = True) -> tuple[str, ...]:
        names = [self.metric(r) for r in reasons_for(cc, self.name)]
        if with_selected:
            names.append(self.metric(ISSUING))
        return tuple(names)


FAMILIES: tuple[StallFamily, ...] = (
    StallFamily("per_warp_active", "counters",
                "smsp__warp_issue_stalled_{reason}_per_warp_active.pct"),
    StallFamily("per_issue_active", "counters",
                "smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"),
    StallFamily("latency", "counters", "smsp__average_warp_latency_issue_stalled_{reason}.ratio",
                per_instruction=True),
    StallFamily("count", "counters", "smsp__warps_issue_stalled_{reason}.sum"),
    StallFamily("pc_sampling", "sampling", "smsp__pcsamp_warps_issue_stalled_{reason}",
                {"no_instruction": "no_instructions"}),
)  # fmt: skip
FAMILY_BY_NAME = {f.name: f for f in FAMILIES}

GROUP_TITLES = {
    "counters": "stall counters (smsp__warp_issue_stalled_*, smsp__average_warps_issue_stalled_*, "
    "smsp__average_warp_latency_issue_stalled_* or smsp__warps_issue_stalled_*)",
    "sampling": "PC sampling (smsp__pcsamp_warps_issue_stalled_*)",
}


def reasons_for(cc: str | None, family: str) -> tuple[str, ...]:
    """Every reason `family` reports on `cc` (not_selected included, selected not)."""
    version = cc_version(cc)
    out = []
    for r in REASONS:
        if r in _SAMPLING_ONLY and family != "pc_sampling":
            continue
        if r in _COUNTERS_ONLY and family == "pc_sampling":
            continue
        if version is not None:
            if r in _CC9_ONLY and version[0] != 9:
                continue
            if r in _UP_TO_CC9 and version > (9, 0):
                continue
        out.append(r)
    return tuple(out)


def stall_reasons_for(cc: str | None, family: str) -> tuple[str, ...]:
    return tuple(r for r in reasons_for(cc, family) if r not in NOT_STALLS)


def _number(values: Mapping[str, Value], name: str) -> float | None:
    v = values.get(name)
    return v if isinstance(v, float) and math.isfinite(v) else None


def present_reasons(
    family: StallFamily,
    columns: Iterable[str],
    cc: str | None = None,
    launches: Sequence[Mapping[str, Value]] | None = None,
) -> tuple[str, ...]:
    """The stall reasons (not selected, not not_selected) the capture holds for `family`;
    with `launches`, only those at least one launch has a number for."""
    have = columns if isinstance(columns, (set, frozenset)) else set(columns)
    out = []
    for r in stall_reasons_for(cc, family.name):
        name = family.metric(r)
        if name not in have:
            continue
        if launches is not None and all(_number(v, name) is None for v in launches):
            continue
        out.append(r)
    return tuple(out)


def choose_family(
    columns: Iterable[str],
    cc: str | None = None,
    group: str | None = None,
    launches: Sequence[Mapping[str, Value]] | None = None,
) -> StallFamily | None:
    """The most complete family the capture holds (most stall reasons with values), not the
    first with any column: a capture that asked for 4 reasons by name next to `--set full`'s
    18 measures over the 18. Ties go to the counters, then to the order of FAMILIES."""
    cols = columns if isinstance(columns, frozenset) else frozenset(columns)
    if launches is None:
        # Asked for every metric of every kernel with the same columns: decide once.
        return _choose_by_columns(cols, cc, group)
    return _choose(cols, cc, group, launches)


@functools.lru_cache(maxsize=64)
def _choose_by_columns(
    cols: frozenset[str], cc: str | None, group: str | None
) -> StallFamily | None:
    return _choose(cols, cc, group, None)


def _choose(
    cols: frozenset[str],
    cc: str | None,
    group: str | None,
    launches: Sequence[Mapping[str, Value]] | None,
) -> StallFamily | None:
    best: tuple[int, int, int] | None = None
    chosen = None
    for index, fam in enumerate(FAMILIES):
        if group is not None and fam.group != group:
            continue
        count = len(present_reasons(fam, cols, cc, launches))
        if not count:
            continue
        key = (count, fam.group == "counters", -index)
        if best is None or key > best:
            best, chosen = key, fam
    return chosen


def stall_family_report(
    columns: Iterable[str],
    cc: str | None = None,
    launches: Sequence[Mapping[str, Value]] | None = None,
) -> tuple[StallFamily | None, tuple[str, ...]]:
    """The family a capture's stalls are measured in, and warnings for the caller to show:
    a family holding only some of its reasons (shares over a subset are not shares of all
    stalls), and a ratio family without `selected` (no stall_cpi)."""
    cols = frozenset(columns)
    chosen = choose_family(cols, cc, launches=launches)
    warnings: list[str] = []
    for fam in FAMILIES:
        have = present_reasons(fam, cols, cc, launches)
        if not have:
            continue
        expected = stall_reasons_for(cc, fam.name)
        missing = [r for r in expected if r not in have]
        role = "used" if fam is chosen else "not used: another family holds more reasons"
        if missing:
            warnings.append(
                f"stall family {fam.template.format(reason='<reason>')} ({role}) holds "
                f"{len(have)} of {len(expected)} stall reasons; missing: {', '.join(missing)}. "
                "Shares over a subset are not shares of all stalls: capture every reason "
                "(perfgate metrics --ncu) to compare stall shares"
            )
        if fam is chosen and not fam.per_instruction and fam.metric(ISSUING) not in cols:
            warnings.append(
                f"stall family {fam.template.format(reason='<reason>')} has no "
                f"'{fam.metric(ISSUING)}' column: stall_cpi.<reason> cannot be computed"
            )
    return chosen, tuple(warnings)


def shares(
    family: StallFamily, reasons: Iterable[str], values: Mapping[str, Value]
) -> dict[str, float] | None:
    """Each reason's percent of the stalled sum over exactly `reasons`; None when a reason has
    no value or nothing stalled."""
    return shares_by_name([(r, family.metric(r)) for r in reasons if r not in NOT_STALLS], values)


def shares_by_name(
    names: Sequence[tuple[str, str]], values: Mapping[str, Value]
) -> dict[str, float] | None:
    """shares() with each reason's column named once by the caller: a kernel's launches all
    read the same columns."""
    raw = {r: _number(values, name) for r, name in names}
    if not raw or any(v is None for v in raw.values()):
        return None
    counted = {r: v for r, v in raw.items() if v is not None}
    stalled = 0.0
    for v in counted.values():  # one addition at a time, as perfgate.metrics.columns adds columns
        stalled += v
    if stalled <= 0:
        return None
    return {r: v / stalled * 100.0 for r, v in counted.items()}


PCT_RESOLUTION = 0.01  # the smallest step of a .pct value in ncu's CSV


def cycles_per_instruction(
    family: StallFamily, reason: str, values: Mapping[str, Value]
) -> float | None:
    """Cycles a warp spent stalled on `reason` per instruction issued."""
    return cycles_from(
        family, values.get(family.metric(reason)), values.get(family.metric(ISSUING))
    )


def cycles_from(family: StallFamily, raw: Value, issued_raw: Value) -> float | None:
    """cycles_per_instruction from the two raw values (the caller looked them up once)."""
    value = raw if isinstance(raw, float) and math.isfinite(raw) else None
    if value is None or family.per_instruction:
        return value
    issued = issued_raw if isinstance(issued_raw, float) and math.isfinite(issued_raw) else None
    if issued is None:
        return None
    if issued == 0:
        if value == 0:
            return 0.0
        if family.name != "per_warp_active":
            return None
        # ncu prints the .pct family with two decimals: a kernel that almost never issues
        # (one global atomic per thread: drain 52%) reads selected "0.00". Half the last digit
        # bounds the true value from above, so the ratio is a lower bound on the stall cycles
        # per instruction, far above any baseline that did issue, instead of "no value".
        issued = PCT_RESOLUTION / 2
    return value / issued


# A check's stall metric that the capture cannot give because it holds another comparability
# group of stall family (or none): every such metric of every kernel gets one message starting
# so (mismatch_text), and the check adds one warning that counts them (issue 25: 16 lines of
# 1,000 characters per kernel before).
FAMILY_MISMATCH = "stall family mismatch: "


def mismatch_text(family: str | None, group: str, held: StallFamily | None) -> str:
    """'stall family mismatch: baseline per_warp_active counters, capture PC sampling'."""
    now = family_text(held.name, held.group) if held else "no stall metrics"
    return f"{FAMILY_MISMATCH}baseline {family_text(family, group)}, capture {now}"


def family_text(family: str | None, group: str) -> str:
    """'per_warp_active counters', 'PC sampling', 'stall counters'."""
    if group == "sampling":
        return "PC sampling"
    return f"{family} counters" if family else "stall counters"


def family_mismatch(
    recorded_group: str, columns: frozenset[str], cc: str | None
) -> tuple[bool, StallFamily | None]:
    """Whether the capture holds no stall family of `recorded_group`, and the family it holds
    (None: none at all)."""
    held = choose_family(columns, cc)
    return held is None or held.group != recorded_group, held
