"""Options of the whole command line: --debug anywhere, -q, colour and NO_COLOR, the metrics
table, counts that agree with their number."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.cli.parsing import hoist_global_options
from perfgate.metrics.catalog import role_of
from perfgate.reports.colour import paint, use_colour
from perfgate.reports.format import counted
from tests.conftest import ROOT, data

ZOO = str(ROOT / "baselines" / "h100" / "zoo.yaml")
BAD = str(data("zoo-bad-short-run1.csv"))


def perfgate(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    for name in ("NO_COLOR", "FORCE_COLOR", "GITHUB_ACTIONS"):
        if name not in env:
            full.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT,
        env=full,
    )  # fmt: skip


def test_debug_works_after_the_subcommand_too() -> None:
    before = perfgate("--debug", "check", "-b", ZOO, "-c", "no-such.csv")
    after = perfgate("check", "-b", ZOO, "-c", "no-such.csv", "--debug")
    plain = perfgate("check", "-b", ZOO, "-c", "no-such.csv")
    assert before.returncode == after.returncode == plain.returncode == 2
    assert "Traceback" in before.stderr and "Traceback" in after.stderr
    assert "Traceback" not in plain.stderr
    assert plain.stderr.strip() == "perfgate: error: no-such.csv: no such file"


def test_global_options_after_a_lone_dashdash_belong_to_the_program() -> None:
    args = ["capture", "-q", "--color", "never", "--", "./app", "--debug", "-q"]
    assert hoist_global_options(args) == [
        "-q", "--color", "never", "capture", "--", "./app", "--debug", "-q",
    ]  # fmt: skip
    assert hoist_global_options(["check", "--color=always", "-b", "x"]) == [
        "--color=always", "check", "-b", "x",
    ]  # fmt: skip


def test_quiet_prints_the_status_line_only() -> None:
    loud = perfgate("check", "-b", ZOO, "-c", BAD)
    quiet = perfgate("check", "-b", ZOO, "-c", BAD, "-q")
    assert loud.returncode == quiet.returncode == 1
    assert len(loud.stdout.splitlines()) > 8
    assert quiet.stdout.splitlines() == loud.stdout.splitlines()[:1]
    assert quiet.stdout.startswith("perfgate check FAILED: 8 regressed")


def test_colour_only_where_asked_and_never_with_no_color() -> None:
    assert use_colour("auto", {}, is_terminal=True)
    assert not use_colour("auto", {}, is_terminal=False)
    assert not use_colour("auto", {"NO_COLOR": "1"}, is_terminal=True)
    assert use_colour("auto", {"NO_COLOR": ""}, is_terminal=True)  # empty: not set
    assert not use_colour("auto", {"TERM": "dumb"}, is_terminal=True)
    assert use_colour("auto", {"FORCE_COLOR": "1"}, is_terminal=False)
    assert not use_colour("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, is_terminal=False)
    assert use_colour("always", {"NO_COLOR": "1"}, is_terminal=False)  # an explicit option wins
    assert not use_colour("never", {"FORCE_COLOR": "1"}, is_terminal=True)
    # A pipe is not a terminal: no escape codes, however FORCE_COLOR is set, with NO_COLOR.
    piped = perfgate("check", "-b", ZOO, "-c", BAD, NO_COLOR="1", FORCE_COLOR="1")
    assert "\x1b[" not in piped.stdout
    forced = perfgate("check", "-b", ZOO, "-c", BAD, FORCE_COLOR="1")
    assert forced.stdout.startswith("perfgate check \x1b[1;31mFAILED\x1b[0m: 8 regressed")
    assert "  \x1b[1;31mREGRESSED\x1b[0m   zoo_" in forced.stdout
    never = perfgate("check", "-b", ZOO, "-c", BAD, "--no-color", FORCE_COLOR="1")
    assert "\x1b[" not in never.stdout
    # Colour is a last pass over the text: take the escapes out and it is the plain report.
    plain = perfgate("check", "-b", ZOO, "-c", BAD)
    assert (
        forced.stdout.replace("\x1b[1;31m", "")
        .replace("\x1b[0m", "")
        .replace("\x1b[1;32m", "")
        .replace("\x1b[33m", "")
        == plain.stdout
    )
    assert (
        paint("perfgate check PASSED: 1 passed")
        == "perfgate check \x1b[1;32mPASSED\x1b[0m: 1 passed"
    )


def test_machine_formats_are_never_coloured() -> None:
    proc = perfgate("check", "-b", ZOO, "-c", BAD, "--format", "json", "--color", "always")
    assert proc.returncode == 1 and "\x1b[" not in proc.stdout


def test_metrics_refuses_a_compute_capability_that_is_not_one() -> None:
    for wrong in ("foo", "9", "9.0.1", "sm_90", ""):
        proc = perfgate("metrics", "--cc", wrong)
        assert proc.returncode == 2, wrong
        assert "is not a compute capability" in proc.stderr
    assert perfgate("metrics", "--cc", "8.0", "--ncu").returncode == 0


def test_metrics_table_has_a_header_and_aligned_columns() -> None:
    proc = perfgate("metrics")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    header = lines[0]
    assert header.split() == ["METRIC", "ROLE", "NOISE", "GATED", "DEFAULT", "BOUND", "WHAT"]
    starts = [header.index(word) for word in ("ROLE", "NOISE", "GATED", "DEFAULT BOUND", "WHAT")]
    rows = [line for line in lines[1:] if not line.lstrip().startswith("from: ")]
    assert len(rows) >= 20
    for row in rows:
        # Every column starts where its heading does, after at least two spaces.
        for start in starts:
            assert row[start - 2 : start] == "  " and row[start] != " ", (row, start)
        # The role shown is the catalog's (issue 21: primary gates, evidence explains).
        name, role = row.split()[:2]
        assert role == role_of(name.replace("<reason>", "any")).value, row
    sources = [line for line in lines[1:] if line.lstrip().startswith("from: ")]
    assert len(sources) == len(rows)
    assert all(line.index("from: ") == starts[0] for line in sources)


@pytest.mark.parametrize(("n", "expected"), [(0, "0 kernels"), (1, "1 kernel"), (2, "2 kernels")])
def test_counts_agree_with_their_number(n: int, expected: str) -> None:
    assert counted(n, "kernel") == expected


def test_record_and_validate_say_one_kernel(tmp_path: Path) -> None:
    out = tmp_path / "one.yaml"
    proc = perfgate(
        "baseline", "record", "-c", BAD, "-o", str(out), "-k", "^zoo_registers", "-m",
        "registers_per_thread",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {out}: 1 kernel, 1 metric"
    assert perfgate("baseline", "validate", str(out)).stdout.strip() == f"ok {out}: 1 kernel"
    assert perfgate("-q", "baseline", "validate", str(out)).stdout == ""
