"""Reader for ncu's raw CSV page (`ncu --csv --page raw`), whatever wrote it.

Seen forms (tests/data/h100/): live stdout with the program's output and ncu's log lines before
the header; `--log-file` with only ncu's lines; `ncu --import R.ncu-rep --csv --page raw` with no
preamble, auto-scaled units and unseparated numbers; NVTX columns before "Kernel Name"; a units
row after the header; every field quoted; thousands separators.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from perfgate.capture import Capture, Dim3, Launch, Value
from perfgate.errors import CaptureError
from perfgate.ingest import ncu_log
from perfgate.kernel_names import function_name
from perfgate.units import (
    Evidence,
    NumberFormat,
    classify,
    decide_format,
    normalise_unit,
    parse_number,
)

if TYPE_CHECKING:
    import pandas as pd

KERNEL_NAME = "Kernel Name"
IDENTITY = frozenset(
    {"ID", "Process ID", "Process Name", "Host Name", KERNEL_NAME, "Context", "Stream",
     "Block Size", "Grid Size", "Device", "CC"}
)  # fmt: skip
DEVICE_NAME = "device__attribute_display_name"
MISSING = frozenset({"", "n/a", "N/A", "nan", "NaN", "-"})
_DIM3_RE = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def split_columns(header: list[str]) -> tuple[list[str], list[str]]:
    """(NVTX columns, metric columns). `--nvtx` inserts its columns before "Kernel Name";
    everything after the identity columns is a metric (most are `unit__counter...`, but
    `--set full` also writes source-counter columns such as `inst_executed`)."""
    before = header[: header.index(KERNEL_NAME)]
    nvtx = [c for c in before if c not in IDENTITY]
    metrics = [c for c in header if c not in IDENTITY and c not in nvtx]
    return nvtx, metrics


def _dim3(text: str) -> Dim3 | None:
    m = _DIM3_RE.match(text.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _parse_row(line: str) -> list[str]:
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def _find_header(text: str) -> tuple[int, list[str]] | None:
    """Offset of the header line (the first CSV row holding "Kernel Name") and its fields."""
    pos = 0
    while True:
        hit = text.find(KERNEL_NAME, pos)
        if hit < 0:
            return None
        start = text.rfind("\n", 0, hit) + 1
        end = text.find("\n", hit)
        end = len(text) if end < 0 else end
        fields = _parse_row(text[start:end].rstrip("\r"))
        if KERNEL_NAME in fields:
            return start, fields
        pos = end


def _data_end(text: str, start: int) -> int:
    """Where the CSV block ends: at ncu's next log line, if any follows it."""
    best = len(text)
    for prefix in ncu_log.PREFIXES:
        hit = text.find("\n" + prefix, start)
        if 0 <= hit < best:
            best = hit + 1
    return best


def _refuse_other_pages(header: list[str], path: str) -> None:
    if "Section Name" in header and "Metric Name" in header:
        raise CaptureError(
            "this is ncu's details page (--page details); perfgate reads the raw page: "
            "ncu --csv --page raw ...",
            path,
        )
    if "Metric Name" in header and "Invocations" in header:
        raise CaptureError(
            "this is ncu's per-kernel summary (--print-summary per-kernel), which keeps only "
            "min/max/average per kernel; capture without --print-summary so perfgate sees "
            "every launch",
            path,
        )
    if "ID" not in header:
        raise CaptureError("the CSV header has no 'ID' column: not ncu's raw page", path)


def read_raw_csv(text: str, path: str, wanted: Callable[[str], bool] | None = None) -> Capture:
    """Parse the raw page held in `text` (already decoded); `path` names it in messages.

    `wanted` selects the metric columns to keep; the others are never converted, so a check
    against a `--set full` capture only pays for the columns its baseline needs.
    """
    import pandas as pd

    found = _find_header(text)
    preamble_end = found[0] if found else len(text)
    log = ncu_log.scan(text[:preamble_end].splitlines())
    if found is None:
        if log.errors:
            raise CaptureError(ncu_log.describe_error(log.errors[0]), path)
        if log.no_kernels:
            raise CaptureError(ncu_log.describe_no_kernels(log.available_kernels), path)
        if not text.strip():
            raise CaptureError("the file is empty", path)
        raise CaptureError(
            "not an ncu raw-page CSV: no header row with a 'Kernel Name' column "
            "(capture with: ncu --csv --page raw ...)",
            path,
        )
    header_at, header = found
    _refuse_other_pages(header, path)
    end = _data_end(text, header_at)
    log_after = ncu_log.scan(text[end:].splitlines())
    errors = log.errors + log_after.errors
    if errors:
        raise CaptureError(ncu_log.describe_error(errors[0]), path)
    if len(set(header)) != len(header):
        raise CaptureError("the CSV header repeats a column name", path)

    block = text[header_at:end]
    _check_complete(block, header, path)
    nvtx_columns, metric_columns = split_columns(header)
    keep = [c for c in metric_columns if wanted is None or wanted(c) or c == DEVICE_NAME]
    identity = [c for c in header if c not in metric_columns]
    usecols = list(dict.fromkeys([*identity, *keep]))
    # The row after the header holds the units when its identity fields are empty.
    second = block.split("\n", 2)[1].rstrip("\r") if block.count("\n") >= 1 else ""
    second_fields = _parse_row(second)
    has_units = (
        len(second_fields) == len(header)
        and second_fields[header.index("ID")] == ""
        and second_fields[header.index(KERNEL_NAME)] == ""
    )
    units = dict(zip(header, second_fields, strict=True)) if has_units else {}
    try:
        frame = pd.read_csv(
            io.StringIO(block),
            dtype=str,
            usecols=usecols,
            na_filter=False,
            skip_blank_lines=True,
            skiprows=[1] if has_units else None,
            engine="c",
        )
    except (pd.errors.ParserError, ValueError) as exc:
        raise CaptureError(f"the CSV cannot be parsed: {_first_line(exc)}", path) from exc
    if not len(frame):
        raise CaptureError("the CSV has a header but no kernel launches", path)
    warnings = log.warnings + log_after.warnings
    return _to_capture(frame, keep, units, header, nvtx_columns, warnings, path)


def _check_complete(block: str, header: list[str], path: str) -> None:
    """A file cut off mid-row still parses (pandas pads the row with empty fields), so the
    last row is counted by hand: it must have as many fields as the header."""
    tail = block.rstrip("\r\n")
    last_line = tail[tail.rfind("\n") + 1 :].rstrip("\r")
    if last_line.count('"') % 2:
        raise CaptureError(
            "the last launch row ends inside a quoted field: the file looks cut off", path
        )
    fields = _parse_row(last_line)
    if tail.count("\n") >= 1 and len(fields) != len(header):
        raise CaptureError(
            f"the last launch row has {len(fields)} fields, the header {len(header)}: "
            "the file looks cut off",
            path,
        )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _number_format(frame: pd.DataFrame, columns: list[str], path: str) -> NumberFormat:
    evidence = Evidence.NONE
    for col in columns:
        for value in frame[col].unique():
            evidence |= classify(str(value))
    decided = decide_format(evidence)
    if isinstance(decided, str):
        raise CaptureError(decided, path)
    return decided


def _convert(values: pd.Series, unit: str, fmt: NumberFormat) -> tuple[list[Value], str]:
    base, factor = normalise_unit(unit)
    table: dict[str, Value] = {}
    for raw in values.unique():
        text = str(raw).strip()
        if text in MISSING:
            table[raw] = None
            continue
        number = parse_number(text, fmt)
        table[raw] = text if number is None else number * factor
    return [table[v] for v in values], base


def _to_capture(
    frame: pd.DataFrame,
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
    names = frame[KERNEL_NAME].tolist()
    ids = frame["ID"].tolist()
    blocks = frame["Block Size"].tolist() if "Block Size" in frame else [""] * len(frame)
    grids = frame["Grid Size"].tolist() if "Grid Size" in frame else [""] * len(frame)
    ccs = frame["CC"].tolist() if "CC" in frame else [""] * len(frame)
    nvtx_values = [frame[c].tolist() for c in nvtx_columns]
    for i in range(len(frame)):
        name = str(names[i])
        metrics = {col: converted[col][i] for col in keep}
        device = metrics.get(DEVICE_NAME)
        try:
            index = int(str(ids[i]).replace(",", "").replace(".", ""))
        except ValueError:
            index = i
        launches.append(
            Launch(
                index=index,
                name=name,
                function=function_name(name),
                block=_dim3(str(blocks[i])),
                grid=_dim3(str(grids[i])),
                metrics=metrics,
                units=base_units,
                device=device if isinstance(device, str) else None,
                cc=str(ccs[i]).replace(",", ".") or None,
                nvtx=tuple(str(v[i]).strip() for v in nvtx_values if str(v[i]).strip()),
                source=path,
            )
        )
    return Capture(
        paths=(path,),
        launches=tuple(launches),
        columns=frozenset(split_columns(header)[1]),
        warnings=tuple(warnings),
    )
