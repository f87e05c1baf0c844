"""The command line as users and CI run it: a real process, real files, exit codes."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from perfgate import __version__, cli
from perfgate.reports import REPORTERS
from tests.conftest import ROOT, data

ZOO = str(ROOT / "baselines" / "h100" / "zoo.yaml")


def perfgate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=cwd or ROOT
    )


def _kernels(path: str) -> int:
    import yaml

    return len(yaml.safe_load(Path(path).read_text())["kernels"])


def _status_and_warnings(stdout: str) -> tuple[str, list[str]]:
    lines = stdout.splitlines()
    return lines[0], [line for line in lines[1:] if not line.startswith("warning: ")]


def test_pass_exits_0() -> None:
    proc = perfgate("check", "--baseline", ZOO, "--capture", str(data("zoo-good-short-run2.csv")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status, rest = _status_and_warnings(proc.stdout)
    # Counted in kernels: every baselined kernel passed, and nothing else is said.
    n = _kernels(ZOO)
    assert n == 10
    assert status.startswith(f"perfgate check PASSED: {n} passed ({n} baselined kernels); ")
    # ... and the whole program's time, judged and within its bound.
    assert re.search(r"; program GPU time 1,541\.4 us -> 1,5\d\d\.\d us \([^)]*: pass;", status)
    assert rest == [] and proc.stderr == ""


def test_regression_exits_1_and_writes_junit_and_markdown(tmp_path: Path) -> None:
    junit, md = tmp_path / "out" / "junit.xml", tmp_path / "summary.md"
    proc = perfgate("check", "--baseline", ZOO, "--capture", str(data("zoo-bad-short-run1.csv")),
                    "--junit", str(junit), "--markdown", str(md))  # fmt: skip
    assert proc.returncode == 1
    assert re.match(
        r"perfgate check FAILED: 8 regressed with \d+ root causes?, 2 passed "
        r"\(10 baselined kernels\); program GPU time [^\n]*: regressed; [^\n]*\n",
        proc.stdout,
    )
    block = proc.stdout[proc.stdout.index("  REGRESSED   zoo_registers: ") :]
    block = block[: re.search(r"\n  \S|$", block[1:]).start() + 1]  # type: ignore[union-attr]
    assert block.count("\n") >= 2  # the evidence under the headline, up to the next kernel
    assert re.search(r"registers_per_thread:? (baseline )?32 -> (current )?40", block)
    root = ET.parse(junit).getroot()
    cases = list(root.iter("testcase"))
    # One testcase per kernel, and one for the whole program's GPU time.
    assert len(cases) == _kernels(ZOO) + 1
    failures = {
        (c.get("classname"), c.get("name")): c.find("failure")
        for c in cases
        if c.find("failure") is not None
    }
    f = failures[("perfgate.zoo", "zoo_registers")]
    assert f is not None and f.get("type") == "regressed"
    # The testcase's message is the sentence the console leads the kernel with.
    assert f"  REGRESSED   zoo_registers: {f.get('message')}\n" in proc.stdout
    suite = root.find("testsuite")
    regressed_lines = [line for line in proc.stdout.splitlines() if line.startswith("  REGRESSED ")]
    # The three renderings of one result agree: stdout lines, <failure>s and the suite's count.
    assert (
        suite is not None
        # ... and one more <failure>: the whole program's GPU time regressed too.
        and int(suite.get("failures", "0")) - 1 == len(failures) - 1 == len(regressed_lines) == 8
    )
    text = md.read_text()
    first_row = next(line for line in text.splitlines() if line.startswith("| <code>"))
    assert "regressed" in first_row  # regressions first
    assert text.index("❌ regressed") < text.index("kernels passed, new or skipped")


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
    assert all(
        re.match(rf"perfgate: error: {re.escape(str(path))}:\d+:\d+: \$\.kernels\[0\]", line)
        for line in lines
    ), lines


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
    status, rest = _status_and_warnings(check.stdout)
    # The whole program's time covers every launch: the six kernels left out are "new" to it.
    assert status.startswith(
        "perfgate check PASSED: 2 passed (2 baselined kernels); program GPU time "
    )
    assert "pass; new kernels" in status
    assert rest == []  # --no-new-kernels: the other six kernels of the capture go unmentioned


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
    assert cli.FORMATS == (
        "text", "markdown", "junit", "json", "github", "delta", "delta-markdown",
    )  # fmt: skip
    # --format's choices are the enum the use case matches exhaustively: one per reporter.
    assert tuple(REPORTERS) == cli.FORMATS
    for reporter in REPORTERS.values():  # each entry names a module's function(report)
        module = importlib.import_module(f"perfgate.reports.{reporter.module}")
        assert callable(getattr(module, reporter.function))
    # The CLI reads the names without importing the formatters: they load when one renders.
    proc = subprocess.run(
        [sys.executable, "-c", "import json, sys, perfgate.cli; "
         "print(json.dumps([m for m in sys.modules if m.startswith('perfgate.reports.')]))"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not {"text", "markdown", "junit", "json_report", "github", "delta"} & {
        m.rsplit(".", 1)[1] for m in json.loads(proc.stdout)
    }, proc.stdout
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
    assert perfgate("--version").stdout.strip() == f"perfgate, version {__version__}"


def test_internal_errors_exit_3_without_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import perfgate.usecases.check_command

    def boom(request: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(perfgate.usecases.check_command, "run_check", boom)
    result = CliRunner().invoke(
        cli.main, ["check", "-b", ZOO, "-c", str(data("zoo-good-short-run1.csv"))]
    )
    assert result.exit_code == 3
    assert (
        "internal error: RuntimeError: boom" in result.output and "Traceback" not in result.output
    )


def test_json_and_pr_comment_files(tmp_path: Path) -> None:
    import json

    out, comment = tmp_path / "result.json", tmp_path / "comment.md"
    proc = perfgate(
        "check",
        "-b",
        ZOO,
        "-c",
        str(data("zoo-bad-short-run2.csv")),
        "--json",
        str(out),
        "--pr-comment",
        str(comment),
    )
    assert proc.returncode == 1
    doc = json.loads(out.read_text())
    assert doc["exit_code"] == 1 and doc["results"][0]["baseline"] == ZOO
    assert comment.read_text().startswith("<!-- perfgate:pr-comment -->\n### ❌ perfgate: FAILED")


def _h200_copy(tmp_path: Path) -> Path:
    """The zoo baseline as if recorded on an H200: no H100 capture is of its GPU."""
    import yaml

    doc = yaml.safe_load(Path(ZOO).read_text())
    doc["fingerprint"]["gpu"] = "NVIDIA H200"
    h200 = tmp_path / "h200.yaml"
    h200.write_text(yaml.safe_dump(doc, sort_keys=False))
    return h200


def test_under_github_actions_annotations_and_step_summary(tmp_path: Path) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    env = {
        **__import__("os").environ,
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
    }

    def run(*baselines: str) -> subprocess.CompletedProcess[str]:
        args = [a for b in baselines for a in ("-b", b)]
        return subprocess.run(
            [sys.executable, "-m", "perfgate", "check", *args, "-c", str(data("zoo-bad-short-run1.csv"))],
            capture_output=True, text=True, cwd=ROOT, env=env,
        )  # fmt: skip

    proc = run(ZOO)
    assert proc.returncode == 1
    # Annotations go to stderr (GitHub's runner parses both streams); stdout stays the report.
    assert "::error" not in proc.stdout
    assert proc.stdout.startswith("perfgate check FAILED")
    # One ::error per failing kernel (8), not per failing metric; no notice under ten.
    lines = proc.stderr.splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    # ... and one for the whole program's time, which has no baseline entry to point at.
    assert "program GPU time regressed" in errors.pop(0)
    assert len(errors) == 8 and all(" regressed::" in line for line in errors)
    # Each points at the kernel's entry in the baseline, relative to the repository root.
    zoo_lines = Path(ZOO).read_text().splitlines()
    for error in errors:
        m = re.match(r"::error file=([^,]+),line=(\d+),title=perfgate%3A (\w+) regressed::", error)
        assert m is not None, error
        assert m.group(1) == "baselines/h100/zoo.yaml"
        assert zoo_lines[int(m.group(2)) - 1] == f"- id: {m.group(3)}"
    assert not any(line.startswith("::notice ") for line in lines)
    text = summary.read_text()
    assert text.startswith("earlier step\n### ❌ perfgate: FAILED")  # appended, not replaced
    assert "```mermaid" in text  # GitHub draws it; a relative SVG would not resolve there
    # With the H200 baseline beside it, its 10 kernels are missing too: 18 failing kernels,
    # of which GitHub is shown ten, worst first (regressions before missing kernels).
    many = run(ZOO, str(_h200_copy(tmp_path)))
    assert many.returncode == 1
    lines = many.stderr.splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == 10
    # The zoo's whole program first, then its 8 kernels, then room for one missing kernel.
    assert "program GPU time regressed" in errors[0]
    assert [" regressed::" in e for e in errors] == [True] * 9 + [False]
    assert all(" missing::" in e for e in errors[9:])
    assert (
        "::notice title=perfgate::9 more failing kernels; see the step summary or the JUnit report"
        in lines
    )
    plain = perfgate("check", "-b", ZOO, "-c", str(data("zoo-bad-short-run1.csv")), "--no-github")
    assert "::error" not in plain.stdout


def test_input_problems_still_reach_the_reports(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    junit_path, json_path = tmp_path / "j.xml", tmp_path / "r.json"
    proc = perfgate(
        "check", "-b", ZOO, "-c", str(empty), "--junit", str(junit_path), "--json", str(json_path)
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"perfgate: error: {empty}: the file is empty"
    error = ET.parse(junit_path).getroot().find(".//testcase/error")
    assert error is not None and error.get("message") == f"{empty}: the file is empty"
    assert __import__("json").loads(json_path.read_text())["status"] == "error"


def test_several_baselines_each_judge_their_own_gpu(tmp_path: Path) -> None:
    # A second GPU's baseline (the same file as if recorded on an H200) finds no capture of
    # its GPU among the H100 captures: every one of its kernels is missing; the H100 one passes.
    h200 = _h200_copy(tmp_path)
    junit_path = tmp_path / "j.xml"
    proc = perfgate(
        "check",
        "-b",
        ZOO,
        "-b",
        str(h200),
        "-c",
        str(data("zoo-good-short-run1.csv")),
        "--junit",
        str(junit_path),
    )
    assert proc.returncode == 1
    suites = list(ET.parse(junit_path).getroot().iter("testsuite"))
    assert [int(s.get("failures", "-1")) for s in suites] == [0, _kernels(ZOO)]
    h200_failures = [f.get("type") for f in suites[1].iter("failure")]
    assert h200_failures == ["missing"] * _kernels(ZOO)  # one per kernel, not per metric
    assert proc.stdout.splitlines()[0].startswith(
        "perfgate check FAILED: 10 missing, 10 passed (20 baselined kernels, 2 baselines); "
        "program GPU time "
    )


def test_explain_diagnoses_a_capture_without_a_baseline() -> None:
    proc = perfgate(
        "explain", "-c", str(data("zoo-bad-short-run1.csv")), "--kernel", "zoo_atomics|zoo_bank"
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("perfgate explain: 2 kernels")
    atomics = out[out.index("\nzoo_atomics") :]
    assert "- Atomic contention: drain is the dominant stall" in atomics
    assert "try: reduce hierarchically" in atomics
    assert (
        "l2_atomic_requests = 4,194,304 (lts__t_requests_srcunit_tex_op_red.sum + lts__t_requests_srcunit_tex_op_atom.sum)"
        in atomics
    )
    assert "- Shared-memory bank conflicts" in out[out.index("\nzoo_bank_conflicts") :]
    good = perfgate(
        "explain", "-c", str(data("zoo-good-short-run1.csv")), "--kernel", "zoo_atomics"
    )
    assert (
        "Atomic contention" not in good.stdout
    )  # one atomic per warp is the cure, not the disease


def test_explain_says_which_counters_it_lacks() -> None:
    proc = perfgate("explain", "-c", str(data("set-default.csv")))
    assert proc.returncode == 0
    assert (
        "(not evaluated: speed-of-light quadrant: needs sm__throughput.avg.pct_of_peak_sustained_elapsed"
        in proc.stdout
    )
    assert "(not evaluated: dominant stall: needs" in proc.stdout


def test_the_program_exits_without_teardown_but_with_its_output_and_code(tmp_path: Path) -> None:
    # `perfgate` ends with os._exit (cli.run): what it printed and wrote must all be there,
    # with the gate's exit code, the same as main() run in this process gives.
    report = tmp_path / "r.json"
    args = ["check", "-b", ZOO, "-c", str(data("zoo-bad-short-run1.csv")), "--json", str(report)]
    proc = perfgate(*args)
    assert proc.returncode == 1
    assert proc.stdout.startswith("perfgate check FAILED") and proc.stdout.endswith("\n")
    assert report.read_text().rstrip().endswith("}")
    from click.testing import CliRunner

    in_process = CliRunner().invoke(cli.main, [*args[:-1], str(tmp_path / "again.json")])
    assert in_process.exit_code == proc.returncode
    assert in_process.output == proc.stdout


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    # `perfgate ... | head`: the rest of the output meets a closed pipe. A baseline of 80
    # kernels shows in more than a pipe's 64 KB buffer, so the writer does meet it.
    import yaml

    doc = yaml.safe_load(Path(ZOO).read_text())
    copies = [json.loads(json.dumps(k)) for _ in range(10) for k in doc["kernels"]]  # no aliases
    doc["kernels"] = [{**k, "id": f"{k['id']}_{n}"} for n, k in enumerate(copies)]
    big = tmp_path / "big.yaml"
    big.write_text(yaml.safe_dump(doc))
    assert len(perfgate("baseline", "show", str(big)).stdout) > 100_000
    script = f"{sys.executable} -m perfgate baseline show {big} | head -c 10"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout == "perfgate b" or len(proc.stdout) == 10
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr


def test_json_and_junit_stdout_for_unusable_input(tmp_path: Path) -> None:
    # docs/ci.md: `--format json` on stdout is always JSON, whatever the exit code; JUnit too.
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    as_json = perfgate("check", "-b", ZOO, "-c", str(empty), "--format", "json")
    assert as_json.returncode == 2
    doc = json.loads(as_json.stdout)
    assert doc["status"] == "error" and doc["exit_code"] == 2
    assert doc["problems"] == [f"{empty}: the file is empty"]
    assert as_json.stderr.strip() == f"perfgate: error: {empty}: the file is empty"
    bad_policy = perfgate(
        "check", "-b", ZOO, "-c", str(empty), "--format", "json", "--fail-on", "x"
    )
    assert bad_policy.returncode == 2 and json.loads(bad_policy.stdout)["exit_code"] == 2
    as_junit = perfgate("check", "-b", ZOO, "-c", str(empty), "--format", "junit")
    assert as_junit.returncode == 2
    error = ET.fromstring(as_junit.stdout).find(".//testcase/error")
    assert error is not None and error.get("message") == f"{empty}: the file is empty"
    usage = perfgate("check", "-c", str(empty), "--format", "json")  # no --baseline
    assert usage.returncode == 2 and "--baseline" in json.loads(usage.stdout)["problems"][0]
    assert "Missing option" in usage.stderr
    passing = perfgate(
        "check", "-b", ZOO, "-c", str(data("zoo-good-short-run2.csv")), "--format", "json"
    )
    assert passing.returncode == 0 and json.loads(passing.stdout)["exit_code"] == 0
