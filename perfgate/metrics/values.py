"""Values a gate can trust: the raw counters the catalog reads are finite, non-negative and
in the unit the catalog expects, or the capture is refused (exit 2) naming the column.

A NaN compares false with everything, so a NaN value would pass every bound; an infinity or a
negative counter would read as a huge regression or an improvement. ncu writes neither for the
counters perfgate reads (seen: NaN and -1 only in `--set full` columns it does not read, such
as `derived_tempMetric4` and `lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum`), so one of
them means a broken or edited capture. Columns the catalog does not read are left alone.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Mapping

from perfgate.common.errors import CaptureError
from perfgate.ingest.launches import Capture
from perfgate.metrics.catalog import CATALOG_LIST, lookup
from perfgate.metrics.stalls import FAMILIES, REASONS

# The base unit (after perfgate.ingest.units normalisation) of the raw counters whose dimension is
# unambiguous; a capture that says otherwise is not what the catalog's formulas assume.
_EXPECTED_UNITS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^gpu__time_duration\."), "ns"),
    (re.compile(r"^dram__bytes"), "byte"),
    (re.compile(r"\.pct$|\.pct_of_peak_"), "%"),
    (re.compile(r"_sectors_|__t_sectors\."), "sector"),
    (re.compile(r"^smsp__inst_executed\.|^smsp__inst_executed_pipe_tensor"), "inst"),
    (re.compile(r"^launch__registers_per_thread$"), "register/thread"),
    (re.compile(r"^launch__shared_mem_per_block_(static|dynamic)$"), "byte/block"),
)


@functools.cache
def catalog_inputs() -> frozenset[str]:
    """Every raw ncu metric a catalog formula reads (stall families included)."""
    names = {raw for m in CATALOG_LIST for f in m.formulas for raw in f.inputs}
    for fam in FAMILIES:
        names.update(fam.metric(r) for r in (*REASONS, "selected"))
    names.update(raw for f in lookup("dominant_stall").formulas for raw in f.inputs)
    return frozenset(names)


@functools.cache
def expected_unit(name: str) -> str | None:
    for pattern, unit in _EXPECTED_UNITS:
        if pattern.search(name):
            return unit
    return None


# A value above 0 below the smallest normal double (5e-324, a subnormal): no counter counts
# a fraction that small, and a ratio over it overflows to infinity (issue 23).
_TINY = sys.float_info.min


def _problem(value: float) -> str | None:
    if value == 0 or _TINY <= value < math.inf:
        return None  # the common case (NaN compares false)
    if 0 < value < _TINY:
        return f"is above 0 but below {_TINY:.1e} (a ratio over it is infinite)"
    if math.isnan(value):
        return "is not a number (NaN)"
    return "is infinite" if math.isinf(value) else "is negative"


def check_values(capture: Capture) -> None:
    """Raise CaptureError for the first unusable value or unit of a counter the catalog
    reads: one line naming the file, the column, the kernel and the launch."""
    wanted = catalog_inputs()
    checked: dict[str, tuple[str, ...]] = {}  # file -> the catalog's columns it holds
    for launch in capture.launches:
        names = checked.get(launch.source)
        if names is None:
            names = tuple(n for n in launch.metrics if n in wanted)
            checked[launch.source] = names
            _check_units(launch.source, names, launch.units)
        metrics = launch.metrics
        for name in names:
            value = metrics.get(name)
            # The common case in one comparison: a float from 0 up (NaN compares false).
            if value.__class__ is not float or value == 0.0 or _TINY <= value < math.inf:
                continue
            problem = _problem(value)
            if problem:
                raise CaptureError(
                    f"column {name}: the value {value!r} of kernel {launch.name[:80]} "
                    f"(launch ID {launch.index}) {problem}; a counter is a finite number "
                    "of 0 or more, so the capture is broken or was edited",
                    launch.source,
                )


def _check_units(source: str, names: tuple[str, ...], units: Mapping[str, str]) -> None:
    for name in names:
        unit, expected = units.get(name), expected_unit(name)
        if unit and expected and unit != expected:
            raise CaptureError(
                f"column {name} is in {unit!r}, perfgate expects {expected!r} "
                "(an unknown or wrong unit; capture again with --print-units base)",
                source,
            )
