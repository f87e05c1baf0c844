"""Running ncu for `perfgate capture`: the profile run, the import that writes the capture,
the progress display and the verdict on what ncu said.

ncu runs as an argument list, never through a shell. Its log goes to a file of its own
(`--log-file`) that perfgate follows for the progress display and keeps as CAP.log; the
program's own output passes through to perfgate's stderr and never reaches the capture, which
is ncu's `--import ... --csv --page raw --print-units base` output of the report, unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from perfgate.common.errors import CaptureError, PerfgateError, UsageError
from perfgate.common.escape import log_line
from perfgate.common.fileio import move_into_place, remove_stale, write_text_atomic
from perfgate.ingest import ncu_log
from perfgate.ingest.scope import capture_scope
from perfgate.metrics.passes import DIAGNOSIS
from perfgate.ncu.command import (
    CACHE_CONTROL,
    CaptureOptions,
    CapturePlan,
    build_plan,
)
from perfgate.ncu.machine import find_ncu, machine_start, parse_ncu_version, query_gpu

_POLL_S = 0.2


@dataclass(frozen=True)
class CaptureResult:
    output: str
    log: str
    meta: str
    launches: int
    passes: tuple[int, ...]  # per profiled launch, as ncu printed them
    wall_s: float
    program_exit_code: int | None
    gated: tuple[str, ...] = ()  # raw metrics the baselines need
    absent: tuple[str, ...] = ()  # of those, the ones the capture lacks
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    phase: str = "full"
    kernels: int = 0  # distinct kernels (by name) profiled

    def passes_text(self) -> str:
        """ "1 pass", "3/9 passes", "? passes" per kernel, as ncu printed them."""
        shown = sorted(set(self.passes))
        if not shown:
            return "? passes"
        return "/".join(map(str, shown)) + (" pass" if shown == [1] else " passes")

    def summary(self) -> str:
        """ "gate capture: 4 kernels, 27 launches, 1 pass per kernel, 23.0 s"."""
        return (
            f"{self.phase} capture: {self.kernels} kernel(s), {self.launches} launch(es), "
            f"{self.passes_text()} per kernel, {self.wall_s:.1f} s"
        )


class Progress:
    """One line on a terminal, rewritten in place; a line now and then in a CI log."""

    def __init__(self, stream: IO[str], interval_s: float = 5.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.interval_s = interval_s
        self.last = 0.0
        self.count = 0
        self.shown = ""

    def launch(self, name: str, passes: int) -> None:
        self.count += 1
        text = log_line(
            f"perfgate: profiled {self.count} launch(es); last {name!r}: {passes} passes"
        )
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + text[:150].ljust(len(self.shown)))
            self.shown = text[:150]
            self.stream.flush()
        elif self.count == 1 or now - self.last >= self.interval_s:
            self.stream.write(text + "\n")
            self.stream.flush()
            self.last = now

    def done(self) -> None:
        if self.tty and self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _follow(path: Path, position: int, partial: str) -> tuple[int, str, list[str]]:
    """New complete lines of a file another process is writing."""
    try:
        with path.open("rb") as fh:
            fh.seek(position)
            chunk = fh.read()
    except FileNotFoundError:
        return position, partial, []
    text = partial + chunk.decode("utf-8", "replace")
    lines = text.split("\n")
    return position + len(chunk), lines[-1], lines[:-1]


def _pump(source: IO[bytes], sink: IO[str], ncu_lines: list[str]) -> None:
    """The program's stdout to perfgate's stderr; ncu's own lines (printed there before its
    log file is open, such as a bad option) are kept too."""
    for raw in iter(source.readline, b""):
        line = raw.decode("utf-8", "replace")
        if line.startswith(ncu_log.PREFIXES):
            ncu_lines.append(line.rstrip("\n"))
        sink.write(line)
        sink.flush()


def _check_output_path(options: CaptureOptions, plan_inputs: list[str]) -> None:
    # The one rule of perfgate.common.fileio: by inode (links) and resolved path; and none of
    # the files a run writes or removes beside the capture is a link or an input.
    from perfgate.common.fileio import check_outputs

    check_outputs(_labelled(Path(options.output)), [p for p in plan_inputs if p])


def _labelled(out: Path, name: str = "-o") -> list[tuple[str, str | None]]:
    """The files a capture at `out` writes, each with what names it in a message."""
    labels = (name, f"{name} (its metadata)", f"{name} (its ncu log)", f"{name} (its ncu report)")
    return list(zip(labels, _outputs(out), strict=True))


def _version(ncu: str) -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        proc = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
        return parse_ncu_version(proc.stdout)
    return None


def _columns(csv_text: str) -> set[str]:
    import csv

    for line in csv_text.splitlines():
        if '"Kernel Name"' in line:
            return set(next(csv.reader([line])))
    return set()


def _column(csv_text: str, name: str) -> list[str]:
    """The values of column `name` in every whole row of a capture's raw page."""
    import csv

    rows = csv.reader(line for line in csv_text.splitlines() if line.startswith('"'))
    header = next(rows, None)
    if not header or name not in header:
        return []
    col = header.index(name)
    return [row[col] for row in rows if len(row) == len(header)]


def _cc_of(csv_text: str) -> str | None:
    return next((cc for cc in _column(csv_text, "CC") if cc), None)


def run_capture(
    options: CaptureOptions,
    err: IO[str] | None = None,
    gpu_query: Callable[[], tuple[str | None, str | None, str | None]] | None = None,
) -> CaptureResult:
    """Profile `options.program` and write the capture, its log and its metadata. A failed
    run leaves no capture at `-o` (an earlier one is removed when the run starts), only its
    own log and metadata (with "error"), where it got that far."""
    from perfgate.ncu.command import baseline_files

    stream = err if err is not None else sys.stderr
    _check_output_path(options, [*baseline_files(options.baselines), *options.program[:1]])
    out = Path(options.output)
    # The earlier run's files at -o go first: whatever happens next, no capture is left at
    # -o unless this run wrote it, and no sidecar of one run sits beside another's capture.
    for old in _outputs(out):
        remove_stale(old)
    try:
        return _run(options, out, stream, gpu_query)
    except BaseException as exc:
        remove_stale(out)  # a capture this run wrote before it failed claims nothing either
        remove_stale(f"{out}.ncu-rep")
        if isinstance(exc, PerfgateError):
            _note_failure(out, exc.message)
        elif isinstance(exc, KeyboardInterrupt):
            _note_failure(out, "interrupted")
        raise


def _outputs(out: Path) -> tuple[str, ...]:
    return (str(out), f"{out}.meta.json", f"{out}.log", f"{out}.ncu-rep")


def _note_failure(out: Path, message: str) -> None:
    """The failed run's metadata, if it got that far, says that it failed and why."""
    meta = Path(f"{out}.meta.json")
    with contextlib.suppress(OSError, ValueError, PerfgateError):
        data = json.loads(meta.read_text("utf-8"))
        data["error"] = message
        write_text_atomic(meta, json.dumps(data, indent=1) + "\n")


def _run(
    options: CaptureOptions,
    out: Path,
    stream: IO[str],
    gpu_query: Callable[[], tuple[str | None, str | None, str | None]] | None,
) -> CaptureResult:
    from perfgate.metrics.names import describe_absent

    ncu = find_ncu(options.ncu)
    if ncu is None:
        raise UsageError(
            f"ncu not found ({options.ncu!r} is not on PATH nor in the usual install folders): "
            "install Nsight Compute or pass --ncu PATH (perfgate doctor checks the set-up)"
        )
    name, cc, driver = (gpu_query or query_gpu)()
    options = _with(options, ncu=ncu, cc=options.cc or cc, gpu=options.gpu or name)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.perfgate-", dir=out.parent))
    report = work / "report"
    log = work / "ncu.log"
    try:
        plan = build_plan(options, str(report), str(log))
        for note in plan.notes:
            stream.write(log_line(f"perfgate: note: {note}") + "\n")
        started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        t0 = time.monotonic()
        scan, early, rc = _profile(plan, log, stream)
        wall = time.monotonic() - t0
        log_text = log.read_text("utf-8", "replace") if log.exists() else "\n".join(early)
        write_text_atomic(f"{out}.log", log_text)
        exit_code = (
            scan.app_exit_code if scan.app_exit_code is not None else (0 if rc == 0 else None)
        )
        meta: dict[str, object] = {
            "perfgate_capture": 1, "ncu_version": _version(ncu), "driver": driver,
            "gpu": name, "cc": options.cc, "clock_control": options.clock_control.value,
            "cache_control": CACHE_CONTROL, "phase": plan.phase,
            "replay_mode": options.replay_mode, "command": list(plan.profile),
            "scope": capture_scope(plan.profile),
            "program_exit_code": exit_code,
            "started": started, "machine_start": machine_start(),
            "kernel_filter": plan.kernel_filter,
            "metrics": list(plan.metrics), "passes": [p for _, p in scan.passes],
            "passes_per_kernel": _per_kernel(scan.passes),
            "kernels": len({n for n, _ in scan.passes}), "launches": len(scan.passes),
            "wall_s": round(wall, 2),
        }  # fmt: skip
        write_text_atomic(f"{out}.meta.json", json.dumps(meta, indent=1) + "\n")
        problems = scan.problems()
        failed_app = scan.app_exit_code is not None and scan.app_exit_code != 0
        others = [p for p in problems if not failed_app or "exited with code" not in p]
        rep = Path(f"{report}.ncu-rep")
        segv = _segfault_hint(rc, scan.app_exit_code)
        if others or (rc != 0 and not failed_app):
            if not others:
                others = [f"ncu exited with code {rc} and wrote no error line (see {out}.log)"]
            raise CaptureError("; ".join(others) + f" (ncu's log: {out}.log)" + segv, out)
        if failed_app and not options.allow_program_failure:
            raise CaptureError(
                f"the profiled program exited with code {scan.app_exit_code}"
                + _signal_note(scan.app_exit_code)
                + f": no capture written, since its counters describe a failed run (ncu's log: "
                f"{out}.log; --allow-program-failure writes it anyway)" + segv,
                out,
            )
        if not rep.exists():
            raise CaptureError(f"ncu wrote no report (see {out}.log)", out)
        csv_text = _import(plan, ncu, str(rep), out)
        write_text_atomic(out, csv_text)
        if meta["cc"] is None:  # no nvidia-smi: the capture's own CC column says
            meta["cc"] = _cc_of(csv_text)
            write_text_atomic(f"{out}.meta.json", json.dumps(meta, indent=1) + "\n")
        if options.keep_report:  # a rename, as the report lies in work/ beside `out`
            move_into_place(rep, f"{out}.ncu-rep")
        census_line, census_s = _census(options, plan, csv_text, work, stream, meta)
        if census_s:  # the sidecar says what the census found
            write_text_atomic(f"{out}.meta.json", json.dumps(meta, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    columns = _columns(csv_text)
    absent = tuple(m for m in plan.gated if m not in columns)
    warnings = list(scan.warnings)
    if failed_app:
        warnings.append(
            f"the profiled program exited with code {scan.app_exit_code}"
            f"{_signal_note(scan.app_exit_code)}: the capture describes a failed run"
            + _segfault_hint(rc, scan.app_exit_code)
        )
    if census_line:
        warnings.append(census_line)
    warnings.extend(describe_absent(absent, _cc_of(csv_text) or options.cc))
    return CaptureResult(
        output=str(out), log=f"{out}.log", meta=f"{out}.meta.json",
        launches=len(scan.passes), passes=tuple(p for _, p in scan.passes),
        wall_s=round(time.monotonic() - t0 - census_s, 2), program_exit_code=exit_code,
        gated=plan.gated, absent=absent, warnings=tuple(warnings), notes=plan.notes,
        phase=plan.phase, kernels=len({n for n, _ in scan.passes}),
    )  # fmt: skip


def _per_kernel(passes: list[tuple[str, int]]) -> dict[str, int]:
    """The replay passes of each profiled kernel (the most any of its launches took)."""
    out: dict[str, int] = {}
    for name, count in passes:
        out[name] = max(count, out.get(name, 0))
    return out


def _census(
    options: CaptureOptions,
    plan: CapturePlan,
    csv_text: str,
    work: Path,
    stream: IO[str],
    meta: dict[str, object],
) -> tuple[str | None, float]:
    """The census run after a capture in a push/pop NVTX range (perfgate.ncu.census): the
    warning it gives, if any, and the seconds it took (0: no census). It never fails the
    capture: a census that lists nothing is said in a note."""
    from perfgate.ncu.census import compare, pushpop_ranges, run_census, warning

    ranges = pushpop_ranges(plan.profile)
    if not options.census or plan.phase == DIAGNOSIS or not ranges:
        return None, 0.0
    for note in (
        f"census run for the push/pop range(s) {', '.join(map(repr, ranges))}"
        " (the program once more under ncu, nothing profiled; --no-census skips it)",
    ):
        stream.write(log_line(f"perfgate: note: {note}") + "\n")
    t0 = time.monotonic()
    available, why = run_census(options.ncu, plan.program, work / "census.log")
    seconds = max(time.monotonic() - t0, 1e-6)
    if available is None:
        for note in (f"the census gave no list: {why}",):
            stream.write(log_line(f"perfgate: note: {note}") + "\n")
        meta["census"] = {"error": why, "wall_s": round(seconds, 2)}
        return None, seconds
    census = compare(available, _column(csv_text, "Kernel Name"))
    meta["census"] = {**census.as_meta(), "wall_s": round(seconds, 2)}
    counted = options.launch_skip is not None or options.launch_count is not None
    return warning(census, ranges, plan.kernel_filter is not None, counted), seconds


# SIGSEGV, as ncu reports the program's code (11) or a shell the code of a killed process (139);
# Python's returncode for ncu itself killed by the signal is -11.
_SEGV_CODES = frozenset({11, 139, -11})


def _segfault_hint(rc: int | None, app_code: int | None) -> str:
    """What to try when the program died of SIGSEGV under ncu. Seen with JAX 0.11 on an H100:
    XLA's GEMM autotuner crashed under ncu (ncu exit 139); with it off, 2 of 12 captures still
    crashed once and passed when re-run (tests/data/field/families/*/jax-*-crashed-139.*).
    Whether the program uses JAX cannot be told from outside, so the hint says "if"."""
    if rc not in _SEGV_CODES and app_code not in _SEGV_CODES:
        return ""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_gpu_autotune_level=0" in flags:
        return (
            ". A segmentation fault under ncu: XLA_FLAGS already turns XLA's autotuner off, "
            "and JAX was still seen to crash now and then under ncu (2 of 12 captures): re-run"
        )
    return (
        ". A segmentation fault under ncu: if the program uses JAX/XLA, XLA's GEMM autotuner "
        "crashes under ncu (seen with JAX 0.11): set XLA_FLAGS=--xla_gpu_autotune_level=0 "
        "(with XLA_PYTHON_CLIENT_PREALLOCATE=false) and re-run; it was seen to crash now and "
        "then even so (2 of 12 captures), so re-run once before looking further "
        '(docs/capture.md, "Training steps, other threads, JAX")'
    )


def _signal_note(code: int | None) -> str:
    name = ncu_log.crash_signal(code) if code else None
    return f" ({name}: it crashed or was killed)" if name else ""


def _with(options: CaptureOptions, **changes: object) -> CaptureOptions:
    from dataclasses import replace

    return replace(options, **changes)  # type: ignore[arg-type]


def _profile(
    plan: CapturePlan, log: Path, stream: IO[str]
) -> tuple[ncu_log.LogScan, list[str], int]:
    progress = Progress(stream)
    scan = ncu_log.LogScan()
    early: list[str] = []
    try:
        proc = subprocess.Popen(list(plan.profile), stdout=subprocess.PIPE)
    except OSError as exc:
        raise UsageError(f"cannot start ncu: {exc.strerror or exc}", plan.profile[0]) from exc
    assert proc.stdout is not None
    pump = threading.Thread(target=_pump, args=(proc.stdout, stream, early), daemon=True)
    pump.start()
    position, partial = 0, ""
    lines: list[str] = []
    try:
        while True:
            finished = proc.poll() is not None
            position, partial, new = _follow(log, position, partial)
            for line in new:
                lines.append(line)
                before = len(scan.passes)
                scan.add(line)
                if len(scan.passes) > before:
                    progress.launch(*scan.passes[-1])
            if finished:
                break
            time.sleep(_POLL_S)
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise
    pump.join(timeout=10)
    progress.done()
    if partial:
        lines.append(partial)
    full = ncu_log.scan([*early, *lines])
    return full, early, proc.returncode


def _import(plan: CapturePlan, ncu: str, report: str, out: Path) -> str:
    cmd = list(plan.import_command(ncu, report))
    proc = subprocess.run(cmd, capture_output=True, timeout=3600)
    text = proc.stdout.decode("utf-8", "replace")
    scan = ncu_log.scan(proc.stderr.decode("utf-8", "replace").splitlines())
    if proc.returncode != 0 or scan.errors or '"Kernel Name"' not in text:
        detail = "; ".join(ncu_log.describe_error(e) for e in scan.errors) or (
            f"exit code {proc.returncode}"
        )
        raise CaptureError(f"ncu --import of the report failed: {detail}", out)
    return text


def dry_run(options: CaptureOptions) -> CapturePlan:
    """The plan with placeholders for the files a run would make."""
    out = options.output
    return build_plan(options, f"{out}.tmp", f"{out}.log")


def remove_capture(output: str) -> None:
    """An earlier run's capture at `output` with its log, metadata and report: regular files
    only. A symbolic link or a FIFO among them is refused first (UsageError), so nothing is
    removed and nothing is written through it."""
    from perfgate.common.fileio import check_outputs

    check_outputs(_labelled(Path(output), "an earlier capture"), [])
    for old in _outputs(Path(output)):
        remove_stale(old)


def link_diagnosis(gate_output: str, diagnosis_output: str) -> None:
    """The gate capture's sidecar names its diagnosis capture (`diagnosis`, a file name beside
    it), so that `check -c GATE.csv` merges it as `-c GATE.diagnosis.csv` would."""
    meta = Path(f"{gate_output}.meta.json")
    data = json.loads(meta.read_text("utf-8"))
    data["diagnosis"] = Path(diagnosis_output).name
    write_text_atomic(meta, json.dumps(data, indent=1) + "\n")
