"""Reader for ncu's raw CSV page (`ncu --csv --page raw`), whatever wrote it.

Seen forms (tests/data/h100/): live stdout with the program's output and ncu's log lines before
the header; `--log-file` with only ncu's lines; `ncu --import R.ncu-rep --csv --page raw` with no
preamble, auto-scaled units and unseparated numbers; NVTX columns before "Kernel Name"; a units
row after the header; every field quoted; thousands separators.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from perfgate.common.errors import CaptureError
from perfgate.common.frozen import maker
from perfgate.ingest import ncu_log
from perfgate.ingest.launches import Capture, Dim3, Launch, Value
from perfgate.ingest.names import function_name
from perfgate.ingest.units import (
    FormatClue,
    NumberFormat,
    classify,
    decide_format,
    normalise_unit,
    parse_number,
)

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
    skip = IDENTITY | set(nvtx)
    metrics = [c for c in header if c not in skip]
    return nvtx, metrics


def _dim3(text: str) -> Dim3 | None:
    m = _DIM3_RE.match(text.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _parse_row(line: str) -> list[str]:
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


Opener = Callable[[], BinaryIO]
_BINARY_PROBE = 65536
# Limits on what is READ (after gzip), not on a file's size on disk (docs/limits.md): a
# `--set full` header of ~2,200 columns is ~130 KB and a launch row less, so a line of 16 MiB is
# no ncu output; one gigabyte-long line inside a megabyte of gzip is refused after 16 MiB.
MAX_LINE = 16 * 1024 * 1024
MAX_COLUMNS = 50_000
MAX_NAME = 32 * 1024  # characters of a kernel name (long C++ template names run to a few KB)
MAX_BYTES_ENV = "PERFGATE_MAX_CAPTURE_BYTES"
MAX_BYTES = 4 * 1024**3  # a 50,000-launch `--set full` capture is 0.8 GB


MAX_LAUNCHES_ENV = "PERFGATE_MAX_LAUNCHES"
# Memory follows launches x the columns a check reads (~25 bytes a value): 50,000 launches of
# `--set full` check in 270 MB (docs/scale.md). Rows of a few bytes each inside a gzip bomb
# would otherwise reach gigabytes within the byte limit.
MAX_LAUNCHES = 100_000


def _limit(env: str, default: int) -> int:
    try:
        return int(os.environ.get(env, "")) or default
    except ValueError:
        return default


def max_bytes() -> int:
    """The most bytes of one capture perfgate reads (after gzip); $PERFGATE_MAX_CAPTURE_BYTES
    raises it for a capture larger than any seen."""
    return _limit(MAX_BYTES_ENV, MAX_BYTES)


def _lines(fh: BinaryIO, path: str) -> Iterator[bytes]:
    """The file's lines, each read with a bound, and the whole with a bound: a line or a file
    beyond them is refused before it is held in memory."""
    limit, total = max_bytes(), 0
    number = 0
    while True:
        raw = fh.readline(MAX_LINE + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE:
            raise _too_long(number, path)
        total += len(raw)
        if total > limit:
            raise _too_large(limit, path)
        yield raw


def _too_long(number: int, path: str) -> CaptureError:
    return CaptureError(
        f"line {number} is longer than {MAX_LINE:,} bytes: not ncu CSV output (docs/limits.md)",
        path,
    )


def _too_large(limit: int, path: str) -> CaptureError:
    return CaptureError(
        f"holds more than {limit:,} bytes (after gzip); perfgate reads at most that much of "
        f"one capture (raise it with {MAX_BYTES_ENV}; docs/limits.md)",
        path,
    )


_KEEP_LOG = 10_000  # log lines kept from around the CSV; program output is not kept
_LOG_LINE = 4096  # characters kept of each: 10,000 lines of 16 MiB would be 160 GB


@dataclass
class _Layout:
    """Where the CSV block sits in the file, found in one streaming pass."""

    header: list[str] | None = None
    header_offset: int = 0
    units: list[str] | None = None
    rows: int = 0
    last_row: str = ""
    log_before: list[str] = field(default_factory=list)
    log_after: list[str] = field(default_factory=list)
    content: bool = False
    # The first launch row (its line number, fields counted) whose field count is not the
    # header's; the last row gets its own message (a file cut off).
    broken_row: tuple[int, int] | None = None
    # The header and launch rows as CSV of only the fields a read keeps, when every row could
    # be cut (perfgate.ingest.quoted); None: pandas reads the file itself.
    cut: bytes | None = None


def _text(raw: bytes, path: str, first: bool) -> str:
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        raise CaptureError(
            f"not UTF-8 text (byte {exc.start} of a line): not an ncu CSV capture", path
        ) from exc


def _is_log(text: str) -> bool:
    """ncu's lines, and the numbered "Available Kernels:" list that follows a no-kernels
    warning; the program's own output is not kept."""
    stripped = text.strip()
    numbered = stripped[:1].isdigit() and ". " in stripped[:8]
    return stripped.startswith(ncu_log.PREFIXES) or stripped == "Available Kernels:" or numbered


def _is_units_row(fields: list[str], header: list[str]) -> bool:
    """The row after the header holds the units when its identity fields are empty."""
    if len(fields) != len(header) or "ID" not in header:
        return False
    return fields[header.index("ID")] == "" and fields[header.index(KERNEL_NAME)] == ""


def _scan(open_binary: Opener, path: str, wanted: Callable[[str], bool] | None = None) -> _Layout:
    """One pass over the file: the header (the first CSV row with a "Kernel Name" column),
    the units row, how many launch rows follow before ncu's next log line, and ncu's log
    lines around them. Lines are read one at a time up to the header, then a megabyte at a
    time; of the rows, only the fields `wanted` selects are kept (perfgate.ingest.quoted)."""
    layout = _Layout()
    offset = 0
    with open_binary() as fh:
        if b"\x00" in fh.read(_BINARY_PROBE):
            raise CaptureError("binary data, not an ncu CSV capture or .ncu-rep report", path)
        fh.seek(0)
        number = 0
        for number, raw in enumerate(_lines(fh, path)):
            size = len(raw)
            if not layout.content and raw.strip():
                layout.content = True
            text = _text(raw, path, first=number == 0)
            if KERNEL_NAME in text:
                fields = _parse_row(text.rstrip("\r\n"))
                if KERNEL_NAME in fields:
                    if len(fields) > MAX_COLUMNS:
                        raise CaptureError(
                            f"the CSV header has {len(fields):,} columns; ncu writes "
                            f"about 2,200 with --set full, perfgate reads at most "
                            f"{MAX_COLUMNS:,} (docs/limits.md)",
                            path,
                        )
                    layout.header, layout.header_offset = fields, offset
                    offset += size
                    break
            if _is_log(text) and len(layout.log_before) < _KEEP_LOG:
                layout.log_before.append(text[:_LOG_LINE])
            offset += size
        if layout.header is not None:
            _Rows(layout, path, _cut_fields(layout.header, wanted)).read(fh, number + 1, offset)
    return layout


def _cut_fields(header: list[str], wanted: Callable[[str], bool] | None) -> list[int] | None:
    """The indices of the fields a read keeps, when they are few enough to cut out of each
    row (perfgate.ingest.quoted); None to let pandas read the file as it is."""
    if len(set(header)) != len(header):
        return None  # refused later, with its own message
    keep = set(_selection(header, wanted)[2])
    if 2 * len(keep) > len(header):
        return None
    return [i for i, name in enumerate(header) if name in keep]


_CHUNK = 1 << 18  # bytes of launch rows read at a time (256 KB measured faster than 1 MB: cache)


class _Rows:
    """The launch rows and ncu's log after them, a chunk at a time. A chunk of clean rows
    (perfgate.ingest.quoted) is counted and cut at once; any other line goes through
    _row(), the same checks one line at a time."""

    def __init__(self, layout: _Layout, path: str, fields: list[int] | None) -> None:
        self.layout = layout
        self.path = path
        self.fields = fields
        assert layout.header is not None
        self.expected = len(layout.header)
        self.max_launches = _limit(MAX_LAUNCHES_ENV, MAX_LAUNCHES)
        self.pieces: list[bytes] | None = [] if fields is not None else None
        self.in_trailer = False

    def read(self, fh: BinaryIO, number: int, total: int) -> None:
        limit, carry = max_bytes(), b""
        while True:
            block = fh.read(_CHUNK)
            if not block and not carry:
                break
            total += len(block)
            if total > limit:
                raise _too_large(limit, self.path)
            data = carry + block if carry else block
            if block:
                end = data.rfind(b"\n") + 1
                if not end:
                    if len(data) > MAX_LINE:
                        raise _too_long(number + 1, self.path)
                    carry = data
                    continue
                region, carry = data[:end], data[end:]
            else:  # the last line, without a line feed
                region, carry = data + b"\n", b""
            number = self._region(region, number, final=not block)
        self._finish()

    def _region(self, region: bytes, number: int, final: bool) -> int:
        from perfgate.ingest import quoted

        self._second_header(region, number)
        lines = quoted.split(region)
        at, size = quoted.longest(lines)
        # The last line has a line feed only because one was added.
        if size - (1 if final and at == len(lines) - 1 else 0) > MAX_LINE:
            raise _too_long(number + at + 1, self.path)
        layout, i, count = self.layout, 0, len(lines)
        while i < count:
            if self.in_trailer:
                for j in range(i, count):
                    if len(layout.log_after) >= _KEEP_LOG:
                        break
                    raw = lines.line(j)
                    layout.log_after.append(_text(raw, self.path, first=False)[:_LOG_LINE])
                break
            if layout.units is None and layout.rows == 0:
                # The first row may be the units row: one line at a time until it is past.
                self._row(lines.line(i), number + i)
                i += 1
                continue
            stop = quoted.first_log_line(lines, i)
            rows = stop - i
            wanted = self.fields if self.pieces is not None else None
            got = quoted.rows(lines, i, stop, self.expected, wanted)
            if rows and layout.rows + rows <= self.max_launches and got.clean:
                layout.rows += rows
                layout.last_row = _text(lines.line(stop - 1), self.path, first=False)
                if self.pieces is not None:
                    if got.cut is None:
                        self.pieces = None
                    else:
                        self.pieces.append(got.cut)
            else:
                for j in range(i, stop):
                    self._row(lines.line(j), number + j)
            if stop < count:
                self.in_trailer = True
            i = stop
        return number + count

    def _second_header(self, region: bytes, number: int) -> None:
        """Refuse ncu's raw-page header again after the first page's: two ncu outputs
        appended to one file. One search of the region; only a line holding the words is
        parsed (a kernel's name may hold them too), so the reading stays linear."""
        at, lines_before = region.find(KERNEL_NAME.encode()), 0
        scanned = 0
        while at >= 0:
            start = region.rfind(b"\n", 0, at) + 1
            end = region.find(b"\n", at)
            end = len(region) if end < 0 else end
            lines_before += region.count(b"\n", scanned, start)
            scanned = start
            fields = _parse_row(region[start:end].rstrip(b"\r").decode("utf-8", "replace"))
            if KERNEL_NAME in fields and "ID" in fields:
                raise CaptureError(
                    f"line {number + lines_before + 1}: a second ncu raw-page header "
                    "('ID', ..., 'Kernel Name' again) after the first page's launches: the "
                    "file holds more than one ncu output (two captures appended to one "
                    "file?); perfgate judges one raw page per file, so capture each run to "
                    "a file of its own",
                    self.path,
                )
            at = region.find(KERNEL_NAME.encode(), end)

    def _row(self, raw: bytes, number: int) -> None:
        """One line after the header, as a line-at-a-time reading checks it."""
        layout, path = self.layout, self.path
        assert layout.header is not None
        if self.in_trailer or raw.startswith(b"=="):
            self.in_trailer = True
            if len(layout.log_after) < _KEEP_LOG:
                layout.log_after.append(_text(raw, path, first=False)[:_LOG_LINE])
            return
        if not raw.strip():
            return
        row = _text(raw, path, first=False)
        if b"\r" in raw.rstrip(b"\r\n"):
            # pandas ends a row at a lone CR, this scan does not: they would disagree on
            # what the rows are.
            raise CaptureError(
                f"line {number + 1}: a carriage return inside a launch row: not ncu output",
                path,
            )
        if layout.units is None and layout.rows == 0:
            fields = _parse_row(row.rstrip("\r\n"))
            if _is_units_row(fields, layout.header):
                layout.units = fields
                return
        layout.rows += 1
        if layout.rows > self.max_launches:
            raise CaptureError(
                f"holds more than {self.max_launches:,} launches; "
                f"perfgate reads at most that many from one capture (raise it with "
                f"{MAX_LAUNCHES_ENV}; docs/limits.md)",
                path,
            )
        layout.last_row = row
        count = _field_count(raw, row, self.expected)
        if layout.broken_row is None and count != self.expected:
            layout.broken_row = (number + 1, count)
        if self.pieces is not None and self.fields is not None:
            cut = self._cut_one(raw, count, self.fields)
            if cut is None:
                self.pieces = None
            else:
                self.pieces.append(cut)

    def _cut_one(self, raw: bytes, count: int, fields: list[int]) -> bytes | None:
        from perfgate.ingest import quoted

        line = raw if raw.endswith(b"\n") else raw + b"\n"
        if count != self.expected:
            return None
        return quoted.rows(quoted.split(line), 0, 1, self.expected, fields).cut

    def _finish(self) -> None:
        if self.pieces is None or self.fields is None:
            return
        assert self.layout.header is not None
        names = [self.layout.header[i] for i in self.fields]
        buffer = io.StringIO()
        csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(names)
        self.layout.cut = buffer.getvalue().encode("utf-8") + b"".join(self.pieces)


def _quotes(line: bytes) -> int:
    import numpy as np  # pandas' own dependency, loaded with it; 6x faster than bytes.count

    return int(np.count_nonzero(np.frombuffer(line, dtype=np.uint8) == 34))


def _field_count(raw: bytes, row: str, expected: int) -> int:
    """How many fields a launch row has. ncu quotes every field, so a row of `expected` fields
    without quotes inside them holds exactly 2 x `expected` quotes, which one vectorised count
    finds; any other row is parsed."""
    line = raw.rstrip(b"\r\n")
    if line[:1] == b'"' and line[-1:] == b'"' and _quotes(line) == 2 * expected:
        return expected
    return len(_parse_row(row.rstrip("\r\n")))


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
    layout = _scan(open_binary, path, wanted)
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

    nvtx_columns, keep, usecols = _selection(header, wanted)
    units = dict(zip(header, layout.units, strict=True)) if layout.units else {}
    table = _read_small(open_binary, layout, usecols) if layout.rows <= SMALL_ROWS else None
    if table is None:
        table = _read_pandas(open_binary, layout, usecols, path)
    if not table or not len(next(iter(table.values()))):
        raise CaptureError("the CSV has a header but no kernel launches", path)
    warnings = log.warnings + log_after.warnings
    return _to_capture(table, keep, units, header, nvtx_columns, warnings, path)


# The fields of each launch row, column by column, as the file holds them (text).
Table = dict[str, list[str]]
# Up to this many launch rows, the cut rows are read with the csv module: pandas' read_csv
# costs about 4 ms a call whatever the size, and its per-column unique() another 0.1 ms, which
# made 1,500 files of a few dozen launches take 30 s (issue 23; docs/scale.md).
SMALL_ROWS = 2000


def _read_small(open_binary: Opener, layout: _Layout, usecols: list[str]) -> Table | None:
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


def _read_pandas(open_binary: Opener, layout: _Layout, usecols: list[str], path: str) -> Table:
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


def _selection(
    header: list[str], wanted: Callable[[str], bool] | None
) -> tuple[list[str], list[str], list[str]]:
    """(NVTX columns, the metric columns kept, every column read: identity and kept)."""
    nvtx_columns, metric_columns = split_columns(header)
    keep = [c for c in metric_columns if wanted is None or wanted(c) or c == DEVICE_NAME]
    metric_set = set(metric_columns)  # a list here made 80,000 columns cost 29 s
    identity = [c for c in header if c not in metric_set]
    return nvtx_columns, keep, list(dict.fromkeys([*identity, *keep]))


def _check_complete(last_row: str, header: list[str], path: str) -> None:
    """A file cut off mid-row still parses (pandas pads the row with empty fields), so the
    last row is counted by hand: it must have as many fields as the header."""
    line = last_row.rstrip("\r\n")
    if line.count('"') % 2:
        raise CaptureError(
            "the last launch row ends inside a quoted field: the file looks cut off", path
        )
    fields = _parse_row(line)
    if len(fields) != len(header):
        raise CaptureError(
            f"the last launch row has {len(fields)} fields, the header {len(header)}: "
            "the file looks cut off",
            path,
        )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


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


def _to_capture(
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
