"""The command line as users and CI run it: a real process, real files, exit codes."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from perfgate import cli
from perfgate.reports import REPORTERS
from tests.conftest import ROOT, data

ZOO = str(ROOT / "baselines" / "h100" / "zoo.yaml")


def perfgate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=cwd or ROOT
    )


def test_pass_exits_0() -> None:
    proc = perfgate("check", "--baseline", ZOO, "--capture", str(data("zoo-good-short-run2.csv")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("perfgate check PASSED: 350 passed")


def test_regression_exits_1_and_writes_junit_and_markdown(tmp_path: Path) -> None:
    junit, md = tmp_path / "out" / "junit.xml", tmp_path / "summary.md"
    proc = perfgate("check", "--baseline", ZOO, "--capture", str(data("zoo-bad-short-run1.csv")),
                    "--junit", str(junit), "--markdown", str(md))  # fmt: skip
    assert proc.returncode == 1
    assert (
        "REGRESSED       zoo_registers  registers_per_thread: baseline 32 -> current 40 (+25.0%), bound +0 (exact)"
        in proc.stdout
    )
    root = ET.parse(junit).getroot()
    cases = list(root.iter("testcase"))
    assert len(cases) == 350
    failures = {
        (c.get("classname"), c.get("name")): c.find("failure")
        for c in cases
        if c.find("failure") is not None
    }
    f = failures[("zoo_registers", "registers_per_thread")]
    assert f.get("message") == "baseline 32 -> current 40 (+25.0%), bound +0 (exact)"
    assert f.get("type") == "regressed"
    suite = root.find("testsuite")
    regressed_lines = [
        line for line in proc.stdout.splitlines() if line.lstrip().startswith("REGRESSED")
    ]
    # The three renderings of one result agree: stdout lines, <failure>s and the suite's count.
    assert (
        suite is not None
        and int(suite.get("failures", "0")) == len(failures) == len(regressed_lines) > 8
    )
    text = md.read_text()
    first_row = next(line for line in text.splitlines() if line.startswith("| <code>"))
    assert "regressed" in first_row  # regressions first
    assert text.index("❌ regressed") < text.index("passing comparisons")


def test_input_errors_exit_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("format_version: 1\nkernels: [\n")
    cases = [
        ("check", "--baseline", ZOO, "--capture", str(empty)),
        ("check", "--baseline", ZOO, "--capture", str(data("app-error-code.csv"))),
        ("check", "--baseline", ZOO, "--capture", str(data("no-kernels-profiled.txt"))),
        ("check", "--baseline", str(bad_yaml), "--capture", str(data("zoo-good-short-run1.csv"))),
        (
            "check",
            "--baseline",
            str(tmp_path / "missing.yaml"),
            "--capture",
            str(data("zoo-good-short-run1.csv")),
        ),
        (
            "baseline",
            "record",
            "--capture",
            str(data("zoo-good-short-run1.csv")),
            "-o",
            str(tmp_path / "x.yaml"),
            "--metric",
            "nope",
        ),
    ]
    for args in cases:
        proc = perfgate(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("perfgate: error: "), proc.stderr
        assert "Traceback" not in proc.stderr


def test_usage_errors_exit_2() -> None:
    proc = perfgate("check", "--baseline", ZOO)
    assert proc.returncode == 2 and "Missing option '--capture'" in proc.stderr


def test_every_schema_problem_is_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(
        "format_version: 1\nkernels:\n- id: k\n  match: {}\n  metrics: {duration: {value: x}, y: {}}\n"
    )
    proc = perfgate("baseline", "validate", str(path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) >= 2
    assert all(line.startswith(f"perfgate: error: {path}::$.kernels[0]") for line in lines)


def test_record_writes_a_baseline_that_checks_clean(tmp_path: Path) -> None:
    out = tmp_path / "base.yaml"
    proc = perfgate("baseline", "record", "-c", str(data("torch-short-run1.csv")), "-c", str(data("torch-short-run2.csv")),
                    "-o", str(out), "--kernel", "softmax|reduce", "--metric", "registers_per_thread", "--metric", "dominant_stall")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {out}: 2 kernels, 4 metrics"
    check = perfgate(
        "check", "-b", str(out), "-c", str(data("torch-short-run3.csv")), "--no-new-kernels"
    )
    assert check.returncode == 0, check.stdout
    assert "new kernel" not in check.stdout


def test_record_refuses_a_metric_the_capture_cannot_give(tmp_path: Path) -> None:
    proc = perfgate(
        "baseline",
        "record",
        "-c",
        str(data("set-default.csv")),
        "-o",
        str(tmp_path / "b.yaml"),
        "--metric",
        "duration",
    )
    assert proc.returncode == 2
    assert "ncu needs: --metrics gpu__time_duration.sum" in proc.stderr
    assert not (tmp_path / "b.yaml").exists()


def test_formats_on_stdout_come_from_the_reporter_registry() -> None:
    assert set(cli.FORMATS) == set(REPORTERS)
    proc = perfgate(
        "check", "-b", ZOO, "-c", str(data("zoo-good-short-run1.csv")), "--format", "junit"
    )
    assert proc.returncode == 0 and proc.stdout.startswith("<?xml")


def test_metrics_command_prints_the_ncu_list() -> None:
    proc = perfgate("metrics", "--ncu")
    assert proc.returncode == 0
    assert proc.stdout.strip().split(",") == (ROOT / "tests/zoo/metrics.txt").read_text().split()
    listing = perfgate("metrics")
    assert "sectors_per_request_ld" in listing.stdout and "stall.<reason>" in listing.stdout


def test_version_and_help_are_fast_and_do_not_import_pandas() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from perfgate.cli import main; "
         "sys.argv=['perfgate','--help']\ntry: main()\nexcept SystemExit: pass\nprint('pandas' in sys.modules)"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.stdout.strip().endswith("False")
    assert perfgate("--version").stdout.strip() == "perfgate, version 0.1.0"


def test_internal_errors_exit_3_without_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import perfgate.gate

    def boom(request: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(perfgate.gate, "run_check", boom)
    result = CliRunner().invoke(
        cli.main, ["check", "-b", ZOO, "-c", str(data("zoo-good-short-run1.csv"))]
    )
    assert result.exit_code == 3
    assert (
        "internal error: RuntimeError: boom" in result.output and "Traceback" not in result.output
    )
