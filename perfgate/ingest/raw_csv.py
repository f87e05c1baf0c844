"""Reader for ncu's raw CSV page (`ncu --csv --page raw`), whatever wrote it.

Seen forms (tests/data/h100/): live stdout with the program's output and ncu's log lines before
the header; `--log-file` with only ncu's lines; `ncu --import R.ncu-rep --csv --page raw` with no
preamble, auto-scaled units and unseparated numbers; NVTX columns before "Kernel Name"; a units
row after the header; every field quoted; thousands separators.

This module reads the launch rows into a table (the csv module or pandas) and refuses
what is not one whole raw page; the scan is perfgate.ingest.raw_scan, the launches
perfgate.ingest.raw_launches.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Callable, Iterator

from perfgate.common.errors import CaptureError
from perfgate.ingest import ncu_log
from perfgate.ingest.launches import Capture
from perfgate.ingest.raw_columns import Table, parse_row, selection
from perfgate.ingest.raw_launches import to_capture
from perfgate.ingest.raw_scan import Layout, Opener, scan


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


def read_raw_csv(
    open_binary: Opener, path: str, wanted: Callable[[str], bool] | None = None
) -> Capture:
    """Parse the raw page in the file `open_binary` opens (plain or gzip); `path` names it in
    messages.

    The file is streamed: a first pass finds the CSV block, then pandas reads only the
    columns `wanted` selects, straight from the file. Neither the text of the file nor the
    columns a check does not need are held in memory, so a check against a `--set full`
    capture of thousands of launches costs no more than reading it (docs/scale.md). A file
    of up to SMALL_ROWS launches is read with the csv module instead (pandas' fixed cost per
    file dominates a check of many small files).
    """
    layout = scan(open_binary, path, wanted)
    log = ncu_log.scan(layout.log_before)
    if layout.header is None:
        if log.errors:
            raise CaptureError(ncu_log.describe_error(log.errors[0]), path)
        if log.no_kernels:
            raise CaptureError(ncu_log.describe_no_kernels(log.available_kernels), path)
        if not layout.content:
            raise CaptureError("the file is empty", path)
        raise CaptureError(
            "not an ncu raw-page CSV: no header row with a 'Kernel Name' column "
            "(capture with: ncu --csv --page raw ...)",
            path,
        )
    header = layout.header
    _refuse_other_pages(header, path)
    log_after = ncu_log.scan(layout.log_after)
    errors = log.errors + log_after.errors
    if errors:
        raise CaptureError(ncu_log.describe_error(errors[0]), path)
    if len(set(header)) != len(header):
        raise CaptureError("the CSV header repeats a column name", path)
    if not layout.rows:
        raise CaptureError("the CSV has a header but no kernel launches", path)
    _check_complete(layout.last_row, header, path)
    if layout.broken_row is not None:
        line, count = layout.broken_row
        raise CaptureError(
            f"line {line}: a launch row has {count} fields, the header {len(header)} (a field "
            "missing or extra); perfgate never drops a row it cannot read",
            path,
        )

    nvtx_columns, keep, usecols = selection(header, wanted)
    units = dict(zip(header, layout.units, strict=True)) if layout.units else {}
    table = _read_small(open_binary, layout, usecols) if layout.rows <= SMALL_ROWS else None
    if table is None:
        table = _read_pandas(open_binary, layout, usecols, path)
    if not table or not len(next(iter(table.values()))):
        raise CaptureError("the CSV has a header but no kernel launches", path)
    warnings = log.warnings + log_after.warnings
    return to_capture(table, keep, units, header, nvtx_columns, warnings, path)


# Up to this many launch rows, the cut rows are read with the csv module: pandas' read_csv
# costs about 4 ms a call whatever the size, and its per-column unique() another 0.1 ms, which
# made 1,500 files of a few dozen launches take 30 s (issue 23; docs/scale.md).
SMALL_ROWS = 2000


def _read_small(open_binary: Opener, layout: Layout, usecols: list[str]) -> Table | None:
    """The launch rows read with the csv module: the cut rows (plain ASCII, every field
    quoted) or the file's own rows after the header (and units row). None where pandas reads
    them: a blank line, a row of another field count, text that is not UTF-8; pandas then
    gives the same table, or words the error."""
    try:
        if layout.cut is not None:
            text = io.StringIO(layout.cut.decode("utf-8"), newline="")
            return _columns(csv.reader(text), layout.rows, None, False)
        with open_binary() as fh:
            fh.seek(layout.header_offset)
            wrapped = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
            return _columns(csv.reader(wrapped), layout.rows, usecols, bool(layout.units))
    except (UnicodeDecodeError, csv.Error):
        return None


def _columns(
    reader: Iterator[list[str]], rows: int, usecols: list[str] | None, units: bool
) -> Table | None:
    names = next(reader, None)
    if not names or len(set(names)) != len(names) or (units and next(reader, None) is None):
        return None
    wanted = set(usecols) if usecols is not None else None
    picked = [(i, n) for i, n in enumerate(names) if wanted is None or n in wanted]
    columns: Table = {n: [] for _, n in picked}
    lists = [(i, columns[n]) for i, n in picked]
    width = len(names)
    for row in itertools.islice(reader, rows):
        if len(row) != width:
            return None  # a blank line or a broken row: pandas decides
        for i, values in lists:
            values.append(row[i])
    if len(lists) and len(lists[0][1]) != rows:
        return None
    return columns


def _read_pandas(open_binary: Opener, layout: Layout, usecols: list[str], path: str) -> Table:
    import pandas as pd

    try:
        if layout.cut is not None:
            # Only the kept fields, cut out of the rows by the scan: a tenth of the file.
            frame = pd.read_csv(
                io.BytesIO(layout.cut),
                encoding="utf-8",
                dtype=str,
                na_filter=False,
                skip_blank_lines=True,
                nrows=layout.rows,
                engine="c",
            )
        else:
            with open_binary() as fh:
                fh.seek(layout.header_offset)
                frame = pd.read_csv(
                    fh,
                    encoding="utf-8-sig",
                    dtype=str,
                    usecols=usecols,
                    na_filter=False,
                    skip_blank_lines=True,
                    skiprows=[1] if layout.units else None,
                    nrows=layout.rows,
                    engine="c",
                )
    except UnicodeDecodeError as exc:
        raise CaptureError(
            "not UTF-8 text in the launch rows: not an ncu CSV capture", path
        ) from exc
    except (pd.errors.ParserError, ValueError) as exc:
        raise CaptureError(f"the CSV cannot be parsed: {_first_line(exc)}", path) from exc
    # tolist() once: iterating an Arrow-backed Series element by element is 10x slower.
    return {str(c): frame[c].tolist() for c in frame.columns}


def _check_complete(last_row: str, header: list[str], path: str) -> None:
    """A file cut off mid-row still parses (pandas pads the row with empty fields), so the
    last row is counted by hand: it must have as many fields as the header."""
    line = last_row.rstrip("\r\n")
    if line.count('"') % 2:
        raise CaptureError(
            "the last launch row ends inside a quoted field: the file looks cut off", path
        )
    fields = parse_row(line)
    if len(fields) != len(header):
        raise CaptureError(
            f"the last launch row has {len(fields)} fields, the header {len(header)}: "
            "the file looks cut off",
            path,
        )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
