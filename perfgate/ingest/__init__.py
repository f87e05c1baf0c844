"""Reading captures: ncu's raw CSV page (plain or gzip) and `.ncu-rep` report files."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable
from pathlib import Path

from perfgate.capture import Capture, merge
from perfgate.errors import CaptureError
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


def _decode(data: bytes, path: str) -> str:
    if b"\x00" in data[:65536]:
        raise CaptureError("binary data, not an ncu CSV capture or .ncu-rep report", path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CaptureError(
            f"not UTF-8 text (byte {exc.start}): not an ncu CSV capture", path
        ) from exc


def read_capture(path: str | Path, wanted: Callable[[str], bool] | None = None) -> Capture:
    """Read one capture file, choosing the reader by its content rather than its name."""
    name = str(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise CaptureError("is a directory, not a capture file", name)
        with p.open("rb") as fh:
            head = fh.read(4)
            if head.startswith(NCU_REP_MAGIC):
                return read_ncu_rep(name, wanted)
            data = head + fh.read()
    except FileNotFoundError as exc:
        raise CaptureError("no such file", name) from exc
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror or exc}", name) from exc
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise CaptureError(f"broken gzip data: {exc}", name) from exc
    if not data.strip():
        raise CaptureError("the file is empty", name)
    return read_raw_csv(_decode(data, name), name, wanted)


def read_captures(
    paths: Iterable[str | Path], wanted: Callable[[str], bool] | None = None
) -> Capture:
    """Read several captures (separate ncu runs of one workload) as one."""
    return merge([read_capture(p, wanted) for p in paths])
