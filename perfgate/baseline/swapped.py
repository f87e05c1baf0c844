"""`perfgate check -b capture.csv -c baseline.yaml`: a baseline that is a capture, or a capture
that is a baseline, is said as what it is, with the likely mistake named, in place of a YAML or
CSV parser's complaint about its third line."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from perfgate.common.errors import BaselineError, CaptureError, PerfgateError
from perfgate.ingest import GZIP_MAGIC
from perfgate.ingest.ncu_rep import MAGIC as NCU_REP_MAGIC

_HEAD = 64 * 1024  # ncu's own log lines may come before a raw page's header row
_CSV_HEADER = re.compile(r'^"ID","Process ID",|^"?Kernel Name"?,|,"Kernel Name",', re.M)
_BASELINE_KEYS = re.compile(r"^(format_version|kernels|fingerprint|provenance):", re.M)


def _head(path: str) -> bytes:
    """The file's first bytes; none of what is not a regular file (a FIFO would block)."""
    p = Path(path)
    try:
        if not stat.S_ISREG(p.stat().st_mode):
            return b""
        with p.open("rb") as fh:
            return fh.read(_HEAD)
    except OSError:
        return b""


def capture_kind(path: str) -> str | None:
    """What `path` holds when it is a capture ("an ncu .ncu-rep report", ...); None otherwise."""
    head = _head(path)
    if head.startswith(NCU_REP_MAGIC):
        return "an ncu .ncu-rep report"
    if head.startswith(GZIP_MAGIC):
        return "gzip data (an ncu capture, never a baseline)"
    text = head.decode("utf-8", "replace")
    if _CSV_HEADER.search(text) or text.startswith("==PROF=="):
        return "an ncu CSV capture"
    return None


def is_baseline(path: str) -> bool:
    """`path` reads as a perfgate baseline: YAML with a baseline's top-level keys."""
    head = _head(path)
    return b"\x00" not in head and bool(_BASELINE_KEYS.search(head.decode("utf-8", "replace")))


def hinted(exc: PerfgateError, compare: bool = False) -> PerfgateError | None:
    """`exc`, about a baseline that is a capture or a capture that is a baseline, said so with
    the mistake named; None when it is not that. `compare`: for `perfgate compare`, whose two
    arguments are both captures."""
    if exc.path is None:
        return None
    if isinstance(exc, BaselineError) and not compare:
        kind = capture_kind(exc.path)
        if kind is None:
            return None
        return BaselineError(
            f"given as a baseline, but it is {kind}: did you swap --baseline and --capture? "
            "(perfgate check -b BASELINE.yaml -c CAPTURE.csv)",
            exc.path,
        )
    if isinstance(exc, CaptureError) and is_baseline(exc.path):
        if compare:
            return CaptureError(
                "given as a capture, but it is a perfgate baseline: perfgate compare takes two "
                f"captures; check one against this baseline with perfgate check -b {exc.path} "
                "-c CAPTURE",
                exc.path,
            )
        return CaptureError(
            "given as a capture, but it is a perfgate baseline: did you swap --baseline and "
            "--capture? (perfgate check -b BASELINE.yaml -c CAPTURE.csv)",
            exc.path,
        )
    return None
