"""The launches of a raw-page capture from its table of texts: numbers in the file's number
format and units normalised, names, shapes and NVTX ranges, a Launch per row."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from perfgate.common.errors import CaptureError
from perfgate.common.frozen import maker
from perfgate.ingest.launches import Capture, Dim3, Launch, Value
from perfgate.ingest.names import function_name
from perfgate.ingest.raw_columns import DEVICE_NAME, KERNEL_NAME, Table, split_columns
from perfgate.ingest.raw_limits import MAX_NAME
from perfgate.ingest.units import (
    FormatClue,
    NumberFormat,
    classify,
    decide_format,
    normalise_unit,
    parse_number,
)

MISSING = frozenset({"", "n/a", "N/A", "nan", "NaN", "-"})
_DIM3_RE = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def _dim3(text: str) -> Dim3 | None:
    m = _DIM3_RE.match(text.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


# What classify() and parse_number() said of a text, kept across the files of one check: the
# runs of one program repeat most of their values (1,500 files: 900,000 calls, 2.5 s).
_CLUES: dict[str, FormatClue] = {}
_NUMBERS: dict[NumberFormat, dict[str, float | None]] = {f: {} for f in NumberFormat}
_MEMO = 200_000  # texts kept of each, about 30 MB at most


def _number_format(table: Table, columns: list[str], path: str) -> NumberFormat:
    texts: set[str] = set()
    for col in columns:
        texts.update(table[col])
    clues = _CLUES
    if len(clues) > _MEMO:
        clues.clear()
    seen: set[FormatClue] = set()
    for text in texts:
        clue = clues.get(text)
        if clue is None:
            clue = clues[text] = classify(text)
        seen.add(clue)
    evidence = FormatClue.NONE
    for clue in seen:
        evidence |= clue
    decided = decide_format(evidence)
    if isinstance(decided, str):
        raise CaptureError(decided, path)
    return decided


def _convert(values: list[str], unit: str, fmt: NumberFormat) -> tuple[list[Value], str]:
    base, factor = normalise_unit(unit)
    numbers = _NUMBERS[fmt]
    if len(numbers) > _MEMO:
        numbers.clear()
    table: dict[str, Value] = {}
    for raw in dict.fromkeys(values):
        text = raw.strip()
        if text in MISSING:
            table[raw] = None
            continue
        if text in numbers:
            number = numbers[text]
        else:
            number = numbers[text] = parse_number(text, fmt)
        table[raw] = text if number is None else number * factor
    return [table[v] for v in values], base


_new_launch = maker(Launch)


def to_capture(
    frame: Table,
    keep: list[str],
    units: dict[str, str],
    header: list[str],
    nvtx_columns: list[str],
    warnings: list[str],
    path: str,
) -> Capture:
    fmt = _number_format(frame, keep, path)
    converted: dict[str, list[Value]] = {}
    base_units: dict[str, str] = {}
    for col in keep:
        converted[col], base_units[col] = _convert(frame[col], units.get(col, ""), fmt)
    launches: list[Launch] = []
    names = frame[KERNEL_NAME]
    ids = frame["ID"]
    count = len(names)
    blocks = frame["Block Size"] if "Block Size" in frame else [""] * count
    grids = frame["Grid Size"] if "Grid Size" in frame else [""] * count
    ccs = frame["CC"] if "CC" in frame else [""] * count
    nvtx_values = [frame[c] for c in nvtx_columns]
    # Each launch's values as one row of the kept columns: dict(zip()) builds them in C.
    rows: Iterator[tuple[Value, ...]] = (
        zip(*(converted[col] for col in keep), strict=True) if keep else itertools.repeat((), count)
    )
    # Launches repeat a few names and shapes: each is worked out once (a model's capture has
    # tens of thousands of launches of a few hundred kernels).
    functions: dict[str, str] = {}
    shapes: dict[str, Dim3 | None] = {}
    new_launch = _new_launch
    for i, row in zip(range(count), rows, strict=True):
        name = str(names[i])
        if len(name) > MAX_NAME:
            raise CaptureError(
                f"launch ID {ids[i]}: a kernel name of {len(name):,} characters; perfgate reads "
                f"names of at most {MAX_NAME:,} (docs/limits.md)",
                path,
            )
        metrics = dict(zip(keep, row, strict=True))
        device = metrics.get(DEVICE_NAME)
        try:
            index = int(str(ids[i]).replace(",", "").replace(".", ""))
        except ValueError:
            index = i
        function = functions.get(name)
        if function is None:
            function = functions[name] = function_name(name)
        block, grid = str(blocks[i]), str(grids[i])
        if block not in shapes:
            shapes[block] = _dim3(block)
        if grid not in shapes:
            shapes[grid] = _dim3(grid)
        launches.append(
            new_launch(
                index=index,
                name=name,
                function=function,
                block=shapes[block],
                grid=shapes[grid],
                metrics=metrics,
                units=base_units,
                device=device if isinstance(device, str) else None,
                cc=str(ccs[i]).replace(",", ".") or None,
                nvtx=tuple(str(v[i]).strip() for v in nvtx_values if str(v[i]).strip())
                if nvtx_values
                else (),
                source=path,
            )
        )
    return Capture(
        paths=(path,),
        launches=tuple(launches),
        columns=frozenset(split_columns(header)[1]),
        warnings=tuple(warnings),
    )
