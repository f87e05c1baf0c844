"""Reading captures: ncu's raw CSV page (plain or gzip) and `.ncu-rep` report files."""

from __future__ import annotations

import gzip
import stat
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from perfgate.common.errors import CaptureError
from perfgate.ingest.launches import Capture
from perfgate.ingest.ncu_rep import MAGIC as NCU_REP_MAGIC
from perfgate.ingest.ncu_rep import read_ncu_rep
from perfgate.ingest.raw_csv import read_raw_csv

GZIP_MAGIC = b"\x1f\x8b"


class MetricSelection:
    """The raw metric names a check needs; a callable filter for the readers."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)

    def __call__(self, name: str) -> bool:
        return name in self.names


def read_capture(path: str | Path, wanted: Callable[[str], bool] | None = None) -> Capture:
    """Read one capture file, choosing the reader by its content rather than its name."""
    name = str(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise CaptureError("is a directory, not a capture file", name)
        mode = p.stat().st_mode
        if not stat.S_ISREG(mode):
            # A FIFO cannot be read twice (perfgate scans a capture, then reads its columns)
            # and a device such as /dev/zero never ends.
            kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
            raise CaptureError(
                f"is {kind}; perfgate reads captures from regular files (save it first)", name
            )
        with p.open("rb") as fh:
            head = fh.read(4)
    except FileNotFoundError as exc:
        raise CaptureError("no such file", name) from exc
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror or exc}", name) from exc
    if head.startswith(NCU_REP_MAGIC):
        return read_ncu_rep(name, wanted)

    def open_binary() -> BinaryIO:
        if head.startswith(GZIP_MAGIC):
            return gzip.open(p, "rb")  # type: ignore[return-value]
        return p.open("rb")

    try:
        return read_raw_csv(open_binary, name, wanted)
    except (OSError, EOFError, zlib.error) as exc:
        # gzip reports a truncated or corrupt stream while it is being read.
        raise CaptureError(f"broken gzip data or unreadable file: {exc}", name) from exc


def read_captures(
    paths: Iterable[str | Path], wanted: Callable[[str], bool] | None = None
) -> Capture:
    """Read several captures (separate ncu runs of one workload) as one. A gate capture of
    `perfgate capture` is marked so (its sidecar says); a diagnosis capture is folded into the
    others for its metrics only (perfgate.ingest.phases)."""
    from perfgate.ingest.phases import read_phased

    return read_phased([str(p) for p in paths], lambda p: read_capture(p, wanted))
