"""Limits on what a read of a raw-page capture takes in (docs/limits.md): a line's length, the
bytes of one capture after gzip, the columns, the launches, a kernel name's length."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from perfgate.common.errors import CaptureError

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


def env_limit(env: str, default: int) -> int:
    try:
        return int(os.environ.get(env, "")) or default
    except ValueError:
        return default


def max_bytes() -> int:
    """The most bytes of one capture perfgate reads (after gzip); $PERFGATE_MAX_CAPTURE_BYTES
    raises it for a capture larger than any seen."""
    return env_limit(MAX_BYTES_ENV, MAX_BYTES)


def read_lines(fh: BinaryIO, path: str) -> Iterator[bytes]:
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
            raise too_long(number, path)
        total += len(raw)
        if total > limit:
            raise too_large(limit, path)
        yield raw


def too_long(number: int, path: str) -> CaptureError:
    return CaptureError(
        f"line {number} is longer than {MAX_LINE:,} bytes: not ncu CSV output (docs/limits.md)",
        path,
    )


def too_large(limit: int, path: str) -> CaptureError:
    return CaptureError(
        f"holds more than {limit:,} bytes (after gzip); perfgate reads at most that much of "
        f"one capture (raise it with {MAX_BYTES_ENV}; docs/limits.md)",
        path,
    )
