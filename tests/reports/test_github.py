"""Where perfgate's findings land on GitHub and in CI tools: annotations and JUnit testcases
point at the baseline file and the kernel's entry in it; machine-readable stdout stays pure
under GitHub Actions; step outputs and --fail-on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from perfgate.baseline.load import load_baseline
from perfgate.ingest import read_capture
from perfgate.judge.policy import FailOn, parse_fail_on
from perfgate.judge.states import KernelState
from perfgate.reports import github, junit
from perfgate.usecases.check_command import policy_exit_code
from perfgate.usecases.outputs import repository_paths
from perfgate.verdicts.check import check
from perfgate.verdicts.model import Report
from tests.conftest import ROOT, data

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
XSD = ROOT / "tests" / "data" / "junit-10.xsd"


@pytest.fixture(scope="module")
def bad() -> Report:
    return Report((check(load_baseline(ZOO), read_capture(data("zoo-bad-short-run1.csv"))),))


def test_every_kernel_knows_the_line_of_its_entry(tmp_path: Path) -> None:
    baseline = load_baseline(ZOO)
    lines = ZOO.read_text().splitlines()
    assert len(baseline.kernels) == 10
    for kernel in baseline.kernels:
        assert kernel.line is not None
        assert lines[kernel.line - 1] == f"- id: {kernel.id}"
    # Flow style and leading comments: the line of the entry, wherever it starts.
    path = tmp_path / "b.yaml"
    path.write_text(
        "# comment\n\nformat_version: 2\nkernels:\n"
        "  # first\n  - {id: a, match: {name: a}, metrics: {registers_per_thread: {value: 32}}}\n"
        "  -\n    id: b\n    match: {name: b}\n    metrics: {registers_per_thread: {value: 40}}\n"
    )
    # (an entry written "-" then its keys below starts at its first key)
    assert [k.line for k in load_baseline(path).kernels] == [6, 8]


def test_paths_are_relative_to_the_repository_root(tmp_path: Path) -> None:
    inside = tmp_path / "repo" / "baselines" / "h100.yaml"
    outside = tmp_path / "elsewhere.yaml"
    got = repository_paths((str(inside), str(outside)), str(tmp_path / "repo"))
    assert got == {str(inside): "baselines/h100.yaml", str(outside): str(outside)}


def test_annotations_point_at_the_kernels_entry(bad: Report) -> None:
    files = {str(ZOO): "baselines/h100/zoo.yaml"}
    lines = github.render(bad, files).splitlines()
    source = ZOO.read_text().splitlines()
    # The whole program's regression first, then one per failing kernel at its entry.
    assert "program GPU time regressed" in lines.pop(0)
    assert len(lines) == 8
    for line in lines:
        m = re.match(r"::error file=([^,]+),line=(\d+),title=perfgate%3A (\w+) regressed::.", line)
        assert m is not None, line
        assert m.group(1) == "baselines/h100/zoo.yaml"
        assert source[int(m.group(2)) - 1] == f"- id: {m.group(3)}"
    # Warn-only: the same findings as warnings.
    warned = github.render(bad, files, level="warning").splitlines()[1:]
    assert [w.replace("::warning ", "::error ", 1) for w in warned] == lines


def test_junit_testcases_carry_file_and_line(bad: Report) -> None:
    files = {str(ZOO): "baselines/h100/zoo.yaml"}
    root = ET.fromstring(junit.render(bad, files))
    cases = [c for c in root.findall(".//testcase") if c.get("name") != "program GPU time"]
    assert len(cases) == 10
    source = ZOO.read_text().splitlines()
    for case in cases:
        assert case.get("file") == "baselines/h100/zoo.yaml"
        assert source[int(case.get("line") or 0) - 1] == f"- id: {case.get('name')}"
    failure = root.find(".//testcase/failure")
    assert failure is not None and "baseline entry: baselines/h100/zoo.yaml:" in (
        failure.text or ""
    )


def test_junit_deviates_from_the_strict_schema_only_by_file_and_line(
    bad: Report, tmp_path: Path
) -> None:
    strict = xmlschema.XMLSchema(str(XSD))
    located = junit.render(bad)
    assert not strict.is_valid(located)  # file and line are not in junit-10.xsd ...
    strict.validate(junit.render(bad, locations=False))  # ... and this form leaves them out
    xsd = XSD.read_text()
    anchor = '<xs:attribute name="group" type="xs:string"/>'
    assert xsd.count(anchor) == 1
    extended = tmp_path / "junit-10-located.xsd"
    extended.write_text(
        xsd.replace(
            anchor,
            anchor + '<xs:attribute name="file" type="xs:string"/>'
            '<xs:attribute name="line" type="xs:string"/>',
        )
    )
    xmlschema.XMLSchema(str(extended)).validate(located)


def test_fail_on_policy(bad: Report) -> None:
    assert parse_fail_on("regression,missing") == {FailOn.REGRESSION, FailOn.MISSING}
    assert parse_fail_on("never") == frozenset()
    for wrong in ("", "sometimes", "never,regression"):
        with pytest.raises(Exception, match="--fail-on"):
            parse_fail_on(wrong)
    assert int(policy_exit_code(bad, parse_fail_on("regression"))) == 1
    assert int(policy_exit_code(bad, parse_fail_on("missing"))) == 0  # nothing is missing
    assert int(policy_exit_code(bad, frozenset())) == 0
    problem = Report(problems=("c.csv: the file is empty",))
    assert int(policy_exit_code(problem, frozenset())) == 2  # unusable input is never relaxed
    # A missing kernel fails under `missing` only.
    h100 = read_capture(data("zoo-bad-short-run1.csv"))
    baseline = load_baseline(ZOO)
    gone = check(baseline, type(h100)(**{**h100.__dict__, "launches": h100.launches[:0]}))
    report = Report((gone,))
    assert {v.state for v in report.verdicts} == {KernelState.MISSING}
    assert int(policy_exit_code(report, parse_fail_on("regression"))) == 0
    assert int(policy_exit_code(report, parse_fail_on("missing"))) == 1


def _gh(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    env = {
        **os.environ,
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_WORKSPACE": str(ROOT),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("NO_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "check", "-b", str(ZOO), *args],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    outputs = dict(
        line.split("=", 1) for line in output.read_text().splitlines()
    ) if output.exists() else {}  # fmt: skip
    return proc, outputs


@pytest.mark.parametrize("fmt", ["json", "junit", "markdown"])
def test_machine_readable_stdout_stays_pure_under_github_actions(tmp_path: Path, fmt: str) -> None:
    proc, outputs = _gh(tmp_path, "-c", str(data("zoo-bad-short-run1.csv")), "--format", fmt)
    assert proc.returncode == 1
    assert "::error" not in proc.stdout
    assert proc.stderr.count("::error file=baselines/h100/zoo.yaml,line=") == 8
    if fmt == "json":
        assert json.loads(proc.stdout)["exit_code"] == 1
    elif fmt == "junit":
        ET.fromstring(proc.stdout)
    else:
        assert proc.stdout.startswith("### ❌ perfgate: FAILED")
    assert outputs["verdict"] == "fail" and outputs["regressed"] == "8"


def test_format_github_prints_each_annotation_once(tmp_path: Path) -> None:
    proc, _ = _gh(tmp_path, "-c", str(data("zoo-bad-short-run1.csv")), "--format", "github")
    assert proc.returncode == 1
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    # Eight kernels and the whole program's time.
    assert len(errors) == len(set(errors)) == 9
    assert "::error" not in proc.stderr


def test_step_outputs_and_warn_only(tmp_path: Path) -> None:
    junit_path = tmp_path / "j.xml"
    proc, outputs = _gh(
        tmp_path, "-c", str(data("zoo-bad-short-run1.csv")), "--warn-only",
        "--junit", str(junit_path),
    )  # fmt: skip
    assert proc.returncode == 0
    assert proc.stdout.startswith("perfgate check FAILED")  # still reported as it is
    assert "::warning file=baselines/h100/zoo.yaml" in proc.stderr
    assert "::error" not in proc.stderr
    assert "the gate failed; exit 0 (--fail-on never)" in proc.stderr
    assert outputs == {
        "verdict": "fail",
        "exit-code": "0",
        "kernels": "10",
        "pass": "2",
        "improved": "0",
        "regressed": "8",
        "incomplete": "0",
        "missing": "0",
        "new": "0",
        "skipped": "0",
        "unjudged": "0",
        "error": "0",
        "problems": "0",
        "junit-path": str(junit_path),
        "markdown-path": "",
        "json-path": "",
        "pr-comment-path": "",
    }
    assert junit_path.exists()
    good, outputs = _gh(tmp_path, "-c", str(data("zoo-good-short-run2.csv")))
    assert good.returncode == 0 and outputs["verdict"] == "pass" and outputs["regressed"] == "0"


def test_input_problems_reach_the_step_outputs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    proc, outputs = _gh(tmp_path, "-c", str(empty), "--warn-only")
    assert proc.returncode == 2
    assert outputs["verdict"] == "error" and outputs["exit-code"] == "2"
    assert outputs["problems"] == "1"
    assert "::error title=perfgate%3A input::" in proc.stderr
