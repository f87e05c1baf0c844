"""Hostile and broken input, through the command line in a subprocess with a time and memory
limit: a clear one-line error with its exit code, nothing the user had destroyed, no stale
report, no temporary file left behind (docs/limits.md). The small hostile files are in
tests/corpus; the large ones are made here, at test time."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfgate.common import fileio, patterns
from perfgate.common.errors import UsageError
from perfgate.reports.escape import log_line, log_text, no_mentions, one_line
from perfgate.reports.markup import cell
from tests.conftest import DATA, ROOT

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
CAPTURE = DATA / "zoo-good-short-run1.csv"
MEMORY = 2 * 1024**3  # address space, not resident memory: pandas and numpy reserve much


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def perfgate(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=timeout, preexec_fn=_limits,
    )  # fmt: skip


def _one_error(proc: subprocess.CompletedProcess[str], path: object, pattern: str) -> None:
    assert proc.returncode == 2, proc.stderr + proc.stdout[-500:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perfgate: error: {path}"), proc.stderr
    assert pattern in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------- atomic writes

# The writer pauses once the content is written and synced but before it is named (fsync is
# the last step before that), so a test can signal it in that window. Without O_TMPFILE it
# takes the named-temporary-file path.
_WRITER = """
import os, sys, time
from perfgate.common.fileio import write_text_atomic

synced = os.fsync
def fsync_then_pause(fd):
    synced(fd)
    os.write(2, b"test pause before rename\\n")
    time.sleep(30)
os.fsync = fsync_then_pause
if sys.argv[2] == "no-tmpfile" and hasattr(os, "O_TMPFILE"):
    del os.O_TMPFILE
write_text_atomic(sys.argv[1], "new\\n" * 100000)
"""


def _paused_writer(target: Path, tmpfile: bool = True) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target), "tmpfile" if tmpfile else "no-tmpfile"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
        # A shell's background job inherits SIGINT ignored, and Python keeps it so: give the
        # writer the default, as a user's terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert proc.stderr is not None
    assert "test pause before rename" in proc.stderr.readline()
    return proc


def test_a_write_killed_with_sigkill_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old\n")
    proc = _paused_writer(target)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(25) == -signal.SIGKILL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    assert target.read_text() == "old\n"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_without_o_tmpfile_a_terminated_write_cleans_up(tmp_path: Path, sig: int) -> None:
    target = tmp_path / "report.json"
    target.write_text("old\n")
    proc = _paused_writer(target, tmpfile=False)
    # The named temporary file exists while the writer waits: this is the other path.
    assert any(p.name.startswith(".report.json.") for p in tmp_path.iterdir())
    proc.send_signal(sig)
    assert proc.wait(25) != 0  # before the 30 s pause ends: the signal did it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    assert target.read_text() == "old\n"


def test_a_complete_write_replaces_the_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "b.yaml"
    target.write_text("old\n")
    target.chmod(0o640)
    fileio.write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n" and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.yaml"]


def test_a_symlink_is_never_written_through_nor_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.xml"
    real.write_text("old")
    link = tmp_path / "link.xml"
    link.symlink_to(real.name)
    with pytest.raises(UsageError, match=r"is a symbolic link \(to real.xml\)"):
        fileio.write_text_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == "real.xml"
    assert real.read_text() == "old"


def test_fifos_devices_and_folders_are_never_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target, kind in (
        (fifo, "a FIFO"),
        (Path("/dev/null"), "a device"),
        (tmp_path, "a directory"),
    ):
        with pytest.raises(UsageError, match=f"is {kind}"):
            fileio.write_text_atomic(target, "x")
    assert fifo.exists() and not fifo.is_file()
    proc = perfgate("check", "-b", str(ZOO), "-c", str(CAPTURE), "--json", str(fifo), timeout=30)
    _one_error(proc, fifo, "is a FIFO (named pipe); perfgate writes only regular files")


# ------------------------------------------------------------------- outputs onto inputs


def test_record_onto_its_capture_is_refused(tmp_path: Path) -> None:
    capture = tmp_path / "cap.csv"
    capture.write_bytes(CAPTURE.read_bytes())
    proc = perfgate("baseline", "record", "-c", str(capture), "-o", str(capture))
    _one_error(proc, capture, "is also an input: perfgate would replace it")
    assert capture.read_bytes() == CAPTURE.read_bytes()


def test_a_report_onto_an_input_is_refused_and_the_other_reports_say_so(tmp_path: Path) -> None:
    baseline = tmp_path / "b.yaml"
    baseline.write_text(ZOO.read_text())
    hard = tmp_path / "hard-link.yaml"
    os.link(baseline, hard)
    stale = tmp_path / "result.json"
    stale.write_text('{"status": "passed"}')
    for output in (baseline, hard):
        proc = perfgate(
            "check", "-b", str(baseline), "-c", str(CAPTURE), "--junit", str(output),
            "--json", str(stale),
        )  # fmt: skip
        _one_error(proc, output, "is also an input")
        assert baseline.read_text() == ZOO.read_text()
        assert json.loads(stale.read_text())["status"] == "error"


def _check_env(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "perfgate", "check", "--format", "github", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=timeout, preexec_fn=_limits,
        env={**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "", "GITHUB_OUTPUT": "", **env},
    )  # fmt: skip


def _baseline_folder_and_link(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A --baseline folder holding the zoo baseline, and a symbolic link to that file."""
    folder = tmp_path / "baselines"
    folder.mkdir()
    baseline = folder / "h100.yaml"
    baseline.write_text(ZOO.read_text())
    link = tmp_path / "link.yaml"
    link.symlink_to(baseline)
    return folder, baseline, link


@pytest.mark.parametrize("option", ["--json", "--junit", "--markdown", "--pr-comment"])
def test_a_report_onto_a_baseline_of_a_directory_is_refused(tmp_path: Path, option: str) -> None:
    folder, baseline, link = _baseline_folder_and_link(tmp_path)
    for output in (baseline, link):
        proc = perfgate("check", "-b", str(folder), "-c", str(CAPTURE), option, str(output))
        _one_error(proc, output, f"{option} is also an input")
        assert output == baseline or f"({baseline})" in proc.stderr
        assert baseline.read_text() == ZOO.read_text()


def test_a_report_onto_a_capture_sidecar_is_refused(tmp_path: Path) -> None:
    capture = tmp_path / "cap.csv"
    capture.write_bytes(CAPTURE.read_bytes())
    sidecar = tmp_path / "cap.csv.meta.json"
    sidecar.write_text("{}")
    proc = perfgate("check", "-b", str(ZOO), "-c", str(capture), "--json", str(sidecar))
    _one_error(proc, sidecar, "--json is also an input")
    assert sidecar.read_text() == "{}"


def test_stall_charts_that_could_replace_an_input_are_refused(tmp_path: Path) -> None:
    chart = tmp_path / "report.1.kernel.svg"
    chart.write_text("<svg/>")
    baseline = tmp_path / "b.yaml"
    baseline.write_text(ZOO.read_text())
    proc = perfgate(
        "check", "-b", str(baseline), "-b", str(chart), "-c", str(CAPTURE),
        "--markdown", str(tmp_path / "report.md"),
    )  # fmt: skip
    _one_error(proc, tmp_path / "report.md", "stall charts")
    assert chart.read_text() == "<svg/>"


@pytest.mark.parametrize("variable", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"])
def test_github_step_files_onto_an_input_are_refused(tmp_path: Path, variable: str) -> None:
    folder, baseline, link = _baseline_folder_and_link(tmp_path)
    for target in (baseline, link):
        proc = _check_env("-b", str(folder), "-c", str(CAPTURE), env={variable: str(target)})
        _one_error(proc, target, f"${variable} is also an input")
        assert target == baseline or f"({baseline})" in proc.stderr
        assert baseline.read_text() == ZOO.read_text()
    capture = tmp_path / "cap.csv"
    capture.write_bytes(CAPTURE.read_bytes())
    proc = _check_env("-b", str(ZOO), "-c", str(capture), env={variable: str(capture)})
    _one_error(proc, capture, f"${variable} is also an input")
    assert capture.read_bytes() == CAPTURE.read_bytes()


@pytest.mark.parametrize("variable", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"])
def test_a_github_step_file_that_is_a_fifo_is_skipped_not_blocked_on(tmp_path: Path, variable: str) -> None:  # fmt: skip
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    report = tmp_path / "r.json"
    proc = _check_env(
        "-b", str(ZOO), "-c", str(CAPTURE), "--json", str(report),
        env={variable: str(fifo)}, timeout=30,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert f"${variable} ({fifo}) is a FIFO (named pipe): not written" in proc.stderr
    assert report.exists() and "Traceback" not in proc.stderr


def test_appending_to_a_fifo_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert fileio.append_regular(fifo, "x") is False
    plain = tmp_path / "plain"
    assert fileio.append_regular(plain, "a") and fileio.append_regular(plain, "b")
    assert plain.read_text() == "ab"


def test_two_reports_onto_one_file_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.xml"
    proc = perfgate("check", "-b", str(ZOO), "-c", str(CAPTURE), "--junit", str(out), "--json", str(out))  # fmt: skip
    _one_error(proc, out, "is also another output")


# ----------------------------------------------------------------- stale reports after a bug


def test_an_internal_error_leaves_no_stale_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from perfgate import cli
    from perfgate.usecases import check_command

    paths = {name: tmp_path / f"r.{name}" for name in ("junit", "json", "markdown")}
    for p in paths.values():
        p.write_text("passed (an earlier run)")

    def boom(request: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(check_command, "run_check", boom)
    args = ["check", "-b", str(ZOO), "-c", str(CAPTURE)]
    for name, p in paths.items():
        args += [f"--{name}", str(p)]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 3
    assert json.loads(paths["json"].read_text())["problems"] == [
        "internal error: RuntimeError: a bug"
    ]
    assert all("earlier run" not in p.read_text() for p in paths.values())

    # When the reporters are what fails, the files are removed instead.
    def broken(*args: object, **kwargs: object) -> str:
        raise ValueError("reporter bug")

    from perfgate.reports import json_report

    monkeypatch.setattr(json_report, "render", broken)
    for p in paths.values():
        p.write_text("passed (an earlier run)")
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 3
    assert not any(p.exists() for p in paths.values())


def test_a_report_that_cannot_be_written_leaves_no_stale_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The check passes but one report file cannot be written (disk full, say): exit 2, and
    neither an earlier run's report nor this run's "passed" is left beside the error."""
    from perfgate import cli
    from perfgate.usecases import outputs

    paths = {name: tmp_path / f"r.{name}" for name in ("junit", "json", "markdown")}
    real = outputs.write_text_atomic

    def full_disk(path: object, text: str) -> None:
        if str(path) == str(paths["junit"]):
            raise UsageError("cannot write: No space left on device", str(path))
        real(path, text)  # type: ignore[arg-type]

    monkeypatch.setattr(outputs, "write_text_atomic", full_disk)
    args = ["check", "-b", str(ZOO), "-c", str(CAPTURE)]
    for name, p in paths.items():
        args += [f"--{name}", str(p)]
    for bad in (None, "missing.csv"):  # the check passes / the check fails on its input
        for p in paths.values():
            p.write_text("passed (an earlier run)")
        result = CliRunner().invoke(cli.main, args if bad is None else [*args, "-c", str(tmp_path / bad)])  # fmt: skip
        assert result.exit_code == 2, result.output
        assert "No space left on device" in result.output
        assert not paths["junit"].exists()  # the earlier run's is removed
        assert json.loads(paths["json"].read_text())["status"] == "error"
        assert "No space left on device" in paths["markdown"].read_text()


def test_a_problem_report_never_lands_on_a_second_input(tmp_path: Path) -> None:
    """--junit onto the baseline is refused; --json onto the capture must be too, not written."""
    baseline = tmp_path / "b.yaml"
    baseline.write_text(ZOO.read_text())
    capture = tmp_path / "cap.csv"
    capture.write_bytes(CAPTURE.read_bytes())
    proc = perfgate("check", "-b", str(baseline), "-c", str(capture), "--junit", str(baseline), "--json", str(capture))  # fmt: skip
    assert proc.returncode == 2 and "is also an input" in proc.stderr
    assert capture.read_bytes() == CAPTURE.read_bytes() and baseline.read_text() == ZOO.read_text()


# --------------------------------------------------------------------- unbounded reading


def test_dev_zero_and_fifos_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "cap.fifo"
    os.mkfifo(fifo)
    _one_error(perfgate("check", "-b", str(ZOO), "-c", "/dev/zero", timeout=30), "/dev/zero", "not a regular file")  # fmt: skip
    _one_error(perfgate("check", "-b", str(ZOO), "-c", str(fifo), timeout=30), fifo, "is a FIFO")
    _one_error(perfgate("baseline", "validate", "/dev/zero", timeout=30), "/dev/zero", "not a regular file")  # fmt: skip
    _one_error(perfgate("baseline", "validate", str(fifo), timeout=30), fifo, "not a regular file")


def test_a_gigabyte_line_in_a_megabyte_of_gzip_is_refused_in_bounded_memory(tmp_path: Path) -> None:  # fmt: skip
    path = tmp_path / "bomb.csv.gz"
    head = "".join(CAPTURE.read_text().splitlines(keepends=True)[:7]).encode()
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"a" * (1 << 20)
    with path.open("wb") as fh:
        fh.write(z.compress(head))
        for _ in range(1024):
            fh.write(z.compress(chunk))
        fh.write(z.compress(b"\n") + z.flush())
    assert path.stat().st_size < 2 * 1024 * 1024
    start = time.perf_counter()
    proc = perfgate("check", "-b", str(ZOO), "-c", str(path))
    _one_error(proc, path, "line 8 is longer than 16,777,216 bytes")
    assert time.perf_counter() - start < 30


def test_a_capture_over_the_byte_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from perfgate.common.errors import CaptureError
    from perfgate.ingest import read_capture
    from perfgate.ingest.raw_limits import MAX_BYTES_ENV

    monkeypatch.setenv(MAX_BYTES_ENV, "50000")
    with pytest.raises(CaptureError, match="holds more than 50,000 bytes"):
        read_capture(CAPTURE)
    monkeypatch.setenv(MAX_BYTES_ENV, str(CAPTURE.stat().st_size))
    assert read_capture(CAPTURE).launches


def test_a_capture_over_the_launch_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfgate.common.errors import CaptureError
    from perfgate.ingest import read_capture
    from perfgate.ingest.raw_limits import MAX_LAUNCHES_ENV

    monkeypatch.setenv(MAX_LAUNCHES_ENV, "26")
    with pytest.raises(CaptureError, match="holds more than 26 launches"):
        read_capture(CAPTURE)  # 27 launches
    monkeypatch.setenv(MAX_LAUNCHES_ENV, "27")
    assert len(read_capture(CAPTURE).launches) == 27


def _wide(path: Path, extra: int) -> None:
    lines = CAPTURE.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    with path.open("w") as fh:
        fh.writelines(lines[:at])
        for i, line in enumerate(lines[at:]):
            value = "extra__c{}" if i == 0 else ("" if i == 1 else "1")
            fh.write(line.rstrip("\n") + "".join(f',"{value.format(j)}"' for j in range(extra)) + "\n")  # fmt: skip


def test_many_columns_cost_linear_time_and_too_many_are_refused(tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    _wide(wide, 45_000)  # quadratic column lookups took about a minute on this one
    start = time.perf_counter()
    proc = perfgate("check", "-b", str(ZOO), "-c", str(wide))
    assert proc.returncode == 0, proc.stderr
    assert time.perf_counter() - start < 20
    _wide(wide, 60_000)
    _one_error(perfgate("check", "-b", str(ZOO), "-c", str(wide)), wide, "perfgate reads at most 50,000")  # fmt: skip


def test_an_overlong_kernel_name_is_refused(tmp_path: Path) -> None:
    lines = CAPTURE.read_text().splitlines(keepends=True)
    fields = lines[7].split('","')
    fields[4] = "z" * 40_000 + fields[4]
    lines[7] = '","'.join(fields)
    path = tmp_path / "long-name.csv"
    path.write_text("".join(lines))
    _one_error(perfgate("check", "-b", str(ZOO), "-c", str(path)), path, "a kernel name of 40,")


# --------------------------------------------------------------------------- regexes


@pytest.mark.parametrize(
    "pattern",
    [
        "(a+)+$",
        "(a*)*b",
        "(a|ab)*c",
        "(x+x+)+y",
        r"(zoo)_\1",
        "((a+)b?)+",
        "(?:a|a)+$",
        "([ab]?(a)?)+x",
        "(([ab]+?a\\d+?|[ab]*?){1,3}){1,3}b!",
        r"(\w+_)+$",
        "x" * 1001,
    ],
)
def test_patterns_that_backtrack_exponentially_are_refused(pattern: str) -> None:
    with pytest.raises(patterns.UnsafePattern):
        patterns.compile_pattern(pattern)


@pytest.mark.parametrize(
    "pattern",
    ["zoo_(coalescing|atomics)", r"^void cutlass::Kernel<.*>$", "gemm.*128x128", "sm90_xmma_.*_tn",
     "(sm80|sm90)_.*", r"ampere_sgemm_\d+x\d+_nn", "a{1,3}(b{1,3}){1,3}", "(ab)+c", r"(_\d+){1,3}", r"sm\d+_xmma_gemm_\w+_\d+x\d+_\w+"],
)  # fmt: skip
def test_ordinary_kernel_patterns_are_accepted(pattern: str) -> None:
    assert patterns.compile_pattern(pattern).pattern == pattern


def test_a_search_that_backtracks_polynomially_ends_in_time(monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(patterns, "SEARCH_SECONDS", 0.3)
    patterns.reset_budget()
    pattern = "a.*a.*a.*a.*a.*b"  # 5 repeats: the static check allows it
    start = time.perf_counter()
    with pytest.raises(patterns.PatternTimeout, match=r"took more than 0\.3 s in all"):
        patterns.search(pattern, "a" * 3000)
    assert time.perf_counter() - start < 2
    # The budget is one for every pattern of the command (issue 23: it was one per pattern).
    with pytest.raises(patterns.PatternTimeout):
        patterns.search("zoo_a", "zoo_atomics")
    patterns.reset_budget()  # the next command
    assert patterns.search("zoo_a", "zoo_atomics")


def test_kernel_option_with_a_catastrophic_regex_is_a_usage_error() -> None:
    proc = perfgate("explain", "-c", str(CAPTURE), "-k", "(a+)+$", timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.startswith("perfgate: error: --kernel '(a+)+$' can take exponential time")


def _hostile_benchmark():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import hostile

    return hostile


def test_show_kernel_option_with_a_catastrophic_regex_ends_at_once(tmp_path: Path) -> None:
    # Issue 23: `baseline show -k` searched with re.search, unchecked and unbounded: 25 s over
    # a kernel named 30 letters 'a' and a '!'. Now refused before any search.
    hostile = _hostile_benchmark()
    path = hostile.baseline_named(tmp_path / "b.yaml", hostile.EXPONENTIAL_NAME)
    start = time.perf_counter()
    proc = perfgate("baseline", "show", str(path), "-k", hostile.CATASTROPHIC, timeout=60)
    assert time.perf_counter() - start < 10
    assert proc.returncode == 2, proc.stdout[-300:]
    assert proc.stderr.startswith("perfgate: error: --kernel '(a+)+$' can take exponential time")
    assert len(proc.stderr.splitlines()) == 1


def test_many_accepted_patterns_share_one_time_budget(tmp_path: Path) -> None:
    # Issue 23: 60 accepted patterns against one long name took 49 s, each under its own 2 s
    # budget. The budget is one for all the user's patterns of a command.
    hostile = _hostile_benchmark()
    path = hostile.baseline_named(tmp_path / "b.yaml", hostile.POLYNOMIAL_NAME)
    args = [a for p in hostile.polynomial_patterns() for a in ("-k", p)]
    start = time.perf_counter()
    proc = perfgate("baseline", "show", str(path), *args, timeout=120)
    assert time.perf_counter() - start < 10
    assert proc.returncode == 2, proc.stdout[-300:]
    assert "took more than 2 s in all" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_accept_kernel_option_is_checked_like_the_others() -> None:
    from perfgate.baseline.load import load_baseline
    from perfgate.ingest.launches import Capture
    from perfgate.lifecycle.plan import plan_accept

    with pytest.raises(UsageError, match=r"--kernel '\(a\+\)\+\$' can take exponential"):
        plan_accept(load_baseline(ZOO), Capture((), (), frozenset()), ("(a+)+$",))


# ------------------------------------------------------------------------- report text


def test_text_output_cannot_start_a_workflow_command() -> None:
    assert log_line("::error::pwned") == "\\x3a:error::pwned"
    assert log_line("   ::set-output name=x::y").lstrip().startswith("\\x3a")
    text = log_text(["REGRESSED  k\n::error::pwned", "ok\x1b[2J", "line\u2028::warning::x"])
    assert not any(line.strip().startswith("::") for line in text.splitlines())
    assert "\x1b" not in text and "\u2028" not in text and text.count("\n") == 3
    assert one_line("tab\tstays") == "tab\tstays"


def test_explain_escapes_a_kernel_name_that_is_a_workflow_command(tmp_path: Path) -> None:
    lines = CAPTURE.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    body = [
        line.replace('"zoo_coalescing(', '"::error title=pwned::zoo_coalescing(') for line in lines
    ]
    path = tmp_path / "names.csv"
    path.write_text("".join(body[: at + 2] + body[at + 2 :]))
    proc = perfgate("explain", "-c", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "error title=pwned" in proc.stdout
    assert not any(line.strip().startswith("::") for line in proc.stdout.splitlines())


def test_markdown_mentions_no_one_and_links_nowhere() -> None:
    text = cell("==WARNING== ask @octocat, see https://evil.example and www.evil.example")
    assert "@octocat" not in text and "https://" not in text and "www.evil" not in text
    # Invisible: with the word joiners removed the text is what ncu wrote.
    assert (
        text.replace("\u2060", "")
        == "==WARNING== ask @octocat, see https://evil.example and www.evil.example"
    )
    assert no_mentions("no mention here: a @ b") == "no mention here: a @ b"


# ---------------------------------------------------------------------- nothing judged


def test_a_check_where_every_comparison_is_skipped_does_not_pass(tmp_path: Path) -> None:
    """A capture from a GPU without DRAM counters (CC 12.1) against a baseline gating DRAM
    bytes only: nothing can be judged, which is unusable input (exit 2), never a pass."""
    lines = CAPTURE.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    rows = [line.replace('","9.0","', '","12.1","') for line in lines[at + 2 :]]
    assert all('"12.1"' in row for row in rows)
    capture = tmp_path / "cc121.csv"
    capture.write_text("".join(lines[: at + 2] + rows))
    baseline = tmp_path / "dram.yaml"
    baseline.write_text(
        "format_version: 2\nkernels:\n- id: zoo_coalescing\n  match: {function: zoo_coalescing}\n"
        "  metrics:\n    dram_bytes: {value: 4200000}\n"
    )
    proc = perfgate("check", "-b", str(baseline), "-c", str(capture))
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout.startswith("perfgate check ERROR: 1 not judged")
    assert "NOT JUDGED, failing unless waived (--waive REASON): architecture" in proc.stdout
    # Waived by name, it is skipped, and a check where every kernel is skipped still judged
    # nothing: exit 2 all the same.
    waived = perfgate("check", "-b", str(baseline), "-c", str(capture), "--waive", "architecture")
    assert waived.returncode == 2, waived.stdout
    assert waived.stdout.startswith("perfgate check ERROR: 1 skipped")


def test_stall_reasons_from_a_baseline_cannot_leave_the_mermaid_fence() -> None:
    from perfgate.reports.markdown import _mermaid

    chart = _mermaid("k", {'x"]\n```\n@everyone': 50.0}, {"wait": 10.0})
    assert chart.count("```") == 2 and chart.endswith("```\n")
    assert "@everyone" not in chart and '"xeveryone baseline 50.0"' in chart


def test_log_lines_around_the_csv_are_kept_short(tmp_path: Path) -> None:
    """ncu's log lines are kept to find its errors and warnings; 10,000 of 16 MiB each would be
    160 GB, so each is cut to 4,096 characters."""
    from perfgate.ingest.raw_scan import scan

    path = tmp_path / "log.csv"
    path.write_text(
        ("==WARNING== " + "w" * 100_000 + "\n") * 3
        + CAPTURE.read_text()
        + "==PROF== "
        + "p" * 100_000
        + "\n"
    )
    layout = scan(lambda: path.open("rb"), str(path))
    kept = layout.log_before + layout.log_after
    assert len(kept) >= 4 and all(len(line) <= 4096 for line in kept)


# ------------------------------------------------------------- injection (issue 23, round 3)

# A newline and a workflow command, a bidi override and zero-width characters: what a hostile
# baseline id, sidecar field or kernel name holds.
HOSTILE_ID = "zoo_coalescing\u202e\n::error::pwned\u200b\ufeff"
_INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\ufeff"


def _no_raw_injection(text: str) -> None:
    assert not any(line.strip().startswith("::") for line in text.splitlines()), text[-2000:]
    raw = [f"U+{ord(ch):04X}" for ch in text if ch in _INVISIBLE or 0x80 <= ord(ch) < 0xA0]
    assert not raw, raw


def test_bidi_and_zero_width_characters_are_shown_escaped_everywhere() -> None:
    from perfgate.reports.svg import stall_chart

    for ch in _INVISIBLE + "\x85\u2028\x1b":
        assert one_line(f"a{ch}b") == f"a\\u{ord(ch):04x}b" or one_line(f"a{ch}b") == (
            f"a\\x{ord(ch):02x}b"
        )
    assert "\\u202e" in cell("a\u202eb") or "&#92;u202e" in cell("a\u202eb")
    _no_raw_injection(cell(HOSTILE_ID))
    ET = __import__("xml.etree.ElementTree", fromlist=["ElementTree"])
    for evil in (HOSTILE_ID, "id\x00\x01\x08\x0b\x0c\x1f\x7f<&>", "\ud800 lone"):
        svg = stall_chart(evil, {evil: 60.0, "wait": 40.0}, {evil: 70.0, "wait": 30.0})
        ET.fromstring(svg.encode("utf-8", "surrogatepass"))  # well-formed XML for any id
        _no_raw_injection(svg)


def _hostile_baseline(tmp_path: Path) -> Path:
    text = ZOO.read_text().replace("- id: zoo_coalescing\n", f"- id: {json.dumps(HOSTILE_ID)}\n", 1)
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    return path


def test_accept_and_update_summaries_escape_a_hostile_baseline_id(tmp_path: Path) -> None:
    baseline = _hostile_baseline(tmp_path)
    bad = DATA / "zoo-bad-short-run1.csv"
    for verb in ("accept", "update"):
        out = tmp_path / f"{verb}.yaml"
        proc = perfgate(
            "baseline", verb, "-b", str(baseline), "-c", str(bad), "--reason", "r", "--by",
            "me", "-o", str(out),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "zoo_coalescing\\u202e\\x0a::error::pwned\\u200b\\ufeff" in proc.stdout
        _no_raw_injection(proc.stdout + proc.stderr)


def test_check_reports_escape_a_hostile_kernel_name_in_text_markdown_and_junit(
    tmp_path: Path,
) -> None:
    baseline = _hostile_baseline(tmp_path)
    junit, markdown = tmp_path / "junit.xml", tmp_path / "summary.md"
    bad = DATA / "zoo-bad-short-run1.csv"
    proc = perfgate(
        "check", "-b", str(baseline), "-c", str(bad), "--junit", str(junit), "--markdown",
        str(markdown),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    _no_raw_injection(proc.stdout + proc.stderr)
    _no_raw_injection(markdown.read_text())
    _no_raw_injection(junit.read_text())
    for svg in tmp_path.rglob("*.svg"):
        __import__("xml.etree.ElementTree", fromlist=["x"]).fromstring(svg.read_bytes())


def test_every_console_line_goes_through_the_one_escaping_helper() -> None:
    """click.echo, print and writes to a stream in perfgate/ all go through
    perfgate.common.escape (cli.console's `say`) or write a reporter's document (its `show`)."""
    allowed = {
        # the one line-escaping helper, and the documents reporters escaped line by line
        ("cli/console.py", "click.echo(log_line(line), err=err)"),
        ("cli/console.py", "click.echo(document, nl=False, err=err, color=colour)"),
        ("cli/main.py", 'sys.stderr.write(log_line(str(exc.code)) + "\\n")'),
        ("ncu/runner.py", 'self.stream.write("\\r" + text[:150].ljust(len(self.shown)))'),
        ("ncu/runner.py", 'self.stream.write(text + "\\n")'),  # text = log_line(...)
        ("ncu/runner.py", 'self.stream.write("\\n")'),
        # the captured program's own output, passed through as the program wrote it
        ("ncu/runner.py", "sink.write(line)"),
        ("ncu/runner.py", 'stream.write(log_line(f"perfgate: note: {note}") + "\\n")'),
    }
    calls = re.compile(r"\b(click\.echo|click\.secho|print|\w+\.write)\(")
    found = set()
    for path in (ROOT / "perfgate").rglob("*.py"):
        for line in path.read_text().splitlines():
            code = line.strip()
            if calls.search(code) and not code.startswith("#") and "os.write(" not in code:
                found.add((path.relative_to(ROOT / "perfgate").as_posix(), code))
    assert found <= allowed, sorted(found - allowed)


@pytest.mark.parametrize(
    ("reason", "pattern"),
    [
        (b"bad \xff\xfe bytes", "--reason: not UTF-8 text"),
        ("nel\x85here".encode(), "--reason: a NEL (U+0085) character"),
        ("ls\u2028here".encode(), "--reason: a U+2028 character"),
        ("ps\u2029here".encode(), "--reason: a U+2029 character"),
    ],
)
def test_a_reason_that_would_not_round_trip_is_refused_before_anything_is_written(
    tmp_path: Path, reason: bytes, pattern: str
) -> None:
    good = tmp_path / "zoo.yaml"
    good.write_bytes(ZOO.read_bytes())
    before = good.read_bytes()
    for args in (
        ["baseline", "record", "-c", str(CAPTURE), "-o", str(good), "--overwrite"],
        ["baseline", "accept", "-b", str(good), "-c", str(CAPTURE), "--by", "me"],
        ["baseline", "update", "-b", str(good), "-c", str(CAPTURE), "--by", "me"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "perfgate", *args, "--reason", reason],
            capture_output=True, text=True, cwd=ROOT, timeout=60, preexec_fn=_limits,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and pattern in lines[0], proc.stderr
        assert good.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zoo.yaml"]


def test_a_nel_in_a_recorded_string_is_double_quoted_and_comes_back_as_it_was() -> None:
    import yaml

    from perfgate.baseline.dump import _Dumper

    doc = {"a": "x\x85y", "b": "p\u2028q\u2029r", "c": "plain"}
    text = yaml.dump(doc, Dumper=_Dumper, allow_unicode=True, width=4096)
    assert not any(ch in text for ch in "\x85\u2028\u2029")
    assert yaml.safe_load(text) == doc


@pytest.mark.parametrize("ch", ["\x85", "\u2028", "\u2029"])
def test_a_baseline_with_unicode_line_breaks_is_refused_by_every_command(
    tmp_path: Path, ch: str
) -> None:
    path = tmp_path / "breaks.yaml"
    path.write_text(ZOO.read_text().replace("\n", ch, 40), encoding="utf-8")
    before = path.read_bytes()
    for args in (
        ["baseline", "validate", str(path)],
        ["baseline", "accept", "-b", str(path), "-c", str(CAPTURE), "--reason", "r", "--by", "me"],
        ["baseline", "update", "-b", str(path), "-c", str(CAPTURE), "--by", "me"],
        ["check", "-b", str(path), "-c", str(CAPTURE)],
        ["baseline", "show", str(path)],
    ):
        proc = perfgate(*args)
        _one_error(proc, path, "a baseline breaks lines with \\n only")
        assert path.read_bytes() == before
