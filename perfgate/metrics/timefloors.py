"""The time floors: how far a kernel's duration moves across machine starts with nothing
changed, per GPU kind and duration band (docs/noise.md "The noise model" and "Common mode").

Two sets. TIME_FLOOR_POINTS is the floor of a duration judged as it is, recorded into a
baseline's bound (perfgate.lifecycle.calibrate). CORRECTED_FLOOR_POINTS is the floor of a
duration judged after its process's common factor is taken out (perfgate.judge.common_mode):
a process as a whole runs slow or fast by a few percent from one machine start to the next,
and what is left once that is removed is narrower from 10 us. Here, below the judging code,
because the check tightens a recorded floor to the corrected one at check time.
TWO_RUN_FLOOR_POINTS is the floor of a duration measured as the fastest launch of two runs or
more of one machine start (`perfgate check -c RUN1 -c RUN2`, perfgate.judge.two_runs): one
run's slow process is outvoted by the other, so what is left is narrower;
TWO_RUN_CORRECTED_FLOOR_POINTS that of such a duration judged after its common factor."""

from __future__ import annotations

import itertools

LONG_KERNEL_NS = 10_000.0
SHORT_KERNEL_NS = 2_000.0
STEADY_KERNEL_NS = 20_000.0
# The last nanosecond of the 10-20 us band: a floor that steps at 20 us (a point here and one at
# STEADY_KERNEL_NS) rather than falling along a line from 10 us.
BAND_END_NS = STEADY_KERNEL_NS - 1.0
# Time is the fastest launch (catalog: Aggregate.FASTEST), whose cross-start drift is smaller
# than the median's: seen within 1.2% from 10 us on H200 (benchmarks/detection.py).
# Per GPU kind, (duration, floor) points: shorter kernels are noisier, and H200 starts moved
# memory-bound kernels more than H100 starts did (docs/noise.md "The noise model"):
# - H100 (h100-a against b, c, d; the families' fam-a against fam-b and fam-c): 8% at 2 us
#   (a 4 us scatter kernel drifted 7.03%), 7% at 10 us (a 12.4 us cuBLAS GEMM of a training
#   step 5.41% on fam-c and 5.93% on fam-d; 5.5% before them), 4% from 20 us (a 52.5 us cuDNN
#   convolution 3.53%).
# - H200 (h200-a against h200-b, the older workloads' start1/2 against start3): 8% at 2 us,
#   11% at 10 us (a 13.6 us memory-bound reduction drifted 8.69%), 5.5% from 20 us (a 56 us
#   index_add_ kernel, atomics, 5.17%).
# Each floor covers the largest cross-start change of its band on its own: a baseline's runs
# can agree within 0.1% and the next start still move 3.5%.
# A GPU of another kind gets H200's, the wider: nothing was measured on it.
# - H100 again, every three tuning gate starts pooled against every other start
#   (benchmarks/pooled.py --moves; the points above rested on one baseline start, h100-j, which
#   ran some kernels slower than most starts): 10-20 us 8.01% (a 16.4 us reduce_kernel, one
#   run of h100-u), from 20 us 5.52% (a 23.2 us norm reduce_kernel, one run of h100-s): 9.25%
#   and 6.5%, x1.15 rounded up. A step at 20 us, not a line: the moves of 10-20 us do not
#   shrink with the duration (8.01% at 16.4 us, 6.05% at 10.5 us), and a line through them to
#   the point from 20 us would have to start near 14% at 10 us. Below 10 us no shorter kernel
#   gets less than a 10 us one (the 2 us point was 8%).
# - H200 as measured: no less up to 20 us than the corrected floor (CORRECTED_FLOOR_POINTS,
#   7.5%), since a corrected bound is never looser than the recorded one: it fell to 5.9% at
#   19.3 us, where a norm reduce_kernel moved +6.07% in one run of h200-i.
TIME_FLOOR_POINTS: dict[str, tuple[tuple[float, float], ...]] = {
    "H100": (
        (SHORT_KERNEL_NS, 0.0925), (BAND_END_NS, 0.0925), (STEADY_KERNEL_NS, 0.065),
    ),
    "H200": (
        (SHORT_KERNEL_NS, 0.08), (LONG_KERNEL_NS, 0.11), (BAND_END_NS, 0.075),
        (STEADY_KERNEL_NS, 0.055),
    ),
}  # fmt: skip
WIDEST_KIND = "H200"
# After the common factor (benchmarks/common_mode.py, every start of the corpus but the
# autotuned compile-max-autotune kernels, which are not noise), on H200 only: from 20 us the
# largest upward move beyond a kernel's own spread was 5.17% as measured and 3.53% corrected
# (an elementwise kernel of a FlashAttention model), 10-20 us 8.69% and 2.51%. On H100 the
# correction did not narrow the moves (from 20 us 3.40% raw, 3.36% corrected: a CUB top-k pass;
# 10-20 us 8.03% and 8.16%), and below 10 us on neither: there durations are judged as they
# are. A GPU of another kind is never corrected: nothing was measured on it.
# Every three tuning gate starts pooled against every other start (benchmarks/pooled.py
# --moves), H200 corrected, one run: 10-20 us 6.38% (an 11.8 us split-K GEMM, one run of
# h200-k), from 20 us 3.46% (a 61.8 us xmma GEMM, h200-e): 7.5% up to 20 us, 4% from it.
CORRECTED_FLOOR_POINTS: dict[str, tuple[tuple[float, float], ...]] = {
    "H200": ((LONG_KERNEL_NS, 0.075), (BAND_END_NS, 0.075), (STEADY_KERNEL_NS, 0.04)),
}


# A check of two runs or more of one start (benchmarks/two_runs.py: every start of the corpus
# with two runs, its first two checked together against the baseline of another start; the
# judged duration, after the common factor where it applied; autotuned kernels aside), the
# largest upward move past a kernel's own spread, against the same starts' runs checked alone.
# Each floor is that move x1.15 or more, rounded up to a quarter point (held-back starts have
# exceeded the tuning ones by 10-30%):
# - H100 from 20 us: 2.11% (a 86 us kernel of the synthetic zoo, h100 session starts; the gate
#   starts' largest 1.85%) against 3.94% alone: 2.5%, 1.18x.
# - H100 10-20 us: 2.02% (an 11 us cuDNN batch-norm kernel, cnn-tf32, h100-b..d) against
#   4.53% alone; only 3 of 100 moves passed their own spread, and the 12.4 us GEMM that set the
#   one-run point at 10 us (5.93% on a start of one run) has no two-run start: 3.5% at 10 us.
# - H200, judged as measured (a program with fewer than two other kernels of 10 us: no common
#   factor): 1.03% in two runs (a 199 us Triton matmul), but 3.52% for a 56 us index_add_ with
#   its factor taken off: 4.5% at 10 us, 4% from 20 us, where the corrected one-run floor is.
# Below 10 us no point: two runs narrowed the moves there too (H100 7.50% -> 4.71%, H200 6.39%
# -> 2.75%), but no floor of that band was set from two-run data yet. A GPU of another kind
# gets none: nothing was measured on it.
# Every three tuning gate starts pooled against every other start (benchmarks/pooled.py
# --moves), two runs per check: H100 10-20 us 4.87% (a 15.1 us split-K GEMM that h100-s ran
# slow in both runs), from 20 us 2.48% (a 23.2 us norm reduce_kernel): 5.75% up to 20 us, 3%
# from it; H200 after the common factor 4.93% (a 12.4 us cuBLAS GEMM of the encoder, h200-e)
# and 2.77% (a 61.7 us xmma GEMM, h200-e): 5.75% and 3.25%. An H200 duration judged as
# measured gets no less in 10-20 us than a corrected one.
TWO_RUN_FLOOR_POINTS: dict[str, tuple[tuple[float, float], ...]] = {
    "H100": ((LONG_KERNEL_NS, 0.0575), (BAND_END_NS, 0.0575), (STEADY_KERNEL_NS, 0.03)),
    "H200": ((LONG_KERNEL_NS, 0.0575), (BAND_END_NS, 0.0575), (STEADY_KERNEL_NS, 0.04)),
}
# The same, for a duration judged after its process's common factor (H200 only, as
# CORRECTED_FLOOR_POINTS): two runs and the factor together. 10-20 us: 3.08% (a 14 us
# reduce_kernel, gate h200-g) against 6.07% in one run: 3.75%, 1.22x; from 20 us: 2.74% (a
# 79 us gemmSN, field gemms) against 3.53%: 3.25%, 1.19x.
TWO_RUN_CORRECTED_FLOOR_POINTS: dict[str, tuple[tuple[float, float], ...]] = {
    "H200": ((LONG_KERNEL_NS, 0.0575), (BAND_END_NS, 0.0575), (STEADY_KERNEL_NS, 0.0325)),
}


# A check of four runs or more of one start (benchmarks/pooled.py --four-runs): a kernel of
# 10-20 us whose recorded bound is the time floor is judged as measured, its process's common
# factor not taken out, against this floor alone. Four runs outvote a process that ran slow as
# a whole, which is what the factor is for, and taking the factor out of the fastest of
# several runs moved more than it removed: H200 checks of two runs over every tuning start,
# pooled three at a time, moved 10-20 us kernels by up to 3.57% as measured and 5.38% after
# the factor. No K x the kernel's own spread beside it (perfgate.judge.two_runs.four_run_bound):
# the moves below are whole changes, that term not taken off. Each floor is the largest x1.15
# or more, rounded up to a quarter point:
# - H100: 2.59% in checks of four runs of the four cards of one host captured with four runs
#   (h100-xag0 to xag3, against every three tuning starts pooled; a 13.6 us cuBLAS GEMM of the
#   encoder), where two runs of the same cards moved 5.18%: 3%, 1.16x. The cards share one
#   boot: the sealed cards of another host test it.
# - H200: the fastest of four runs is never slower than the fastest of two of them, so the
#   two-run moves as measured over every tuning start and card (3.57%, a 13.4 us
#   reduce_kernel, h200-f; 3.27% in four runs of the two four-run cards, h200-xdg0 and xdg1)
#   bound the four-run ones: 4.25%, 1.19x.
# From 20 us no point: four runs moved those kernels about as far as two did (H100 2.81%, a
# 23.2 us norm reduce_kernel), and the two-run rules hold there. Another GPU kind gets none.
FOUR_RUN_FLOOR_POINTS: dict[str, tuple[tuple[float, float], ...]] = {
    "H100": ((LONG_KERNEL_NS, 0.03), (BAND_END_NS, 0.03)),
    "H200": ((LONG_KERNEL_NS, 0.0425), (BAND_END_NS, 0.0425)),
}


def measured_kind(gpu: str | None) -> str | None:
    """The GPU kind the floors were measured on that `gpu` is, or None."""
    return next((kind for kind in TIME_FLOOR_POINTS if gpu and kind in gpu), None)


def gpu_kind(gpu: str | None) -> str:
    """The kind whose floors `gpu` gets: its own, else the widest."""
    return measured_kind(gpu) or WIDEST_KIND


def interpolated(points: tuple[tuple[float, float], ...], duration_ns: float) -> float:
    """The first point's floor below it, linear between points, the last point's above."""
    if duration_ns <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if duration_ns <= x1:
            return y0 + (duration_ns - x0) / (x1 - x0) * (y1 - y0)
    return points[-1][1]


def time_floor_at(duration_ns: float, gpu: str | None) -> float:
    """The relative floor of a duration of `duration_ns` on `gpu`, judged as it is."""
    return interpolated(TIME_FLOOR_POINTS[gpu_kind(gpu)], duration_ns)


def corrected_floor_at(duration_ns: float, gpu: str | None) -> float | None:
    """The floor of a duration judged after its common factor; None where no correction
    applies (another GPU kind, or a kernel shorter than the first corrected point)."""
    kind = measured_kind(gpu)
    points = CORRECTED_FLOOR_POINTS.get(kind) if kind else None
    if points is None or duration_ns < points[0][0]:
        return None
    return interpolated(points, duration_ns)


def two_run_floor_at(duration_ns: float, gpu: str | None, corrected: bool = False) -> float | None:
    """The floor of a duration that is the fastest launch of two runs or more, judged after
    its common factor where `corrected`; None where none was measured (another GPU kind, or a
    kernel shorter than the first two-run point)."""
    kind = measured_kind(gpu)
    table = TWO_RUN_CORRECTED_FLOOR_POINTS if corrected else TWO_RUN_FLOOR_POINTS
    points = (table.get(kind) or TWO_RUN_FLOOR_POINTS.get(kind)) if kind else None
    if points is None or duration_ns < points[0][0]:
        return None
    return interpolated(points, duration_ns)


def four_run_floor_at(duration_ns: float, gpu: str | None) -> float | None:
    """The floor of a duration of 10-20 us that is the fastest launch of four runs or more,
    judged as measured; None outside that band or where none was measured."""
    kind = measured_kind(gpu)
    points = FOUR_RUN_FLOOR_POINTS.get(kind) if kind else None
    if points is None or not points[0][0] <= duration_ns <= points[-1][0]:
        return None
    return interpolated(points, duration_ns)


# The whole program's time (the fastest capture file's total over every launch): the largest
# upward change of that total between two starts of the same build, over every start of the
# corpus (autotuned programs aside, whose change is the autotuner's): H100 +1.36% in 126 pairs
# (an NVRTC program), H200 +2.04% in 48 (the reductions program). Each floor is that rounded up
# and still catches +3% on a program that did not run faster than its baseline (docs/noise.md
# "Whole-program time", held by tests/real/test_program_time.py). A GPU of another kind gets the
# widest: nothing was measured on it. Recorded into a baseline's program bound
# (perfgate.lifecycle.program); here, below the judging code, because a check of two runs
# tightens a bound the floor set.
PROGRAM_FLOORS: dict[str, float] = {"H100": 0.02, "H200": 0.025}
# The fastest of two runs of one start or more (`perfgate check -c RUN1 -c RUN2`), against the
# baseline (benchmarks/two_runs.py): on H200 the largest upward move was +1.70% (+2.04% one
# run at a time, the same runs), so 2%; on H100 +0.88% in 48 checks of two runs (+0.94% one
# run at a time; +1.36% the largest of any H100 program in one run), so 1.5%, which covers
# even one run's largest.
TWO_RUN_PROGRAM_FLOORS: dict[str, float] = {"H100": 0.015, "H200": 0.02}


# The fastest of four runs or more: four runs outvote a slow run but not a slow start, and what
# moved the whole program between starts of one build was the start (H200 starts whose every
# run was 1.0-1.4% slower than the median start, a card whose every run was 0.5-0.9% faster).
# So the floor sits where a false alarm and a missed +3% are equally far: slower by more than
# 1.5% alarms, and +3% is caught on any check that ran up to 1.46% faster than its baseline.
# Checks of four runs moved up at most +0.65% on H100 and +1.03% on H200 (every evaluated
# four-run card against every three two-run starts pooled and against the other cards pooled;
# `benchmarks/pooled.py --four-runs --moves`, docs/noise.md "The whole program's time in four
# runs", held by tests/real/test_four_run_gate.py); the H100 two-run floor is already 1.5%.
FOUR_RUN_PROGRAM_FLOORS: dict[str, float] = {"H100": 0.015, "H200": 0.015}


def program_floor(gpu: str | None) -> float:
    """The relative floor of the whole program's time on `gpu` (another kind: the widest)."""
    return PROGRAM_FLOORS[gpu_kind(gpu)]


def two_run_program_floor(gpu: str | None) -> float | None:
    """The program floor of a check of two runs or more; None where none was measured."""
    kind = measured_kind(gpu)
    return TWO_RUN_PROGRAM_FLOORS.get(kind) if kind else None


def four_run_program_floor(gpu: str | None) -> float | None:
    """The program floor of a check of four runs or more; None where none was measured."""
    kind = measured_kind(gpu)
    return FOUR_RUN_PROGRAM_FLOORS.get(kind) if kind else None
