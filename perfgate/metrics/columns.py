"""A capture's launch values column by column, and per-kernel statistics computed over them.

A check of 1,000 kernels measures 37,000 metrics over 10,000 launches: launch by launch that
is 370,000 formula calls in Python. Here each formula runs once over every launch as an array,
and the median, range and count of every kernel's launches come out of one sort per formula
(docs/scale.md). measure() asks this first and falls back to its per-launch path for whatever
it is not sure of (a text value it must word, an infinite value, a formula without a column
form), so the two can only agree: the arithmetic is the per-launch path's, operation for
operation (`tests/metrics/test_columns.py` holds them to the same values on every bundled capture).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perfgate.ingest.launches import Launch, Value
from perfgate.metrics.catalog import Columnar, ColumnOp
from perfgate.metrics.stalls import ISSUING, NOT_STALLS, PCT_RESOLUTION, StallFamily

if TYPE_CHECKING:
    import numpy as np

    Array = np.ndarray[Any, np.dtype[np.float64]]


# One kernel's launches: how many had a value, their median, lowest and highest value. A
# plain tuple, made for every group at once: a check asks for 50,000 of them.
Stats = tuple[int, float, float, float]
# Per group, in group order (Python numbers: a Measured never holds a numpy scalar).
_GroupStats = list[Stats]


class LaunchTable:
    """The launches of a capture and the groups (kernels) a check measures them in.

    A column holds a launch's value as a float, NaN where the per-launch path reads "no value"
    (None, a text, NaN). A column with an infinite value is left to the per-launch path, which
    treats it differently in formulas (a value) and in stall shares (no value)."""

    def __init__(self, launches: Sequence[Launch], groups: Sequence[Sequence[Launch]]) -> None:
        import numpy as np

        self._np = np
        self._metrics: list[Mapping[str, Value]] = [la.metrics for la in launches]
        position = {id(la): i for i, la in enumerate(launches)}
        self._usable: list[bool] = []
        rows: list[int] = []
        sizes: list[int] = []
        for group in groups:
            at = [position.get(id(la), -1) for la in group]
            self._usable.append(bool(at) and min(at) >= 0)
            if self._usable[-1]:
                rows.extend(at)
                sizes.append(len(at))
            else:
                sizes.append(0)
        # Groups may share launches: each keeps its own copy of the rows it reads.
        self._rows = np.asarray(rows, dtype=np.intp)
        self._gid = np.repeat(np.arange(len(sizes), dtype=np.intp), sizes)
        self._sizes = np.asarray(sizes, dtype=np.intp)
        self._starts = np.cumsum(self._sizes) - self._sizes
        self._columns: dict[str, Array | None] = {}
        self._stats: dict[object, _GroupStats | None] = {}
        # Formulas by id(): a Columnar's hash is Python code (its enum's), asked 18,000 times.
        self._by_formula: dict[int, tuple[Columnar, _GroupStats | None]] = {}
        self._shares: dict[tuple[str, tuple[str, ...]], dict[str, _GroupStats] | None] = {}

    def kernel(self, group: int, cc: str | None) -> KernelRows | None:
        return KernelRows(self, group, cc) if self._usable[group] else None

    # -- columns and formulas ---------------------------------------------------------------

    def column(self, name: str) -> Array | None:
        if name in self._columns:
            return self._columns[name]
        np = self._np
        values = [m.get(name) for m in self._metrics]
        kinds = set(map(type, values))
        if kinds <= {float, type(None)}:
            array = np.array(values, dtype=np.float64)  # None -> NaN
        else:
            nan = float("nan")
            array = np.array([v if isinstance(v, float) else nan for v in values], np.float64)
        column = None if np.isinf(array).any() else array
        self._columns[name] = column
        return column

    def _formula(self, spec: Columnar) -> Array | None:
        """The per-launch values of a formula, as its `compute` makes them (catalog.py)."""
        np = self._np
        cols = [self.column(n) for n in spec.names]
        if any(c is None for c in cols):
            return None
        arrays: list[Array] = [c for c in cols if c is not None]
        with np.errstate(all="ignore"):
            result: Array
            if spec.op is ColumnOp.DIRECT:
                result = arrays[0] * spec.scale
                return result
            if spec.op is ColumnOp.RATIO:
                a, b = arrays
                quotient = a / b * spec.scale
                zero = np.where(a == 0, 0.0, np.nan)  # ncu's convention: no requests, ratio 0
                result = np.where(b == 0, zero, quotient)
                return result
            if spec.op is ColumnOp.TOTAL:
                acc = np.zeros(len(self._metrics))
                missing = np.zeros(len(self._metrics), dtype=bool)
                for array in arrays:
                    missing |= np.isnan(array)
                    acc = acc + array
                result = np.where(missing, np.nan, acc)
                return result
            if spec.op is ColumnOp.PRESENT:
                acc = np.zeros(len(self._metrics))
                seen = np.zeros(len(self._metrics), dtype=bool)
                for array in arrays:
                    have = ~np.isnan(array)
                    seen |= have
                    acc = acc + np.where(have, array, 0.0)
                result = np.where(seen, acc, np.nan)
                return result
        raise AssertionError(f"unhandled column formula {spec.op}")

    def _cpi(self, family: StallFamily, reason: str) -> Array | None:
        """stalls.cycles_from() of every launch (no infinite values reach here)."""
        np = self._np
        value = self.column(family.metric(reason))
        if value is None or family.per_instruction:
            return value
        issued = self.column(family.metric(ISSUING))
        if issued is None:
            return None
        with np.errstate(all="ignore"):
            if family.name == "per_warp_active":
                at_zero = np.where(value == 0, 0.0, value / (PCT_RESOLUTION / 2))
            else:
                at_zero = np.where(value == 0, 0.0, np.nan)
            result: Array = np.where(issued == 0, at_zero, value / issued)
            return result

    # -- per-group statistics ---------------------------------------------------------------

    def _group_stats(self, values: Array) -> _GroupStats:
        np = self._np
        taken = values[self._rows]
        # The last key sorts first: by group, then by value, NaN last within a group.
        order = np.lexsort((taken, self._gid))
        ranked = taken[order]
        if not len(ranked):
            return [(0, 0.0, 0.0, 0.0)] * len(self._sizes)
        # self._gid is already in group order, so it labels `ranked` too.
        valid = (~np.isnan(ranked)).astype(np.float64)
        count = np.bincount(self._gid, weights=valid, minlength=len(self._sizes))
        count = count.astype(np.intp)
        last = len(ranked) - 1
        lower = np.clip(self._starts + (count - 1) // 2, 0, last)
        upper = np.clip(self._starts + count // 2, 0, last)
        first = np.clip(self._starts, 0, last)
        top = np.clip(self._starts + count - 1, 0, last)
        a, b = ranked[lower], ranked[upper]
        with np.errstate(all="ignore"):
            # statistics.median: the middle value, or the mean of the middle two.
            median = np.where(count % 2 == 1, b, (a + b) / 2)
        return list(
            zip(
                count.tolist(),
                median.tolist(),
                ranked[first].tolist(),
                ranked[top].tolist(),
                strict=True,
            )
        )

    def formula_stats(self, spec: Columnar) -> _GroupStats | None:
        """A formula's statistics for every group; None when a column it reads cannot be
        held here."""
        hit = self._by_formula.get(id(spec))
        if hit is None or hit[0] is not spec:
            values = self._formula(spec)
            hit = (spec, None if values is None else self._group_stats(values))
            self._by_formula[id(spec)] = hit
        return hit[1]

    def cpi_stats(self, family: StallFamily, reason: str) -> _GroupStats | None:
        key = (family.name, reason)
        if key not in self._stats:
            values = self._cpi(family, reason)
            self._stats[key] = None if values is None else self._group_stats(values)
        return self._stats[key]

    def share_stats(
        self, family: StallFamily, chosen: tuple[str, ...], reason: str
    ) -> _GroupStats | None:
        per_reason = self._reason_shares(family, chosen)
        return None if per_reason is None else per_reason[reason]

    def _reason_shares(
        self, family: StallFamily, chosen: tuple[str, ...]
    ) -> dict[str, _GroupStats] | None:
        key = (family.name, chosen)
        if key not in self._shares:
            self._shares[key] = self._share_stats(family, chosen)
        return self._shares[key]

    def shares(
        self, group: int, family: StallFamily, chosen: tuple[str, ...]
    ) -> tuple[int, dict[str, Stats]] | None:
        """stalls.shares_by_name() of every launch over `chosen`, then per reason the median
        of the launches with a share vector (the reasons that are no stall read 0.0)."""
        per_reason = self._reason_shares(family, chosen)
        if per_reason is None:
            return None
        out = {r: _pick(stats, group) for r, stats in per_reason.items()}
        picked = {r: s for r, s in out.items() if s is not None}
        if len(picked) != len(out):
            return None
        count = next(iter(picked.values()))[0] if picked else 0
        return count, picked

    def _share_stats(
        self, family: StallFamily, chosen: tuple[str, ...]
    ) -> dict[str, _GroupStats] | None:
        np = self._np
        counted = [r for r in chosen if r not in NOT_STALLS]
        columns = [self.column(family.metric(r)) for r in counted]
        if not counted or any(c is None for c in columns):
            return None
        arrays: list[Array] = [c for c in columns if c is not None]
        stalled = np.zeros(len(self._metrics))
        missing = np.zeros(len(self._metrics), dtype=bool)
        for array in arrays:  # one at a time, left to right: the per-launch sum's order
            missing |= np.isnan(array)
            stalled = stalled + array
        with np.errstate(all="ignore"):
            invalid = missing | ~(stalled > 0)
            zero = np.where(invalid, np.nan, 0.0)
            out: dict[str, _GroupStats] = {}
            for r in chosen:
                if r in NOT_STALLS:
                    out[r] = self._group_stats(zero)
                else:
                    share = arrays[counted.index(r)] / stalled * 100.0
                    out[r] = self._group_stats(np.where(invalid, np.nan, share))
        return out


def _pick(got: _GroupStats | None, group: int) -> Stats | None:
    """One group's statistics; None when no launch of it had a value (the per-launch path
    words why)."""
    if got is None:
        return None
    stats = got[group]
    return stats if stats[0] else None


@dataclass(frozen=True)
class KernelRows:
    """One kernel's launches in a LaunchTable: what measure() asks for its values."""

    table: LaunchTable
    group: int
    cc: str | None  # the compute capability of the kernel's launches

    def shares(
        self, family: StallFamily, chosen: tuple[str, ...]
    ) -> tuple[int, dict[str, Stats]] | None:
        return self.table.shares(self.group, family, chosen)
