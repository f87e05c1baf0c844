"""Launch rows as ncu writes them: every field quoted, a megabyte of rows at a time.

ncu's raw page quotes every field (`"1","0","python3",...`), so in a row of F fields without
a quote inside one, field k lies between the row's quote 2k and quote 2k+1. Finding the
quotes of a block of rows is one vectorised pass, which gives two things without a CSV
parser: each row's field count (a row of F fields holds 2F quotes), and the fields a check
reads, cut out of the row. A `--set full` row has about 2,200 fields and a check reads about
150: pandas then parses a tenth of the file instead of tokenising all of it (docs/scale.md).

Anything else (a blank line, a carriage return inside a row, a quote inside a field, text
that is not ASCII) is not "clean", and the caller reads those rows one at a time as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    Bytes = np.ndarray[Any, np.dtype[np.uint8]]
    Index = np.ndarray[Any, np.dtype[np.intp]]

_QUOTE, _COMMA, _LF, _CR, _EQUALS = 34, 44, 10, 13, 61


@dataclass(frozen=True)
class Lines:
    """The lines of a block that ends with a line feed: each line's first byte and its LF."""

    data: bytes
    array: Bytes
    starts: Index
    ends: Index

    def __len__(self) -> int:
        return len(self.ends)

    def line(self, i: int) -> bytes:
        return self.data[int(self.starts[i]) : int(self.ends[i]) + 1]


def split(data: bytes) -> Lines:
    """`data` must end with b"\\n"."""
    import numpy as np

    array = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(array == _LF)
    starts = np.empty_like(ends)
    if len(ends):
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    return Lines(data, array, starts, ends)


def longest(lines: Lines) -> tuple[int, int]:
    """(the index of the longest line, its length with its LF)."""
    lengths = lines.ends - lines.starts + 1
    at = int(lengths.argmax())
    return at, int(lengths[at])


def first_log_line(lines: Lines, start: int) -> int:
    """The first line from `start` on that starts with "==" (ncu's log after the rows), or
    len(lines)."""
    import numpy as np

    array, starts = lines.array, lines.starts[start:]
    second = np.minimum(starts + 1, len(array) - 1)
    log = (array[starts] == _EQUALS) & (array[second] == _EQUALS) & (second > starts)
    hits = np.flatnonzero(log)
    return start + int(hits[0]) if len(hits) else len(lines)


@dataclass(frozen=True)
class Rows:
    """Lines [start, stop) of a block, read as launch rows."""

    clean: bool  # all rows of the header's field count, each field quoted, plain ASCII
    cut: bytes | None  # the wanted fields of every row; None when not clean or not cut


def rows(lines: Lines, start: int, stop: int, fields: int, wanted: list[int] | None) -> Rows:
    """Whether lines [start, stop) are all rows of `fields` quoted fields in plain ASCII,
    each ending in LF or CRLF with no other CR (what a line-at-a-time reading accepts as a
    launch row of the header's field count), and, when they are and `wanted` lists field
    indices in ascending order, those fields of each row as CSV quoted as ncu quotes them.
    The cut is None when a field holds a quote: its quotes are then not the fields' bounds."""
    import numpy as np

    if start >= stop:
        return Rows(True, b"" if wanted is not None else None)
    lo, hi = int(lines.starts[start]), int(lines.ends[stop - 1]) + 1
    if not lines.data[lo:hi].isascii():
        return Rows(False, None)
    block = lines.array[lo:hi]
    ends = lines.ends[start:stop] - lo
    starts = lines.starts[start:stop] - lo
    crs = np.flatnonzero(block == _CR)
    if len(crs) and not (block[np.minimum(crs + 1, len(block) - 1)] == _LF).all():
        return Rows(False, None)
    # The last byte before the line end, past a CR of CRLF.
    last = ends - 1 - (block[np.maximum(ends - 1, 0)] == _CR)
    if not ((last > starts) & (block[starts] == _QUOTE) & (block[last] == _QUOTE)).all():
        return Rows(False, None)
    quotes = np.flatnonzero(block == _QUOTE)
    per_line = np.searchsorted(quotes, ends) - np.searchsorted(quotes, starts)
    if not (per_line == 2 * fields).all():
        return Rows(False, None)
    if wanted is None:
        return Rows(True, None)
    return Rows(True, _cut(block, quotes.reshape(stop - start, 2 * fields), wanted))


def _cut(block: Bytes, bounds: Index, wanted: list[int]) -> bytes | None:
    import numpy as np

    if not wanted:
        return b""
    closing, opening = bounds[:, 1:-1:2], bounds[:, 2::2]
    # Between two fields exactly one comma, and no quote anywhere else.
    if not (((opening - closing) == 2).all() and (block[closing + 1] == _COMMA).all()):
        return None
    pick = np.asarray(wanted, dtype=np.intp)
    first, last = bounds[:, 2 * pick].ravel(), bounds[:, 2 * pick + 1].ravel()
    # Each field with its quotes and the byte after it: the comma before the next field
    # (checked above), or what ends the row; each cut row ends in a line feed.
    sizes = last - first + 2
    ends = np.cumsum(sizes)
    source = np.repeat(first - (ends - sizes), sizes) + np.arange(int(ends[-1]))
    cut = block[source]
    cut[ends[len(wanted) - 1 :: len(wanted)] - 1] = _LF
    return cut.tobytes()
