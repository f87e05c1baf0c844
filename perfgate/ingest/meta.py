"""What a capture file does not say about itself: the sidecar `CAPTURE.meta.json` that
`perfgate capture` writes beside it (ncu version, driver, clock control, the command).

A raw CSV page carries the GPU's name and compute capability in every row, but not the ncu
version, the driver or whether ncu locked the clocks; a capture made by hand has no sidecar and
those stay unknown. The sidecar is data only: read as JSON, size-capped, every field checked
for its type, and never trusted to change how the capture itself is read.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path

from perfgate.common.errors import CaptureError
from perfgate.ingest.scope import capture_scope

SUFFIX = ".meta.json"
MAX_BYTES = 1024 * 1024
_FIELDS = (
    "ncu_version", "driver", "gpu", "cc", "clock_control", "cache_control", "replay_mode",
    "phase", "machine_start",
)  # fmt: skip
# The phases of `perfgate capture` (docs/capture.md): a gate capture holds the one-pass gate
# set of every baselined kernel, a diagnosis capture the rich set of the kernels that failed it
# (merged by `check` for its metrics only), a full capture everything at once (as by hand).
GATE = "gate"
DIAGNOSIS = "diagnosis"
FULL = "full"
PHASES = (GATE, DIAGNOSIS, FULL)


@dataclass(frozen=True)
class CaptureMeta:
    """The sidecar's fields perfgate uses; None where unknown."""

    path: str  # the sidecar file, "" when there is none
    ncu_version: str | None = None
    driver: str | None = None
    gpu: str | None = None
    cc: str | None = None
    clock_control: str | None = None
    cache_control: str | None = None  # ncu --cache-control (all, none); None: unknown
    replay_mode: str | None = None
    program_exit_code: int | None = None  # the captured program's own exit code
    # Which launches ncu profiled (perfgate.ingest.scope): the sidecar's `scope`, else read
    # from its recorded ncu `command`; None: unknown.
    scope: str | None = None
    phase: str | None = None  # GATE, DIAGNOSIS or FULL; None: unknown (a capture by hand)
    # A gate capture's diagnosis capture, a file beside it (perfgate capture --phases auto).
    diagnosis: str | None = None
    # Which machine start the capture ran on (perfgate.ncu.machine.machine_start); None: not
    # known (a capture by hand, or one written before perfgate recorded it).
    machine_start: str | None = None


def time_basis(meta: CaptureMeta) -> str:
    """The metric set a capture's durations were measured under: GATE for a gate capture (its
    sidecar says phase gate), else FULL (a full perfgate capture, or one made by hand). The
    set changes the durations: a gate capture's short kernels run 2-4% longer (docs/capture.md),
    so durations compare only between captures of one basis."""
    return GATE if meta.phase == GATE else FULL


def sidecar_path(capture_path: str) -> Path:
    """Where `perfgate capture` writes the sidecar of `capture_path`."""
    return Path(capture_path + SUFFIX)


def find_sidecar(capture_path: str) -> Path:
    """The sidecar of `capture_path`: CAP.meta.json, or for CAP.gz (a capture gzipped after
    it was written, `gzip ci.csv`), the CAP.meta.json it was written with."""
    path = sidecar_path(capture_path)
    if capture_path.endswith(".gz") and not path.exists():
        before = Path(capture_path.removesuffix(".gz") + SUFFIX)
        if before.exists():
            return before
    return path


def read_meta(capture_path: str) -> CaptureMeta:
    """The sidecar of `capture_path`, or an empty CaptureMeta when there is none."""
    path = find_sidecar(capture_path)
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block, a device never end
            raise CaptureError("not a regular file", path)
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return CaptureMeta("")
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror or exc}", path) from exc
    if len(data) > MAX_BYTES:
        raise CaptureError(f"larger than {MAX_BYTES:,} bytes: not a perfgate sidecar", path)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaptureError(f"not JSON: {exc}", path) from exc
    except RecursionError as exc:  # 100,000 nested brackets: json recurses once per level
        raise CaptureError("JSON nested too deeply: not a perfgate sidecar", path) from exc
    if not isinstance(doc, dict) or "perfgate_capture" not in doc:
        raise CaptureError("not a perfgate capture sidecar (no perfgate_capture key)", path)
    values: dict[str, str | None] = {}
    for key in _FIELDS:
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            raise CaptureError(f"{key} must be a string or null, not {value!r}", path)
        values[key] = _text(key, value, path)
    if values["phase"] is not None and values["phase"] not in PHASES:
        raise CaptureError(
            f"phase must be one of {', '.join(PHASES)} or null, not {values['phase']!r}", path
        )
    diagnosis = doc.get("diagnosis")
    if diagnosis is not None and (
        not isinstance(diagnosis, str)
        or not diagnosis
        or "/" in diagnosis
        or "\\" in diagnosis
        or diagnosis in (".", "..")
    ):
        raise CaptureError(
            f"diagnosis must be the name of a file beside the capture, not {diagnosis!r}", path
        )
    code = doc.get("program_exit_code")
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        raise CaptureError(f"program_exit_code must be an integer or null, not {code!r}", path)
    return CaptureMeta(
        str(path), **values, program_exit_code=code, scope=_scope(doc, path),
        diagnosis=_text("diagnosis", diagnosis, path),
    )  # fmt: skip


# YAML reads these as line breaks: a baseline holding one would not read back as written.
_BREAKS = {"\x85": "a NEL (U+0085)", "\u2028": "a U+2028", "\u2029": "a U+2029"}


def _text(key: str, value: str | None, path: Path) -> str | None:
    """A sidecar string as perfgate may keep it (a baseline's fingerprint, the reports): the
    rules of every other text kept (gate.check_kept_text): UTF-8 only (JSON's "\\ud800" is a
    lone surrogate, which no file can hold) and no NEL, U+2028 or U+2029."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CaptureError(
            f"{key}: not UTF-8 text (a lone surrogate \\u{ord(value[exc.start]):04x} at "
            f"character {exc.start + 1}); a sidecar holds UTF-8 text only",
            path,
        ) from exc
    for ch, what in _BREAKS.items():
        if ch in value:
            raise CaptureError(
                f"{key}: {what} character at character {value.index(ch) + 1}, which YAML "
                "reads as a line break: a baseline could not keep it",
                path,
            )
    return value


def _scope(doc: dict[str, object], path: Path) -> str | None:
    scope = doc.get("scope")
    if scope is not None and not isinstance(scope, str):
        raise CaptureError(f"scope must be a string or null, not {scope!r}", path)
    command = doc.get("command")
    if command is None:
        return _text("scope", scope, path)
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        raise CaptureError("command must be a list of strings (the ncu command line)", path)
    if scope is not None:
        return _text("scope", scope, path)
    # Only ncu's launch filters are kept of the command (the program's arguments are not).
    return _text("command", capture_scope(command), path)
