"""The common factor of a process's kernel times: how much slower or faster the whole process
ran than its baseline, told from its other kernels.

Across machine starts a process as a whole runs slow or fast by a few percent (docs/noise.md
"Common mode": on H200 one run of a program was 2.6% slow while another program on the same
start was 0.35% fast), so part of every kernel's cross-start change is shared by the rest of
its process. Dividing a kernel's time ratio by its peers' common ratio removes that part. The
factor is itself noisy with few peers (its error from one other kernel of 10 us or more was
1.6-2.0%, from six 0.5-0.8%), so it is taken only from MIN_PEERS peers or more; it is the
time-weighted median of their ratios, so one regressed kernel among them does not move it; and
a factor beyond MAX_COMMON is no noise (a clock throttled, or the change itself slowed every
kernel) and is not used. A uniform slowdown of every kernel is what a factor removes: the
whole program's time is judged without one (perfgate.judge.program)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.metrics.timefloors import corrected_floor_at, time_floor_at

# Peers count from 10 us: shorter kernels move by several percent on their own. Two peers:
# on the corpus two gave the same largest corrected move as six (3.53% from 20 us on H200,
# benchmarks/common_mode.py) and correct twice as many programs (a CUDA-graph block has two);
# a regressed peer among few is bounded by MAX_COMMON.
MIN_PEER_NS = 10_000.0
MIN_PEERS = 2
# The largest common factor of the corpus's unchanged re-captures was 2.7% from six peers or
# more (an H200 process), 4.6% from two (4 of 1,840 factors past this limit: those kernels are
# judged as they are); a process further off than this is not taken for noise.
MAX_COMMON = 0.035
# A regression under this many times its bound is near the noise, and said so.
NEAR = 2.0
# perfgate.lifecycle.calibrate.K (a layer above): a bound covers twice a kernel's own spread.
SPREAD_K = 2.0
# A recorded bound this close to the time floor was set by the floor (the YAML keeps 4 digits).
_SAME_BOUND = 5e-4


@dataclass(frozen=True)
class Timed:
    """One kernel's time in the baseline and in this process (ns), and its launches a run."""

    kernel: str
    recorded_ns: float
    current_ns: float
    launches: float = 1.0


@dataclass(frozen=True)
class CommonFactor:
    factor: float  # the peers' time-weighted median ratio, now / recorded
    peers: int


def weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    """The value at half the total weight (the lower one on an exact tie)."""
    pairs = sorted(zip(values, weights, strict=True))
    half = sum(weights) / 2.0
    run = 0.0
    for value, weight in pairs:
        run += weight
        if run >= half:
            return value
    raise ValueError(f"weights must be finite and not negative: {list(weights)}")


def common_factors(timed: Sequence[Timed]) -> dict[str, CommonFactor]:
    """Each kernel's common factor from the others of its process (leave-one-out), where it
    has MIN_PEERS peers of MIN_PEER_NS or more and the factor is within MAX_COMMON."""
    peers = [
        t for t in timed if t.recorded_ns >= MIN_PEER_NS and t.current_ns > 0 and t.launches > 0
    ]
    out: dict[str, CommonFactor] = {}
    for t in timed:
        others = [p for p in peers if p.kernel != t.kernel]
        if len(others) < MIN_PEERS:
            continue
        factor = weighted_median(
            [p.current_ns / p.recorded_ns for p in others],
            [p.recorded_ns * p.launches for p in others],
        )
        if abs(factor - 1.0) <= MAX_COMMON:
            out[t.kernel] = CommonFactor(factor, len(others))
    return out


def corrected_bound(
    recorded: float, recorded_ns: float, gpu: str | None, own_spread: float
) -> float | None:
    """The bound of a duration judged after its common factor, or None where no correction
    applies (perfgate.metrics.timefloors.corrected_floor_at). Where the time floor set the
    recorded bound, the corrected floor or K x the kernel's own spread, the larger; a bound
    set otherwise (a kernel noisier within its own runs, a user's) is kept."""
    floor = corrected_floor_at(recorded_ns, gpu)
    if floor is None:
        return None
    if set_by_floor(recorded, recorded_ns, gpu):
        return min(recorded, max(floor, SPREAD_K * own_spread))
    return recorded


def set_by_floor(recorded: float, recorded_ns: float, gpu: str | None) -> bool:
    """Whether a recorded time bound is the time floor of its duration (not a kernel's own
    spread, nor a user's threshold)."""
    return abs(recorded - time_floor_at(recorded_ns, gpu)) <= _SAME_BOUND


def noise_words(relative_change: float | None, bound: float, regressed: bool) -> str:
    """How a slower time near its bound reads against the noise the bound carries: 'beyond'
    for a regression under twice its bound, 'within' for a pass that used half its bound or
    more, else nothing (a change far past its bound needs no such word; a reviewer reads +3%
    on H200 as what it is)."""
    if relative_change is None or relative_change <= 0 or bound <= 0:
        return ""
    if regressed:
        if relative_change > NEAR * bound:
            return ""
        return (
            f"beyond noise: {relative_change / bound:.1f}x the {bound * 100:.3g}% the noise allows"
        )
    if relative_change >= bound / 2:
        return f"within noise: under the {bound * 100:.3g}% that runs on other machine starts moved"
    return ""
