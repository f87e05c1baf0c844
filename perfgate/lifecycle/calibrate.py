"""Per-kernel bounds calibrated from separate ncu runs (docs/noise.md gives the reasoning).

With N >= 3 runs the bound is max(K x the observed relative spread of the per-run medians,
a floor). The floor follows the metric's noise class and, for time, the kernel's duration:
what varies across machine starts is not visible within one start's runs, so the floor
carries the cross-start noise measured on real captures, and K x spread covers a kernel
noisier than those. With 1 or 2 runs the spread says nothing: the catalog's defaults stand.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from perfgate.metrics.catalog import STALL_CPI_PREFIX, MetricDef
from perfgate.metrics.thresholds import Noise
from perfgate.metrics.timefloors import (
    STEADY_KERNEL_NS,
    TIME_FLOOR_POINTS,
    gpu_kind,
    interpolated,
)


@dataclass(frozen=True)
class Calibration:
    """Where a metric's bound came from, written into the baseline for a reviewer."""

    runs: int
    spread: float  # relative spread of the per-run medians (max - min) / median
    relative: float  # the bound chosen
    absolute: float = 0.0
    rule: str = ""  # "3 runs: spread 0.4% x 3 = 1.2%, floor 2.5% (kernel of 54 us)"
    extra: Mapping[str, float] = field(default_factory=dict)


K = 2.0  # the range of 3 runs is about 1.7 standard deviations: twice it is about 3.4
MIN_RUNS = 3
# Cross-start noise (docs/noise.md) and the floors set above it. For kernels of
# 10 us or more these leave room to catch +5% duration, +3% DRAM bytes, +1.5% instructions.
# Time is the fastest launch (catalog: Aggregate.FASTEST), whose cross-start drift is smaller
# than the median's: seen within 1.2% from 10 us on H200 (benchmarks/detection.py).
# Each floor sits above the largest cross-start change of the tuning starts (for counts and
# bytes: that a kernel's own spread does not cover; docs/noise.md "The noise model",
# benchmarks/noise_model.py; tests/real/test_noise_floors.py fails when a floor is tighter or much
# looser than that).
# The time floors per GPU kind live in perfgate.metrics.timefloors (the check reads them too).
# H100's from 20 us (tests/lifecycle/test_ratchet.py builds bounds around it)
TIME_FLOOR_LONG = 0.065
NEARLY_EXACT_FLOOR = 0.01  # cuDNN bf16 fprop instructions moved 0.85%; +1.5% must still fail
# A count that differed between the kernel's own recorded runs is not exact: cuDNN's
# runtime-compiled SDPA kernels moved their instructions 0.8% within one start and 2.01% across
# starts (h100-a against h100-d). +1.5% cannot be told from that; 2.5% covers it.
NON_EXACT_COUNT_FLOOR = 0.025
# "Differ": by 0.1% or more. Library GEMMs (nvjet, xmma) moved their instructions by 0.054% at
# most between the runs of one start and 0.85% across starts (the 1% floor covers them); the
# cuDNN SDPA kernels by 0.68-0.76% within a start (h100-a).
VARIES_SPREAD = 0.001
# Likewise thread-instructions per instruction of those kernels: 2.07 points across starts.
NON_EXACT_EFFICIENCY_POINTS = 2.5
# DRAM bytes' absolute floor: what +3% is at 4 MiB, the smallest traffic on which the gate
# promises to catch +3% DRAM bytes (benchmarks/detection.py BYTES_MIN). Below that size L2
# decides the count, not the kernel (dram_bytes_floor).
DRAM_PROMISE_BYTES = float(4 << 20)
DRAM_ABSOLUTE_FLOOR = 0.03 * DRAM_PROMISE_BYTES
# The metrics a kernel whose instructions differ between its own recorded runs (a CUB
# decoupled look-back kernel, cuDNN's SDPA) takes out of the exact class (lookback_floor).
LOOKBACK_COUNTS = frozenset({"global_load_sectors", "global_atomic_requests", "l2_atomic_requests"})
LOOKBACK_EFFICIENCIES = frozenset({"global_load_efficiency", "global_store_efficiency"})
LOOKBACK_RATIOS = frozenset({*LOOKBACK_EFFICIENCIES, "sectors_per_request_ld"})


@dataclass(frozen=True)
class KernelNoise:
    """What one metric's floor depends on besides the metric: the kernel's duration, the GPU
    the baseline is recorded on, and whether the metric differed between the recorded runs."""

    duration_ns: float | None
    gpu: str | None = None  # device__attribute_display_name: "NVIDIA H200"
    varies: bool = False
    # The kernel's instruction count differed between its recorded runs (kernel_varies).
    kernel_varies: bool = False
    value: float | None = None  # the metric's recorded value (the median of its runs)
    # How many times over the kernel reads its DRAM bytes from L2 (l2 sectors x 32 / DRAM
    # bytes, recorded medians): dram_bytes_floor.
    reuse: float | None = None


@dataclass(frozen=True)
class Floor:
    relative: float
    absolute: float
    why: str
    # The floor and K x spread are independent noise sources: the bound is their sum, not the
    # larger (lookback_time_floor).
    adds_spread: bool = False


def kernel_varies(instruction_runs: Sequence[float]) -> bool:
    """Whether a kernel is not exact: its instruction count differed between its own recorded
    runs by VARIES_SPREAD or more. Fact: an ordinary kernel executes the same instructions on
    every run of one build (exact in 2,646 of 3,183 cross-start comparisons, docs/noise.md); a
    kernel whose blocks wait on each other does not: CUB's single-pass scan, select and
    onesweep kernels (decoupled look-back) spin on tile-status flags other blocks write, so
    how often they poll, and what they load, follow the blocks' timing."""
    return len(instruction_runs) >= MIN_RUNS and relative_spread(instruction_runs) >= VARIES_SPREAD


def lookback_floor(name: str, kernel_not_exact: bool) -> Floor | None:
    """The floor of an otherwise exact load/atomic count or count ratio of a kernel that is not
    exact (kernel_varies); None: the metric's own rule. Fact: in a decoupled look-back kernel
    the flag polls are loads (one 8-16 byte status word of a 32-byte sector each), so its load
    sectors and load efficiency move with the polls, as its instructions do: a count gets the
    not-exact count floor, and a ratio of two such counts (bytes used / bytes fetched) twice
    it, since each side may move by that much (fam-b: torch.nonzero's DeviceSelectSweepKernel
    load efficiency -2.30%, its instructions spread 0.86% within fam-a)."""
    if not kernel_not_exact:
        return None
    why = "not exact: the kernel's instructions differ between its runs (look-back polls)"
    if name in LOOKBACK_COUNTS:
        return Floor(NON_EXACT_COUNT_FLOOR, 0.0, why)
    if name in LOOKBACK_EFFICIENCIES:
        # A percentage: a move must also pass NON_EXACT_EFFICIENCY_POINTS, as a not-exact
        # kernel's warp efficiency must. fam-c (after its first evaluation): the same select
        # kernel's load efficiency -5.12% relative, 12.2% -> 11.6% (-0.6 points); an
        # uncoalesced load moves it by tens of points, and its gated load sectors with it.
        return Floor(
            2 * NON_EXACT_COUNT_FLOOR,
            NON_EXACT_EFFICIENCY_POINTS,
            f"{why}; a ratio of two such counts, in points as well",
        )
    if name in LOOKBACK_RATIOS:
        return Floor(2 * NON_EXACT_COUNT_FLOOR, 0.0, f"{why}; a ratio of two such counts")
    return None


def lookback_time_floor(floor: Floor, duration_ns: float | None, kernel_not_exact: bool) -> Floor:
    """A not-exact kernel shorter than STEADY_KERNEL_NS: its time's floor adds to K x its
    spread. Fact: a look-back kernel's time holds two independent parts: the machine's drift,
    which every kernel of its duration shows across starts (the floor), and the wait on other
    blocks' flags, set by how the blocks happen to be scheduled, which its own runs show (the
    spread); independent parts add in the worst case. The wait chain is an absolute amount,
    the larger share of a short kernel (fam-b: a 14 us DeviceSelectSweepKernel +8.0% against
    the floor of 4.9% it had then and a spread of 2.0% x 2; H100's floor under 20 us, 9.25%
    since, covers that move alone). From 20 us the rule stays max(): +5% must be caught
    there (issue 21), and the same kernels' longer passes stayed within it."""
    if not kernel_not_exact or duration_ns is None or duration_ns >= STEADY_KERNEL_NS:
        return floor
    return Floor(
        floor.relative,
        floor.absolute,
        f"{floor.why}, not exact: plus its spread",
        adds_spread=True,
    )


def dram_bytes_floor(dram_bytes: float | None, reuse: float | None = None) -> Floor:
    """DRAM bytes of a kernel whose recorded value is `dram_bytes`: 2.1% (an nvjet GEMM's DRAM
    bytes moved 2.07% across H200 starts) and 64 KiB; below DRAM_PROMISE_BYTES, an absolute
    DRAM_ABSOLUTE_FLOOR. Fact: the L2 (50 MB on an H100) is write-back: a line a kernel stores
    stays dirty in L2 after it ends and reaches DRAM when it is evicted, during whatever kernel
    runs then, and ncu charges that kernel for the write. A kernel whose own traffic is small
    next to L2 is charged what earlier kernels left (fam-b: a train-step reduce_kernel that
    stores 32 bytes was charged 112 KiB, 896 lines of 128 B, of writes: +10.2% of its 1.1 MB).
    Below 4 MiB the gate promises no +3% (benchmarks/detection.py BYTES_MIN), so the absolute
    part there is what +3% is at 4 MiB; from 4 MiB the promise keeps the catalog's 64 KiB."""
    why = "an nvjet GEMM's DRAM bytes moved 2.07% across H200 starts (docs/noise.md)"
    reused = reuse_floor(reuse)
    if reused is not None:
        return reused
    if dram_bytes is not None and dram_bytes < DRAM_PROMISE_BYTES:
        return Floor(
            0.021, DRAM_ABSOLUTE_FLOOR, f"{why}; under 4 MiB: L2 write-backs, +3% of 4 MiB"
        )
    return Floor(0.021, 65536.0, why)


# (reuse from, relative floor): a kernel that reads its bytes from L2 this many times over.
# Each floor sits above its band's largest cross-start move (reuse_floor); a band from 5 at
# 3.5% or 3% would cost 30-34 more +3% detections on H100 and H200 for one false alarm.
REUSE_FLOORS: tuple[tuple[float, float], ...] = ((20.0, 0.08), (5.0, 0.028))


def reuse_floor(reuse: float | None) -> Floor | None:
    """DRAM bytes' floor of a kernel that reads its bytes from L2 many times over (REUSE_FLOORS),
    None below the first band. Fact: such a kernel moves only its first-touch misses and the
    dirty lines evicted during it through DRAM, and how much of its operands L2 still held
    from the kernels before it decides those; the more reuse, the larger their share of its
    DRAM bytes. Largest cross-start move per reuse band over every start pair of the corpus
    (kernels of 4 MiB or more, docs/noise.md): under 5, 0.63%; 5 to 20, 2.72% (a cuDNN fp16
    convolution, reuse 11.7, fam-d; the 2.1% floor's own nvjet GEMM, reuse 8.6, H200); 20 or
    more, 6.18% (XLA's gemm_fusion_dot_1, 13.3 MB, reuse 72, fam-d). From 20 the floor costs
    +3% DRAM-bytes detection on those kernels (their instructions and L2 sectors stay exact);
    from 5, 2.8% keeps most of it."""
    if reuse is None:
        return None
    for least, relative in REUSE_FLOORS:
        if reuse >= least:
            return Floor(
                relative, 65536.0, f"read {reuse:.0f}x over from L2: DRAM bytes follow L2 residency"
            )
    return None


def time_floor(duration_ns: float | None, gpu: str | None = "H100") -> Floor:
    """The floor of a kernel's time on `gpu` (TIME_FLOOR_POINTS): the first point's below it,
    linear between points, the last point's above it."""
    points = TIME_FLOOR_POINTS[gpu_kind(gpu)]
    if duration_ns is None:
        return Floor(max(y for _, y in points), 0.0, "kernel duration unknown")
    us = f"kernel of {duration_ns / 1000:.3g} us on {gpu_kind(gpu)}"
    return Floor(interpolated(points, duration_ns), 0.0, us)


def _fixed(relative: float, absolute: float, why: str) -> Callable[[KernelNoise], Floor]:
    return lambda noise: Floor(relative, absolute, why)


def _time(noise: KernelNoise) -> Floor:
    floor = time_floor(noise.duration_ns, noise.gpu)
    return lookback_time_floor(floor, noise.duration_ns, noise.kernel_varies)


def _count(why: str) -> Callable[[KernelNoise], Floor]:
    def floor(noise: KernelNoise) -> Floor:
        if noise.varies or noise.kernel_varies:
            return Floor(
                NON_EXACT_COUNT_FLOOR, 0.0,
                "not exact: its recorded runs differ; cuDNN SDPA instructions moved 2.01% "
                "across starts",
            )  # fmt: skip
        return Floor(NEARLY_EXACT_FLOOR, 0.0, why)

    return floor


def _efficiency(noise: KernelNoise) -> Floor:
    if noise.varies or noise.kernel_varies:
        return Floor(0.0, NON_EXACT_EFFICIENCY_POINTS, "not exact: cuDNN SDPA within 2.07 points")
    return Floor(0.0, 0.5, "cuDNN within 0.4 points")


# One registry: metric name -> its floor. Metrics not named fall back to their noise class.
FLOORS: dict[str, Callable[[KernelNoise], Floor]] = {
    "duration": _time,
    "total_time": _time,
    "dram_bytes": lambda noise: dram_bytes_floor(noise.value, noise.reuse),
    "dram_throughput": _fixed(0.06, 1.0, "DRAM % of the best launch moved 5.37% across starts"),
    # Evidence, not a gate on its own (docs/noise.md): the floor only keeps it quiet.
    "achieved_occupancy": _fixed(0.09, 2.0, "achieved occupancy moved 8.75% across starts"),
    "instructions_executed": _count("exact instructions moved up to 0.85% across starts"),
    "tensor_instructions": _count("like instructions_executed"),
    "global_store_sectors": _fixed(0.02, 0.0, "partial-sector stores moved 1.59% across starts"),
    "l2_sectors": _fixed(0.05, 0.0, "L2 sectors (other units' traffic) moved 4.94% across starts"),
    "warp_execution_efficiency": _efficiency,
}


def floor_for(
    defn: MetricDef,
    duration_ns: float | None,
    gpu: str | None = "H100",
    varies: bool = False,
    kernel_not_exact: bool = False,
    value: float | None = None,
    reuse: float | None = None,
) -> Floor:
    lookback = lookback_floor(defn.name, kernel_not_exact)
    if lookback is not None:
        return lookback
    rule = FLOORS.get(defn.name)
    if rule is not None:
        return rule(KernelNoise(duration_ns, gpu, varies, kernel_not_exact, value, reuse))
    if defn.noise is Noise.EXACT:
        return Floor(0.0, 0.0, "exact")
    if defn.name.startswith(STALL_CPI_PREFIX):
        return Floor(defn.threshold.relative / 2, defn.threshold.absolute, "stall cycles")
    # Noisy, nothing measured across starts: half the catalog's relative default, its absolute.
    return Floor(defn.threshold.relative / 2, defn.threshold.absolute, "noisy")


def relative_spread(per_run: Sequence[float]) -> float:
    """(max - min) / |median| of the per-run medians; 0 when they are all 0."""
    mid = statistics.median(per_run)
    if mid == 0:
        return 0.0 if max(per_run) == min(per_run) else float("inf")
    return (max(per_run) - min(per_run)) / abs(mid)


def calibrate(
    defn: MetricDef,
    per_run: Sequence[float],
    duration_ns: float | None,
    launch_range: float = 0.0,
    gpu: str | None = "H100",
    kernel_not_exact: bool = False,
    reuse: float | None = None,
) -> Calibration:
    """The bound for one metric of one kernel from its per-capture-file values (one file is
    one separate ncu run); `duration_ns` is the kernel's duration; `launch_range` the relative
    range of the metric over all the recorded launches ((max - min) / value). A median over
    the two or three launches of one check moves with the launches, so for a metric taken as
    a median the bound is at least that range (seen: an nvjet GEMM's DRAM bytes over 3.4%
    between launches of one run, 2.6% between machine starts). `kernel_not_exact`: the
    kernel's instructions differed between its runs (kernel_varies); `reuse` how many times
    over it reads its DRAM bytes from L2 (reuse_floor)."""
    runs = len(per_run)
    if runs < MIN_RUNS:
        t = defn.threshold
        word = "run" if runs == 1 else "runs"
        return Calibration(
            runs=runs,
            spread=relative_spread(per_run) if per_run else 0.0,
            relative=t.relative,
            absolute=t.absolute,
            rule=f"{runs} {word}: catalog default; record from {MIN_RUNS} separate ncu runs "
            "to calibrate",
        )
    spread = relative_spread(per_run)
    value = statistics.median(per_run)
    varies = spread >= VARIES_SPREAD
    floor = floor_for(defn, duration_ns, gpu, varies, kernel_not_exact, value, reuse)
    if spread == float("inf"):
        # The median is 0 but a run is not: only an absolute bound can say how far.
        absolute = max(floor.absolute, K * (max(per_run) - min(per_run)))
        rule = f"{runs} runs around 0: absolute {absolute:g} ({floor.why})"
        return Calibration(runs, spread, floor.relative, absolute, rule)
    observed = K * spread
    if floor.adds_spread:
        relative = max(floor.relative + observed, launch_range)
        chosen = "launch range" if launch_range > floor.relative + observed else "floor + spread"
    else:
        relative = max(observed, floor.relative, launch_range)
        chosen = (
            "launch range"
            if launch_range >= max(observed, floor.relative)
            else ("spread" if observed > floor.relative else "floor")
        )
    rule = f"{runs} runs: spread {spread:.2%} x {K:g} = {observed:.2%}, " + _rule_tail(
        floor, launch_range, chosen, relative
    )
    return Calibration(runs, spread, relative, floor.absolute, rule)


def _rule_tail(floor: Floor, launch_range: float, chosen: str, relative: float) -> str:
    """The floor, the launch range and the part that set the bound, in a calibration note."""
    tail = (
        f"floor {floor.relative:.2%} ({floor.why})"
        + (f", launch range {launch_range:.2%}" if launch_range else "")
        + f": {chosen} {relative:.2%}"
    )
    return tail + (f", absolute {floor.absolute:g}" if floor.absolute else "")


def calibrate_pooled(
    defn: MetricDef,
    runs: int,
    within: float,
    across: float,
    value: float,
    duration_ns: float | None,
    launch_range: float = 0.0,
    gpu: str | None = "H100",
    kernel_not_exact: bool = False,
    reuse: float | None = None,
    starts: int = 2,
    varies: bool = False,
    across_k: float = 1.15,
) -> Calibration:
    """The bound of a metric recorded from `starts` machine starts (perfgate.lifecycle.pooled):
    K x the spread within a start (`within`, the median over starts), the floor, `across_k` x
    the largest distance of a start from the median (`across`) and the launch range, the
    largest; the floor and the spread add for a not-exact kernel's time, as in `calibrate`.
    `varies`: the metric's runs differ (the not-exact floors of counts)."""
    floor = floor_for(defn, duration_ns, gpu, varies, kernel_not_exact, value, reuse)
    observed = K * within
    spread_part = floor.relative + observed if floor.adds_spread else max(observed, floor.relative)
    parts = {
        "launch range": launch_range,
        "across starts": across_k * across,
        ("floor + spread" if floor.adds_spread else "spread"): spread_part,
    }
    relative = max(parts.values())
    chosen = max(parts, key=lambda k: parts[k])
    if chosen == "spread" and observed <= floor.relative:
        chosen = "floor"
    rule = (
        f"{starts} machine starts, {runs} runs: the median of the starts; spread within a start "
        f"{within:.2%} x {K:g} = {observed:.2%}, across starts {across:.2%} x {across_k:g}, "
        + _rule_tail(floor, launch_range, chosen, relative)
    )
    return Calibration(runs, within, relative, floor.absolute, rule)
