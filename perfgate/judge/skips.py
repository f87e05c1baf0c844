"""Why a gate the baseline holds was not judged, and what that means for the build: one table.

A check passes only if every gate the baseline holds for a kernel in the capture was judged
(docs/check.md "Not judged"). A gate that could not be judged ends in a comparison of its own
state: UNJUDGED, which fails the check (exit 2, like any input the gate could not judge), unless
the user waived that reason by name (`check --waive REASON`, the Action's `waive:` input, or a
baseline's `waive:` list); a waived one is SKIPPED, passes, and the report still says what was
not gated and why. Every reason is waived by name alone, a new launch configuration included:
its configuration-dependent counters were gated and not compared.

Every writer (status line, text, markdown, JUnit, JSON, step outputs) takes a reason's words
from here, so the same skip reads the same everywhere."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from perfgate.common.errors import UsageError


class Skip(enum.Enum):
    """Why a gate was not judged; the value is the name a user waives it by."""

    # Durations of a capture measured under another metric set than the baseline's (a gate
    # capture's short kernels run 2-4% longer than a full capture's).
    TIME_BASIS = "time-basis"
    # Values a gate capture measures otherwise than a full capture (DRAM bytes: 2-8% fewer)
    # or does not collect at all (stall and efficiency counters, left to the diagnosis phase).
    CAPTURE_TYPE = "capture-type"
    # Launch counts of a capture whose ncu launch filters differ from the baseline's.
    SCOPE = "scope"
    # A metric this GPU's architecture does not have (a check across GPUs).
    ARCHITECTURE = "architecture"
    # A library kernel at another tile than recorded: its tile-dependent counters.
    CONFIGURATION = "configuration"


@dataclass(frozen=True)
class SkipPolicy:
    what: str  # what was not judged, as a reader says it
    fix: str  # how to have it judged instead


TABLE: dict[Skip, SkipPolicy] = {
    Skip.TIME_BASIS: SkipPolicy(
        "durations (duration, total_time, program time) of a capture of another time basis",
        "capture with the baseline's phase (perfgate capture -b BASELINE picks it; a baseline "
        "from hand captures needs --phases full), or record the baseline from captures of "
        "the phase CI takes",
    ),
    Skip.CAPTURE_TYPE: SkipPolicy(
        "values that depend on the capture type (DRAM bytes, and counters a gate capture "
        "does not collect) against a baseline of another capture type",
        "capture with the baseline's phase (perfgate capture -b BASELINE picks it), or record "
        "the baseline from captures of the phase CI takes",
    ),
    Skip.SCOPE: SkipPolicy(
        "launch counts (launches, total_time, program time) of a capture scoped by other ncu "
        "launch filters",
        "capture with the baseline's launch filters (perfgate capture -b BASELINE applies "
        "them when given none), or declare the scope the baseline was recorded with "
        "(perfgate baseline record --scope)",
    ),
    Skip.ARCHITECTURE: SkipPolicy(
        "metrics this GPU's architecture does not have",
        "check against a baseline recorded on this GPU",
    ),
    Skip.CONFIGURATION: SkipPolicy(
        "the launch-configuration-dependent counters (registers, shared memory, occupancy, "
        "sectors, instructions) of a kernel at a launch configuration its baseline never saw "
        "(duration, total_time, launches and DRAM bytes are judged)",
        "pin the configuration (an autotuner's config, Inductor's cache), or record the new one "
        "(perfgate baseline accept --reason ...)",
    ),
}
if set(TABLE) != set(Skip):
    raise AssertionError(f"perfgate.judge.skips.TABLE has no entry for {set(Skip) - set(TABLE)}")

WAIVABLE: tuple[str, ...] = tuple(s.value for s in Skip)


def describe(skip: Skip, fails: bool, metrics: Sequence[str], kernels: int, program: bool) -> str:
    """ "time-basis: durations (...) not judged: duration, total_time of 10 kernels and the
    program time; capture with ... (or --waive time-basis)": every writer's words for it."""
    policy = TABLE[skip]
    shown = ", ".join(metrics[:6]) + (f" and {len(metrics) - 6} more" if len(metrics) > 6 else "")
    parts = []
    if metrics:
        parts.append(f"{shown} of {kernels} kernel{'s' if kernels != 1 else ''}")
    if program:
        parts.append("the program time")
    what = " and ".join(parts)
    if not fails:
        return f"{skip.value} (waived): {policy.what} not gated: {what}"
    return (
        f"{skip.value}: {policy.what} not judged: {what}; {policy.fix} "
        f"(or let them pass unjudged: --waive {skip.value})"
    )


def passes(skip: Skip, waived: frozenset[Skip]) -> bool:
    """Whether a gate not judged for `skip` passes: only when waived by name."""
    return skip in waived


def parse_waivers(names: Iterable[str]) -> frozenset[Skip]:
    """`--waive` values (and a baseline's `waive:` list) as reasons; an unknown name is an
    error, never ignored (a misspelt waiver would otherwise fail closed without a word, or
    worse, a misspelt name of a future reason would be taken for another)."""
    known = {s.value: s for s in Skip}
    out: set[Skip] = set()
    for name in names:
        skip = known.get(name.strip())
        if skip is None:
            raise UsageError(f"--waive {name!r}: one of {', '.join(WAIVABLE)}")
        out.add(skip)
    return frozenset(out)
