"""Warp stall reasons and the three metric families ncu reports them in.

1. `smsp__warp_issue_stalled_<r>_per_warp_active.pct`: percent of active cycles (only when
   asked for by name),
2. `smsp__average_warps_issue_stalled_<r>_per_issue_active.ratio`: warps per issue-active cycle
   (in `--set full`; values such as 22,040 are not percentages),
3. `smsp__pcsamp_warps_issue_stalled_<r>`: sampled counts (SourceCounters section).

Families 1 and 2 divide the same counter by different constants, so a reason's share of the
family's sum is the same in both (seen: identical to 0.1 points on the zoo). Family 3 is
sampled and moves by a few points between runs; its shares are not compared with 1 and 2.
"selected" is issuing, not stalling: it is left out of every share.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.capture import cc_version

REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss",
    "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
    "no_instruction", "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
    "warpgroup_arrive",
)  # fmt: skip
ISSUING = "selected"

# Which reasons exist where (NCU_FACTS, seen on sm_90): gmma needs CC 9.0, imc_miss CC <= 9.0;
# warpgroup_arrive is reported only by PC sampling.
_CC9_ONLY = {"gmma"}
_UP_TO_CC9 = {"imc_miss"}
_SAMPLING_ONLY = {"warpgroup_arrive"}


def reasons_for(cc: str | None, family: str) -> tuple[str, ...]:
    version = cc_version(cc)
    out = []
    for r in REASONS:
        if r in _SAMPLING_ONLY and family != "pc_sampling":
            continue
        if version is not None:
            if r in _CC9_ONLY and version[0] != 9:
                continue
            if r in _UP_TO_CC9 and version > (9, 0):
                continue
        out.append(r)
    return tuple(out)


@dataclass(frozen=True)
class StallFamily:
    name: str
    group: str  # shares compare only within one group
    template: str  # raw metric name with {reason}
    spelling: dict[str, str]  # reason -> how this family spells it, where it differs

    def metric(self, reason: str) -> str:
        return self.template.format(reason=self.spelling.get(reason, reason))

    def metrics(self, cc: str | None = None, with_selected: bool = True) -> tuple[str, ...]:
        names = [self.metric(r) for r in reasons_for(cc, self.name)]
        if with_selected:
            names.append(self.metric(ISSUING))
        return tuple(names)


FAMILIES: tuple[StallFamily, ...] = (
    StallFamily(
        "per_warp_active",
        "counters",
        "smsp__warp_issue_stalled_{reason}_per_warp_active.pct",
        {},
    ),
    StallFamily(
        "per_issue_active",
        "counters",
        "smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio",
        {},
    ),
    StallFamily(
        "pc_sampling",
        "sampling",
        "smsp__pcsamp_warps_issue_stalled_{reason}",
        {"no_instruction": "no_instructions"},
    ),
)

GROUP_TITLES = {
    "counters": "stall counters "
    "(smsp__warp_issue_stalled_* or smsp__average_warps_issue_stalled_*)",
    "sampling": "PC sampling (smsp__pcsamp_warps_issue_stalled_*)",
}
