"""Writing files atomically, so a crash or a full disk never leaves half a report behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from perfgate.errors import UsageError


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` via a temporary file in the same directory and a rename."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", target) from exc
    try:
        # mkstemp makes the file 0600; give it the mode a plain open() would (or keep the
        # existing file's), so a baseline in a repository stays readable by everyone.
        try:
            mode = target.stat().st_mode & 0o777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        Path(tmp).chmod(mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise UsageError(f"cannot write: {exc.strerror or exc}", target) from exc
