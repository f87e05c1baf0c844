"""The action, the workflows and the scripts around them, held to the rules zizmor, actionlint
and GitHub enforce (CI runs those tools too; these checks run everywhere, offline):

- every `uses:` of another repository is pinned to a full commit SHA with a version comment,
- every checkout says `persist-credentials: false`,
- no `${{ }}` expression inside a `run:` script (inputs go through `env:`),
- every workflow declares its permissions, every job a timeout,
- nothing triggered by `pull_request_target` or `workflow_run` checks out or runs code,
- no action of a deprecated Node runtime (node12, node16, node20) is used,

and the action's own scripts do what action.yml promises.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from perfgate.judge.states import KernelState
from tests.conftest import ROOT, data

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTION = ROOT / "action.yml"
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
# The releases the pins name, and their runtime (checked against the actions' own action.yml
# when the pins were last moved): none runs on a deprecated Node.
KNOWN_PINS = {
    "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1": "v7.0.1",
    "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97": "v7.0.0",
    "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f": "v7.0.0",
    "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c": "v8.0.1",
    "actions/github-script@ed597411d8f924073f98dfc5c65a23a2325f34cd": "v8.0.0",
}


def _load(path: Path) -> dict[str, Any]:
    # PyYAML reads a bare `on:` key as True; workflows are read with that in mind.
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), path
    return doc


def _triggers(doc: dict[str, Any]) -> dict[str, Any]:
    on = doc.get("on", doc.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    assert isinstance(on, dict)
    return on


def _steps(path: Path) -> list[tuple[str, dict[str, Any]]]:
    doc = _load(path)
    if path == ACTION:
        return [("action", s) for s in doc["runs"]["steps"]]
    return [(name, s) for name, job in doc["jobs"].items() for s in job.get("steps", [])]


def _uses_lines(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip().startswith(("uses:", "- uses:"))
    ]


def test_there_are_the_workflows_the_project_needs() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "perfgate-gpu.yml", "perfgate-comment.yml", "release.yml"} <= names


@pytest.mark.parametrize("path", [*WORKFLOWS, ACTION], ids=lambda p: p.name)
def test_every_action_is_pinned_by_sha_with_a_version_comment(path: Path) -> None:
    for _, step in _steps(path):
        uses = step.get("uses")
        if uses is None or uses.startswith("./"):
            continue
        assert SHA_PIN.match(uses), f"{path.name}: {uses} is not pinned to a commit SHA"
        assert uses in KNOWN_PINS, f"{path.name}: {uses}: add it to KNOWN_PINS with its release"
    for line in _uses_lines(path):
        target = line.split("uses:", 1)[1].strip()
        if target.startswith("./"):
            continue
        ref = target.split("#")[0].strip()
        assert "#" in target, f"{path.name}: {line} has no version comment"
        assert target.split("#", 1)[1].strip() == KNOWN_PINS[ref], f"{path.name}: {line}"


@pytest.mark.parametrize("path", [*WORKFLOWS, ACTION], ids=lambda p: p.name)
def test_no_expression_inside_a_script(path: Path) -> None:
    for job, step in _steps(path):
        script = step.get("run")
        if script is not None:
            assert "${{" not in script, f"{path.name} {job}: pass it through env: instead"
        if "github-script" in str(step.get("uses", "")):
            assert "${{" not in step["with"]["script"], f"{path.name} {job}: use process.env"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_checkouts_do_not_keep_the_token(path: Path) -> None:
    for job, step in _steps(path):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert (step.get("with") or {}).get("persist-credentials") is False, (path.name, job)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_permissions_declared_and_timeouts_set(path: Path) -> None:
    doc = _load(path)
    assert "permissions" in doc, f"{path.name}: declare the token's permissions at the top"
    top = doc["permissions"]
    assert top in ({}, {"contents": "read"}), f"{path.name}: keep the default token read-only"
    for name, job in doc["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"{path.name} {name}: set a timeout"
        for scope, level in (job.get("permissions") or {}).items():
            if level == "write":
                assert path.name in ("perfgate-comment.yml", "release.yml"), (path.name, scope)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_privileged_triggers_never_check_out_or_run_code(path: Path) -> None:
    doc = _load(path)
    triggers = _triggers(doc)
    assert "pull_request_target" not in triggers, f"{path.name}: use workflow_run"
    if "workflow_run" not in triggers:
        return
    for job, step in _steps(path):
        uses = str(step.get("uses", ""))
        assert not uses.startswith(("actions/checkout@", "./")), (path.name, job, uses)
        assert "run" not in step, f"{path.name} {job}: no shell in a privileged workflow"


def test_the_comment_workflow_checks_what_it_posts() -> None:
    text = (ROOT / ".github" / "workflows" / "perfgate-comment.yml").read_text()
    # It comments only on the pull request whose head the run tested, with perfgate's marker,
    # and updates its own comment instead of adding one per push.
    assert "pull.data.head.sha !== process.env.HEAD_SHA" in text
    assert "<!-- perfgate:pr-comment -->" in text
    assert "updateComment" in text and "createComment" in text
    assert "perfgate-pr-comment" in (ROOT / ".github/workflows/perfgate-gpu.yml").read_text()


def test_the_actions_pinned_run_on_a_current_node() -> None:
    # The versions named are those whose action.yml says node24 (actions/* v5+, github-script
    # v8); an older pin would fail the KNOWN_PINS check above.
    majors = {ref.split("@")[0]: int(v[1:].split(".")[0]) for ref, v in KNOWN_PINS.items()}
    assert majors["actions/checkout"] >= 5 and majors["actions/setup-python"] >= 6
    assert majors["actions/upload-artifact"] >= 6 and majors["actions/download-artifact"] >= 7
    assert majors["actions/github-script"] >= 8


def test_action_inputs_reach_scripts_through_env() -> None:
    doc = _load(ACTION)
    inputs = set(doc["inputs"])
    passed: set[str] = set()
    for _, step in _steps(ACTION):
        for value in list((step.get("env") or {}).values()) + list(
            (step.get("with") or {}).values()
        ):
            passed |= set(re.findall(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", str(value)))
        if "if" in step:
            passed |= set(re.findall(r"inputs\.([\w-]+)", step["if"]))
    assert inputs == passed, f"inputs never used: {inputs - passed}; unknown: {passed - inputs}"
    outputs = doc["outputs"]
    for name in ("verdict", "exit-code", "regressed", "missing", "junit", "markdown", "json"):
        assert name in outputs
    # Every kernel state's count that perfgate writes to $GITHUB_OUTPUT is an output of the action.
    read = set(re.findall(r"steps\.gate\.outputs\.([\w-]+)", yaml.safe_dump(outputs)))
    for state in KernelState:
        assert state.value.replace(" ", "-") in read, f"no action output for {state}"
    assert doc["runs"]["using"] == "composite"


def test_the_ci_self_test_asserts_every_output_it_reads() -> None:
    text = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    outputs = set(_load(ACTION)["outputs"])
    read = set(re.findall(r"steps\.\w+\.outputs\.([\w-]+)", text))
    assert read and read <= outputs, read - outputs
    # Each variable the assertion step is given is compared with an expected value.
    step = next(
        s
        for _, s in _steps(ROOT / ".github/workflows/ci.yml")
        if s.get("name") == "Assert the action's outputs"
    )
    for name in step["env"]:
        if name.endswith(("_JSON", "_COMMENT")):
            continue  # file paths: checked to exist
        assert f'"${name}"' in step["run"], name


# ------------------------------------------------------------------------ the action's scripts


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_action_plans_the_commands_without_a_shell(tmp_path: Path) -> None:
    action = _script("github_action")
    env = {
        "PERFGATE": "/venv/bin/perfgate",
        "PERFGATE_BASELINE": "baselines/h100/zoo.yaml\n",
        "PERFGATE_CAPTURES": "",
        "PERFGATE_PROGRAM": "python3 bench.py --name 'two words' ; rm -rf /",
        "PERFGATE_CAPTURE_ARGS": "--kernel zoo_",
        "PERFGATE_JUNIT": "out/j.xml",
        "PERFGATE_MARKDOWN": "",
        "PERFGATE_FAIL_ON": "never",
        "PERFGATE_ARGS": "--no-new-kernels",
    }
    runs, captures = action.commands(env)
    assert runs[0] == [
        "/venv/bin/perfgate", "capture", "--baseline", "baselines/h100/zoo.yaml",
        "-o", "perfgate-report/capture.csv", "--kernel", "zoo_", "--",
        "python3", "bench.py", "--name", "two words", ";", "rm", "-rf", "/",
    ]  # fmt: skip
    assert runs[1] == [
        "/venv/bin/perfgate", "check", "--baseline", "baselines/h100/zoo.yaml",
        "--capture", "perfgate-report/capture.csv", "--junit", "out/j.xml",
        "--fail-on", "never", "--github", "--no-new-kernels",
    ]  # fmt: skip
    assert captures == ["perfgate-report/capture.csv"]
    assert "baseline input is empty" in action.commands({**env, "PERFGATE_BASELINE": " \n"})
    nothing = {**env, "PERFGATE_PROGRAM": ""}
    assert "nothing to gate" in action.commands(nothing)
    assert "no capture matches" in action.commands({**nothing, "PERFGATE_CAPTURES": "nope/*.csv"})
    assert "cannot split" in action.commands({**env, "PERFGATE_PROGRAM": "python3 'open"})


def _run_action(
    tmp_path: Path, **inputs: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    output, summary = tmp_path / "output", tmp_path / "summary"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(ROOT),
        "PERFGATE": str(tmp_path / "perfgate"),
        **{f"PERFGATE_{k.upper()}": v for k, v in inputs.items()},
    }
    # The installed command, as the install step's virtual environment provides it.
    launcher = tmp_path / "perfgate"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m perfgate "$@"\n')
    launcher.chmod(0o755)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "github_action.py")],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    values = (
        dict(line.split("=", 1) for line in output.read_text().splitlines())
        if output.exists()
        else {}
    )
    return proc, values


def test_action_gate_step_on_the_bundled_captures(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    proc, out = _run_action(
        tmp_path,
        baseline="baselines/h100/zoo.yaml",
        captures="tests/data/h100/zoo-bad-short-run*.csv\n",
        junit=str(reports / "junit.xml"),
        markdown=str(reports / "summary.md"),
        json="",
        pr_comment=str(reports / "pr-comment.md"),
        fail_on="regression,missing",
    )
    assert proc.returncode == 1, proc.stderr
    assert out["verdict"] == "fail" and out["exit-code"] == "1" and out["regressed"] == "8"
    assert out["captures"] == " ".join(
        f"tests/data/h100/zoo-bad-short-run{n}.csv" for n in (1, 2, 3)
    )
    assert out["json-path"] == "" and out["junit-path"] == str(reports / "junit.xml")
    assert proc.stderr.count("::error file=baselines/h100/zoo.yaml,line=") == 8
    assert (tmp_path / "summary").read_text().startswith("### ❌ perfgate: FAILED")
    case = ET.parse(reports / "junit.xml").getroot().find(".//testcase")
    assert case is not None and case.get("file") == "baselines/h100/zoo.yaml"
    warn, out = _run_action(
        tmp_path, baseline="baselines/h100/zoo.yaml",
        captures=str(data("zoo-bad-short-run1.csv")), fail_on="never",
    )  # fmt: skip
    assert warn.returncode == 0 and out["verdict"] == "fail" and out["exit-code"] == "0"
    missing, _ = _run_action(tmp_path, baseline="baselines/h100/zoo.yaml", captures="none/*.csv")
    assert (
        missing.returncode == 2
        and "::error title=perfgate action::no capture matches" in missing.stdout
    )


def test_install_step_refuses_versions_that_are_not_versions(tmp_path: Path) -> None:
    for version, extras in (("--index-url=http://evil", ""), ("0.2.0 other", ""), ("", "x];y")):
        proc = subprocess.run(
            ["bash", str(ROOT / "scripts" / "action-install.sh")],
            capture_output=True, text=True,
            env={**os.environ, "PERFGATE_VERSION": version, "PERFGATE_EXTRAS": extras,
                 "GITHUB_ACTION_PATH": str(ROOT), "RUNNER_TEMP": str(tmp_path)},
        )  # fmt: skip
        assert proc.returncode == 2, (version, extras)
        assert proc.stdout.startswith("::error title=perfgate action::")
        assert not list(tmp_path.iterdir())  # refused before anything was made


def test_merge_reports_one_junit_and_one_comment(tmp_path: Path) -> None:
    merge = _script("merge_reports")
    for gpu, capture in (("h100", "zoo-bad-short-run1.csv"), ("h200", "zoo-good-short-run2.csv")):
        d = tmp_path / f"perfgate-gpu-{gpu}"
        subprocess.run(
            [sys.executable, "-m", "perfgate", "check", "-b", "baselines/h100/zoo.yaml",
             "-c", str(data(capture)), "--junit", str(d / "junit.xml"),
             "--pr-comment", str(d / "pr-comment.md")],
            cwd=ROOT, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    assert (
        merge.main(
            [
                str(tmp_path / "perfgate-gpu-h100"),
                str(tmp_path / "perfgate-gpu-h200"),
                "--out",
                str(tmp_path / "m"),
            ]
        )
        == 0
    )
    root = ET.parse(tmp_path / "m" / "junit.xml").getroot()
    assert len(root.findall("testsuite")) == 2
    # 10 kernels and one program GPU time testcase per GPU; the bad build's 8 regressed
    # kernels make its whole program slower too: 9 failures.
    assert root.get("tests") == "22" and root.get("failures") == "9"
    comment = (tmp_path / "m" / "pr-comment.md").read_text()
    assert comment.count("<!-- perfgate:pr-comment -->") == 1 and comment.startswith("<!--")
    assert "<b>h100</b>" in comment and "<b>h200</b>" in comment
    assert comment.index("FAILED") < comment.index("PASSED")
    huge = merge.merge_comments([("a", "x" * 40_000), ("b", "y" * 40_000)])
    assert len(huge) <= 65_536 and "Not shown (too long for one comment): b" in huge


def test_pre_merge_script_gates_an_existing_capture(tmp_path: Path) -> None:
    env = {**os.environ, "PERFGATE": f"{sys.executable} -m perfgate", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        ["bash", "scripts/pre-merge.sh", "--baseline", "baselines/h100/zoo.yaml",
         "--capture", str(data("zoo-bad-short-run1.csv")), "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout.startswith("perfgate check FAILED")
    assert {p.name for p in tmp_path.iterdir()} >= {"junit.xml", "summary.md", "result.json"}
    usage = subprocess.run(
        ["bash", "scripts/pre-merge.sh"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert usage.returncode == 2 and "--baseline is required" in usage.stderr


def test_pre_commit_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    check = hooks["perfgate-check"]
    # No stages: it runs where it is installed (docs/ci.md's config picks pre-push), so
    # `pre-commit try-repo . perfgate-check` runs it (tests/test_doc_commands.py).
    assert check["entry"] == "perfgate check" and "stages" not in check
    assert check["pass_filenames"] is False and check["language"] == "python"
    validate = hooks["perfgate-validate"]
    assert re.search(validate["files"], "baselines/h100/zoo.yaml")
    assert not re.search(validate["files"], "src/kernel.cu")
