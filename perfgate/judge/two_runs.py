"""The bound of a kernel's time in a check of two runs or more of one build (`perfgate check -c
RUN1 -c RUN2`), and of four runs or more (four_run_bound): its duration is the fastest launch
of them all, and a process that ran slow as a whole on one run is outvoted by the others.
Measured on the corpus's starts with two runs (perfgate.metrics.timefloors
TWO_RUN_FLOOR_POINTS and TWO_RUN_CORRECTED_FLOOR_POINTS, docs/noise.md "Two runs per
check"): from 20 us an H100 kernel's largest move past its own spread fell from 3.94% in one
run to 2.11% in two, an H200 kernel's 10-20 us from 6.07% to 3.08% after the common factor.

Only a bound the time floor set is tightened: a bound set by the kernel's own spread (twice it
still covers it) or by a user's threshold is kept, as perfgate.judge.common_mode keeps it."""

from __future__ import annotations

from perfgate.judge.common_mode import SPREAD_K, set_by_floor
from perfgate.metrics.timefloors import four_run_floor_at, two_run_floor_at

# Two capture files or more: the fastest launch of one run is judged by one run's noise.
MIN_RUNS = 2
# The times a second run narrows: the fastest launch of all the runs. A kernel's total time is
# each run's total, the median over the runs (catalog: Aggregate.SUM), which of two runs is
# their mean, not the faster: a run that was slow as a whole moves it by half, and the two-run
# floor (measured on the fastest launch) does not cover it (an H200 cuBLAS GEMM of 11.7 us,
# launched once a run: total time +3.91% against a two-run bound of 3.66% on an unchanged
# build, its duration within it, benchmarks/pooled.py).
TWO_RUN_METRICS = frozenset({"duration"})


def two_run_bound(
    recorded: float,
    judged: float,
    recorded_ns: float,
    gpu: str | None,
    own_spread: float,
    runs: int,
    corrected: bool = False,
) -> float | None:
    """The bound of a time measured over `runs` capture files, or None where the two-run floor
    does not apply or would not tighten it. `recorded`: the bound the baseline holds; `judged`:
    the bound it is judged under otherwise (the corrected one, where a common factor applied:
    `corrected`, which picks the two-run floor of a corrected time). Where the time floor set
    the recorded bound: the two-run floor or K x the kernel's own spread, the larger, where
    that is below `judged`."""
    if runs < MIN_RUNS:
        return None
    floor = two_run_floor_at(recorded_ns, gpu, corrected)
    if floor is None or not set_by_floor(recorded, recorded_ns, gpu):
        return None
    # Rounded as a recorded bound is (the YAML keeps 4 digits): 'bound 2.75%', not 2.7512%.
    bound = round(max(floor, SPREAD_K * own_spread), 4)
    return bound if bound < judged else None


# Four capture files or more: a 10-20 us kernel's fastest launch is judged as measured, under
# the four-run floor (perfgate.metrics.timefloors.FOUR_RUN_FLOOR_POINTS).
FOUR_RUNS = 4


def four_run_bound(recorded: float, recorded_ns: float, gpu: str | None, runs: int) -> float | None:
    """The bound of a duration that is the fastest launch of `runs` capture files, judged as
    measured: the four-run floor, or None where it does not apply (fewer runs, a kernel outside
    10-20 us, another GPU kind, a bound the floor did not set) or would not tighten it. Not
    K x the kernel's own spread, as two_run_bound takes: that spread is the range of one run's
    fastest launch between the runs of a start, and the fastest of four runs does not carry it
    (the floor covers the whole move of such checks, timefloors.FOUR_RUN_FLOOR_POINTS). A
    kernel whose own spread or look-back wait set its recorded bound keeps the other rules."""
    if runs < FOUR_RUNS:
        return None
    floor = four_run_floor_at(recorded_ns, gpu)
    if floor is None or not set_by_floor(recorded, recorded_ns, gpu):
        return None
    return floor if floor < recorded else None


def runs_words(runs: int, bound: float, as_measured: bool = False) -> str:
    """'two runs: bound 2.75%': why a time's bound is tighter than one run's; `as_measured`:
    the four-run floor's, judged without the common factor."""
    count = "two" if runs == MIN_RUNS else str(runs)
    if as_measured:
        return (
            f"{count} runs: bound {bound * 100:.3g}% (the floor of a check of four runs or "
            "more, judged as measured, docs/noise.md)"
        )
    return (
        f"{count} runs: bound {bound * 100:.3g}% (the floor of a check of two runs or more, "
        "docs/noise.md)"
    )
