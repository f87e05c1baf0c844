"""One streaming pass over a raw-page capture: where the CSV block sits (the header, the units
row, how many launch rows), ncu's log lines around it, and the rows cut to the fields a read
keeps (perfgate.ingest.quoted), without holding the file's text in memory."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from perfgate.common.errors import CaptureError
from perfgate.ingest import ncu_log
from perfgate.ingest.raw_columns import KERNEL_NAME, parse_row, selection
from perfgate.ingest.raw_limits import (
    MAX_COLUMNS,
    MAX_LAUNCHES,
    MAX_LAUNCHES_ENV,
    MAX_LINE,
    env_limit,
    max_bytes,
    read_lines,
    too_large,
    too_long,
)

Opener = Callable[[], BinaryIO]
_BINARY_PROBE = 65536


_KEEP_LOG = 10_000  # log lines kept from around the CSV; program output is not kept
_LOG_LINE = 4096  # characters kept of each: 10,000 lines of 16 MiB would be 160 GB


@dataclass
class Layout:
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


def scan(open_binary: Opener, path: str, wanted: Callable[[str], bool] | None = None) -> Layout:
    """One pass over the file: the header (the first CSV row with a "Kernel Name" column),
    the units row, how many launch rows follow before ncu's next log line, and ncu's log
    lines around them. Lines are read one at a time up to the header, then a megabyte at a
    time; of the rows, only the fields `wanted` selects are kept (perfgate.ingest.quoted)."""
    layout = Layout()
    offset = 0
    with open_binary() as fh:
        if b"\x00" in fh.read(_BINARY_PROBE):
            raise CaptureError("binary data, not an ncu CSV capture or .ncu-rep report", path)
        fh.seek(0)
        number = 0
        for number, raw in enumerate(read_lines(fh, path)):
            size = len(raw)
            if not layout.content and raw.strip():
                layout.content = True
            text = _text(raw, path, first=number == 0)
            if KERNEL_NAME in text:
                fields = parse_row(text.rstrip("\r\n"))
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
    keep = set(selection(header, wanted)[2])
    if 2 * len(keep) > len(header):
        return None
    return [i for i, name in enumerate(header) if name in keep]


_CHUNK = 1 << 18  # bytes of launch rows read at a time (256 KB measured faster than 1 MB: cache)


class _Rows:
    """The launch rows and ncu's log after them, a chunk at a time. A chunk of clean rows
    (perfgate.ingest.quoted) is counted and cut at once; any other line goes through
    _row(), the same checks one line at a time."""

    def __init__(self, layout: Layout, path: str, fields: list[int] | None) -> None:
        self.layout = layout
        self.path = path
        self.fields = fields
        assert layout.header is not None
        self.expected = len(layout.header)
        self.max_launches = env_limit(MAX_LAUNCHES_ENV, MAX_LAUNCHES)
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
                raise too_large(limit, self.path)
            data = carry + block if carry else block
            if block:
                end = data.rfind(b"\n") + 1
                if not end:
                    if len(data) > MAX_LINE:
                        raise too_long(number + 1, self.path)
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
            raise too_long(number + at + 1, self.path)
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
            fields = parse_row(region[start:end].rstrip(b"\r").decode("utf-8", "replace"))
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
            fields = parse_row(row.rstrip("\r\n"))
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
    return len(parse_row(row.rstrip("\r\n")))
