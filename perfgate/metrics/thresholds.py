"""How far a metric may move: the threshold types a metric's catalog entry and a baseline file
set (numeric bounds with a direction, categorical checks), and their wording for people.

Which change counts under them is judged by perfgate.judge.outcome."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass


class Direction(enum.Enum):
    HIGHER_IS_WORSE = "higher_is_worse"
    LOWER_IS_WORSE = "lower_is_worse"
    ANY_CHANGE = "any_change"


class Noise(enum.Enum):
    EXACT = "exact"  # identical across launches and runs of one binary: registers, sums
    NOISY = "noisy"  # moves between runs: throughput %, duration, stall shares


@dataclass(frozen=True)
class Threshold:
    """How far a numeric metric may move before the move counts."""

    relative: float = 0.0  # fraction of |baseline|
    absolute: float = 0.0  # in the metric's unit
    direction: Direction | None = None  # None: the catalog's direction

    def merged(self, override: ThresholdOverride | None) -> Threshold:
        if override is None:
            return self
        return Threshold(
            relative=self.relative if override.relative is None else override.relative,
            absolute=self.absolute if override.absolute is None else override.absolute,
            direction=self.direction if override.direction is None else override.direction,
        )


@dataclass(frozen=True)
class ThresholdOverride:
    """A partial threshold from a baseline file; unset fields keep the default."""

    relative: float | None = None
    absolute: float | None = None
    direction: Direction | None = None


# A check describes the same few bounds for every kernel: 35,000 times for 1,000 kernels.
@functools.lru_cache(maxsize=1024)
def describe_bound(threshold: Threshold, direction: Direction, unit: str) -> str:
    sign = {
        Direction.HIGHER_IS_WORSE: "+",
        Direction.LOWER_IS_WORSE: "-",
        Direction.ANY_CHANGE: "±",
    }[direction]
    if threshold.relative == 0 and threshold.absolute == 0:
        return f"{sign}0 (exact)"
    parts = []
    if threshold.relative:
        parts.append(f"{sign}{threshold.relative * 100:g}%")
    if threshold.absolute:
        # An absolute bound on a percentage is in percentage points, not percent.
        suffix = " points" if unit == "%" else (f" {unit}" if unit else "")
        parts.append(f"{sign}{threshold.absolute:g}{suffix}")
    return " and ".join(parts)


@dataclass(frozen=True)
class CategoricalCheck:
    """Checks for a categorical metric (dominant stall, occupancy limiter)."""

    stable: bool = True  # the value must not change from the baseline's
    expect: tuple[str, ...] = ()  # if set, the value must be one of these
    forbid: tuple[str, ...] = ()  # the value must not be one of these
    margin: float = 0.0  # dominant stall: the new top must lead the old one by this many points

    def merged(self, override: CategoricalOverride | None) -> CategoricalCheck:
        if override is None:
            return self
        return CategoricalCheck(
            stable=self.stable if override.stable is None else override.stable,
            expect=self.expect if override.expect is None else override.expect,
            forbid=self.forbid if override.forbid is None else override.forbid,
            margin=self.margin if override.margin is None else override.margin,
        )


@dataclass(frozen=True)
class CategoricalOverride:
    stable: bool | None = None
    expect: tuple[str, ...] | None = None
    forbid: tuple[str, ...] | None = None
    margin: float | None = None
