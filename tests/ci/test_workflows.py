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
import shlex
import shutil
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


_COMMENT_HARNESS = """
const script = require("fs").readFileSync(process.argv[2], "utf8");
const [sha, repo] = [process.argv[3], process.argv[4]];
const core = { failed: null, setFailed(m) { this.failed = m; }, notice() {}, info() {} };
const posted = [];
const github = {
  rest: {
    pulls: { get: async () => ({ data: { head: { sha, repo: { full_name: repo } } } }) },
    issues: {
      listComments: null,
      updateComment: async (a) => { posted.push(a.body); },
      createComment: async (a) => { posted.push(a.body); return { data: { html_url: "u" } }; },
    },
  },
  paginate: async () => [],
};
const context = { repo: { owner: "o", repo: "r" } };
const run = new Function("require", "core", "github", "context", "process",
  "return (async () => {" + script + "})();");
run(require, core, github, context, process).then(() => {
  console.log(JSON.stringify({ failed: core.failed, posted }));
});
"""


def _post_comment(
    tmp_path: Path, body: str, pr_sha: str = "abc", pr_repo: str = "me/fork"
) -> dict[str, Any]:
    """Run the comment workflow's script under node on an artifact holding `body`, the run
    having tested commit abc of me/fork; the pull request is at `pr_sha` of `pr_repo`."""
    import json
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    doc = _load(ROOT / ".github" / "workflows" / "perfgate-comment.yml")
    step = next(s for s in doc["jobs"]["comment"]["steps"] if "github-script" in s.get("uses", ""))
    (tmp_path / "script.js").write_text(step["with"]["script"])
    (tmp_path / "harness.js").write_text(_COMMENT_HARNESS)
    artifact = tmp_path / "artifact"
    artifact.mkdir(exist_ok=True)
    (artifact / "pr-number").write_text("7\n")
    (artifact / "pr-comment.md").write_text(body)
    env = {**os.environ, "COMMENT_DIR": str(artifact), "HEAD_SHA": "abc", "HEAD_REPO": "me/fork"}
    proc = subprocess.run(
        [node, str(tmp_path / "harness.js"), str(tmp_path / "script.js"), pr_sha, pr_repo],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_the_comment_workflow_treats_the_artifact_as_untrusted(tmp_path: Path) -> None:
    doc = _load(ROOT / ".github" / "workflows" / "perfgate-comment.yml")
    step = next(s for s in doc["jobs"]["comment"]["steps"] if "github-script" in s.get("uses", ""))
    # The run's head repository, from the event (not the artifact), is checked against the PR.
    assert step["env"]["HEAD_REPO"] == "${{ github.event.workflow_run.head_repository.full_name }}"
    assert step["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    marker = "<!-- perfgate:pr-comment -->"
    good = f"{marker}\n## perfgate\n<details><summary>x</summary>\n\n<code>k</code></details>\n"
    assert _post_comment(tmp_path, good) == {"failed": None, "posted": [good]}
    # perfgate breaks mentions and links with a word joiner: those it wrote are posted.
    joined = f"{marker}\nask @\u2060octocat, see https:\u2060//example.org\n"
    assert _post_comment(tmp_path, joined)["posted"] == [joined]
    # Whole ones are not perfgate's: refused, nothing posted.
    for hostile in ("cc @octocat", "see https://evil.example", "www.evil.example"):
        result = _post_comment(tmp_path, f"{marker}\n{hostile}\n")
        assert result["posted"] == [] and "mention or a link" in result["failed"]
    # HTML other than perfgate's bare tags is shown as text, never rendered.
    html = f'{marker}\n<img src=x onerror=alert(1)><a href="x">y</a><details open><!-- hide -->\n'
    posted = _post_comment(tmp_path, html)["posted"][0]
    assert posted.startswith(marker + "\n") and "<img" not in posted and "<a " not in posted
    assert "<details open>" not in posted and "<!--" not in posted[len(marker) :]
    assert "&lt;img src=x onerror=alert(1)&gt;" in posted
    # Too big, no marker, a pull request at another commit or from another repository.
    for body, sha, repo, why in (
        (marker + "x" * 70_000, "abc", "me/fork", "65,536"),
        ("no marker", "abc", "me/fork", "marker"),
        (good, "other", "me/fork", "not at the commit the run tested"),
        (good, "abc", "someone/else", "does not come from the repository the run tested"),
    ):
        result = _post_comment(tmp_path, body, sha, repo)
        assert result["posted"] == [] and why in result["failed"], result


def test_self_hosted_runners_never_run_a_fork_pull_request() -> None:
    """A pull request's code runs on a self-hosted runner only when it comes from this
    repository: a fork's would run on your machine, with its network and what earlier jobs
    left behind (docs/ci.md says why)."""
    same_repo = "github.event.pull_request.head.repo.full_name == github.repository"
    checked = 0
    for path in [*WORKFLOWS, *sorted((ROOT / "docs").glob("**/*.yml"))]:
        doc = _load(path)
        triggers = _triggers(doc)
        if "pull_request" not in triggers and "pull_request_target" not in triggers:
            continue
        for name, job in doc.get("jobs", {}).items():
            runs_on = job.get("runs-on", "")
            labels = runs_on if isinstance(runs_on, list) else [runs_on]
            if any("self-hosted" in str(label) for label in labels):
                condition = " ".join(str(job.get("if", "")).split())
                assert same_repo in condition, f"{path.name} {name}: {condition!r}"
                checked += 1
    assert checked >= 1  # perfgate-gpu.yml's gate job
    ci = (ROOT / "docs" / "ci.md").read_text()
    assert same_repo in ci and "fork" in ci


def test_the_action_shows_a_command_on_one_line() -> None:
    action = _script("github_action")
    hostile = "captures/a\n::error::pwned\u202e.csv"
    line = action.shown(["perfgate", "check", "-c", hostile, "plain file"])
    assert "\n" not in line and "\u202e" not in line
    assert line == "perfgate check -c $'captures/a\\x0a::error::pwned\\u202e.csv' 'plain file'"
    # What bash reads back is the argument as it was.
    proc = subprocess.run(
        ["bash", "-c", f"printf '%s' {line.split(' -c ')[1].split(' ')[0]}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert proc.stdout == hostile


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
        "PERFGATE_PROGRAM_RUNS": "1",
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


def test_action_captures_the_program_as_often_as_asked() -> None:
    action = _script("github_action")
    env = {
        "PERFGATE": "perfgate",
        "PERFGATE_BASELINE": "baselines/",
        "PERFGATE_PROGRAM": "python3 bench.py",
        "PERFGATE_CAPTURE_OUTPUT": "out/cap.csv",
        "PERFGATE_PROGRAM_RUNS": "2",
    }
    runs, captures = action.commands(env)
    assert captures == ["out/cap.csv", "out/cap-run2.csv"]
    # Two separate perfgate capture processes, then one check of both files.
    assert [r[:2] for r in runs] == [["perfgate", "capture"]] * 2 + [["perfgate", "check"]]
    assert [r[r.index("-o") + 1] for r in runs[:2]] == captures
    check = runs[-1]
    assert [check[i + 1] for i, a in enumerate(check) if a == "--capture"] == captures
    # Left empty: four runs, the default (the four-run floor of 10-20 us kernels), four
    # captures and one check of all four.
    four, got = action.commands({**env, "PERFGATE_PROGRAM_RUNS": ""})
    every = ["out/cap.csv", "out/cap-run2.csv", "out/cap-run3.csv", "out/cap-run4.csv"]
    assert got == every and len(four) == 5
    assert [r[:2] for r in four] == [["perfgate", "capture"]] * 4 + [["perfgate", "check"]]
    assert [r[r.index("-o") + 1] for r in four[:4]] == every
    assert [four[-1][i + 1] for i, a in enumerate(four[-1]) if a == "--capture"] == every
    one, got = action.commands({**env, "PERFGATE_PROGRAM_RUNS": "1"})
    assert got == ["out/cap.csv"] and len(one) == 2
    for bad in ("0", "6", "two", "-1", "1.5"):
        said = action.commands({**env, "PERFGATE_PROGRAM_RUNS": bad})
        assert isinstance(said, str) and "program-runs must be" in said and repr(bad) in said


def test_action_plans_the_history_import_and_hides_a_url(tmp_path: Path) -> None:
    action = _script("github_action")
    db = tmp_path / "history.sqlite"
    env = {
        "PERFGATE": "/venv/bin/perfgate",
        "PERFGATE_BASELINE": "baselines/h100/zoo.yaml",
        "PERFGATE_CAPTURES": "c.csv",
        "PERFGATE_MARKDOWN": "out/summary.md",
        "PERFGATE_HISTORY": str(db),
        "RUNNER_TEMP": "/runner/tmp",
        "GITHUB_RUN_ID": "77",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_JOB": "gate",
        "GITHUB_SHA": "f" * 40,
        "GITHUB_REF": "refs/pull/12/merge",
        "GITHUB_HEAD_REF": "feature",
    }
    (runs, _) = action.commands(env)
    # No history file yet (a cache miss): nothing to draw trends from, a JSON result to keep.
    assert "--history" not in runs[-1]
    json_at = runs[-1].index("--json")
    assert runs[-1][json_at + 1] == "/runner/tmp/perfgate-history-result.json"
    db.write_bytes(b"")
    (runs, _) = action.commands(env)
    assert runs[-1][runs[-1].index("--history") + 1] == str(db)
    assert action.history_import(env) == [
        "/venv/bin/perfgate", "history", "import", "--db", str(db),
        "--run-id", "github:77:2:gate", "--commit", "f" * 40, "--branch", "feature",
        "--ci-job", "gate", "--pull-request", "12", "/runner/tmp/perfgate-history-result.json",
    ]  # fmt: skip
    # The json input, when given, is the file kept; no markdown, no trends drawn.
    given = {**env, "PERFGATE_JSON": "out/r.json", "PERFGATE_MARKDOWN": ""}
    (runs, _) = action.commands(given)
    assert "--history" not in runs[-1] and runs[-1].count("--json") == 1
    assert action.history_import(given)[-1] == "out/r.json"
    assert action.history_import({**env, "PERFGATE_HISTORY": " "}) is None
    url = "postgresql://ci:s3cret@db.internal/perf"
    (runs, _) = action.commands({**env, "PERFGATE_HISTORY": url})
    assert url in runs[-1]  # a server is there to read: trends drawn from it
    assert "s3cret" not in action.shown(action.hidden(runs[-1]))


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
    hostile = "x\n::add-mask::secret\n::error::pwned"  # an input echoed raw starts commands
    for version, extras in (
        ("--index-url=http://evil", ""), ("0.2.0 other", ""), ("", "x];y"), (hostile, ""),
        ("", hostile),
    ):  # fmt: skip
        proc = subprocess.run(
            ["bash", str(ROOT / "scripts" / "action-install.sh")],
            capture_output=True, text=True,
            env={**os.environ, "PERFGATE_VERSION": version, "PERFGATE_EXTRAS": extras,
                 "GITHUB_ACTION_PATH": str(ROOT), "RUNNER_TEMP": str(tmp_path)},
        )  # fmt: skip
        assert proc.returncode == 2, (version, extras)
        assert proc.stdout.startswith("::error title=perfgate action::")
        assert proc.stdout.count("\n") == 1, proc.stdout  # the input shown escaped, one line
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
    # A markdown heading per GPU: perfgate-comment.yml's sanitizer escapes an attribute
    # (<details open>) or a tag perfgate does not write (<b>), which the reviewer would see
    # as text (tests/ci/test_action_matrix.py runs it on a merged comment).
    assert "## h100\n" in comment and "## h200\n" in comment
    assert "<details open>" not in comment and "<b>" not in comment
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
    assert usage.returncode == 2 and "Missing option '--baseline'" in usage.stderr


def test_pre_commit_hooks() -> None:
    # A list, not a dict keyed by id: a stray `- id: perfgate-check` with no other keys
    # hid behind the real entry in a dict, and pre-commit refused the whole manifest.
    listed = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    ids = [h["id"] for h in listed]
    assert sorted(ids) == ["perfgate-check", "perfgate-validate"], ids
    for hook in listed:  # pre-commit's required keys (clientlib.MANIFEST_HOOK_DICT)
        assert {"id", "name", "entry", "language"} <= set(hook), hook
    hooks = {h["id"]: h for h in listed}
    check = hooks["perfgate-check"]
    # No stages: it runs where it is installed (docs/ci.md's config picks pre-push), so
    # `pre-commit try-repo . perfgate-check` runs it (tests/docs/test_doc_commands.py).
    assert check["entry"] == "perfgate check" and "stages" not in check
    assert check["pass_filenames"] is False and check["language"] == "python"
    validate = hooks["perfgate-validate"]
    assert re.search(validate["files"], "baselines/h100/zoo.yaml")
    assert not re.search(validate["files"], "src/kernel.cu")


def _check_hooks() -> ModuleType:
    return _script("check_hooks")


def test_the_hook_manifest_validates_with_pre_commits_own_validator(tmp_path: Path) -> None:
    """pre-commit's validator (what `pre-commit validate-manifest` runs) accepts the manifest
    and refuses the stray entry the manifest once held; check_hooks.py also refuses a
    repeated id, which pre-commit takes silently; .ci/run runs check_hooks.py (it runs every
    hook through `pre-commit try-repo` and docs/ci.md's config as written)."""
    from pre_commit import clientlib  # the test extra

    clientlib.load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    stray = tmp_path / "stray.yaml"
    stray.write_text(
        text.replace(
            "- id: perfgate-validate\n", "- id: perfgate-check\n- id: perfgate-validate\n", 1
        )
    )
    with pytest.raises(clientlib.InvalidManifestError, match="name"):
        clientlib.load_manifest(str(stray))
    hooks = _check_hooks()
    assert hooks.duplicate_ids(text) == []
    twice = text + "- id: perfgate-check\n  name: x\n  entry: perfgate check\n  language: python\n"
    assert hooks.duplicate_ids(twice) == ["perfgate-check"]
    assert "python3 scripts/check_hooks.py" in (ROOT / ".ci" / "run").read_text()


def test_the_hook_check_uses_the_config_docs_ci_md_shows() -> None:
    ci = (ROOT / "docs" / "ci.md").read_text()
    config = yaml.safe_load(_check_hooks().recommended_config(ci, "/path/to/perfgate", "abc123"))
    (repo,) = config["repos"]
    assert repo["repo"] == "/path/to/perfgate" and repo["rev"] == "abc123"
    assert [h["id"] for h in repo["hooks"]] == ["perfgate-check", "perfgate-validate"]
    # As written, the hook takes its default args: they fit baselines/<gpu>/*.yaml.
    manifest = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert "args" not in repo["hooks"][0]
    assert manifest["perfgate-check"]["args"] == [
        "--baseline", "baselines/", "--capture", "perfgate-report/capture.csv",
    ]  # fmt: skip


# The hooks run as docs/ci.md configures them (pre-commit installing perfgate into its own
# environments, about a minute) is not a test here: .ci/run runs scripts/check_hooks.py itself,
# and a test skipped by default would read as green without having run.


def test_the_hooks_default_gates_the_repository_layout(tmp_path: Path) -> None:
    """The hook's default args on a repository laid out as baselines/<gpu>/*.yaml (this
    one's: three baselines of the H100): each capture goes to the baseline that fits it."""
    hook = next(
        h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
        if h["id"] == "perfgate-check"
    )  # fmt: skip
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "baselines", repo / "baselines")
    (repo / "perfgate-report").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", *shlex.split(hook["entry"]), *hook["args"]]
    for capture, code in (("zoo-good-short-run1.csv", 0), ("torch-short-run2.csv", 0),
                          ("zoo-good-full-run1.csv.gz", 0), ("zoo-bad-short-run1.csv", 1)):  # fmt: skip
        shutil.copyfile(data(capture), repo / "perfgate-report" / "capture.csv")
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=repo, env=env)
        assert proc.returncode == code, (capture, proc.stdout, proc.stderr)
        assert "not checked" in proc.stdout + proc.stderr


# ------------------------------------------------------ the composite action, step by step
#
# An emulation of the runner: action.yml's steps in order, each `run:` script with bash as
# GitHub runs it (`bash --noprofile --norc -eo pipefail FILE`), `${{ }}` in `env:` and the
# outputs substituted, the inputs also as INPUT_*, and GITHUB_OUTPUT (one file a step),
# GITHUB_STEP_SUMMARY and GITHUB_ENV files. A step that fails stops the steps after it.


def _expression(text: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
    for operand in text.split("||"):  # `a || b`: the first that is not empty
        operand = operand.strip()
        if m := re.fullmatch(r"inputs\.([\w-]+)", operand):
            value = inputs[m.group(1)]
        elif m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", operand):
            value = steps.get(m.group(1), {}).get(m.group(2), "")
        elif m := re.fullmatch(r"'([^']*)'", operand):
            value = m.group(1)
        else:
            raise AssertionError(f"the emulation does not know {operand!r}")
        if value:
            return value
    return ""


def _substitute(text: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _expression(m.group(1), inputs, steps), str(text))


def _read_outputs(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    lines = iter(path.read_text().splitlines() if path.exists() else [])
    for line in lines:
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, marker = line.split("<<", 1)
            values[name] = "\n".join(iter(lambda: next(lines), marker))
        else:
            name, value = line.split("=", 1)
            values[name] = value
    return values


class _ActionRun:
    def __init__(self, outputs: dict[str, str], log: str, failed: str | None, tmp: Path):
        self.outputs, self.log, self.failed = outputs, log, failed
        self.summary = tmp / "step-summary.md"

    def errors(self) -> list[str]:
        return [line for line in self.log.splitlines() if line.startswith("::error")]


def _emulate_action(
    tmp_path: Path, path: str = "", github: dict[str, str] | None = None, **given: str
) -> _ActionRun:
    doc = _load(ACTION)
    inputs = {name: str(spec.get("default", "")) for name, spec in doc["inputs"].items()}
    for name, value in given.items():
        assert name.replace("_", "-") in inputs, name
        inputs[name.replace("_", "-")] = value
    runner = tmp_path / "runner"
    runner.mkdir(exist_ok=True)
    base = {
        "PATH": f"{path}:{os.environ['PATH']}" if path else os.environ["PATH"],
        "HOME": str(tmp_path),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(ROOT),
        "RUNNER_TEMP": str(runner),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
        "GITHUB_ENV": str(tmp_path / "github-env"),
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
        **(github or {}),
    }
    steps: dict[str, dict[str, str]] = {}
    log, failed = "", None
    for n, step in enumerate(doc["runs"]["steps"]):
        if "uses" in step:  # actions/setup-python: only when python-version is given
            assert step["if"] == "inputs.python-version != ''" and not inputs["python-version"]
            continue
        if (
            failed
            and "always()" not in step.get("if", "")
            and "failure()" not in step.get("if", "")
        ):
            continue
        assert step["shell"] == "bash"
        script = tmp_path / f"step{n}.sh"
        script.write_text(_substitute(step["run"], inputs, steps))
        output = tmp_path / f"output{n}"
        env = {**base, "GITHUB_OUTPUT": str(output)}
        for name, value in (step.get("env") or {}).items():
            env[name] = _substitute(value, inputs, steps)
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            capture_output=True, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        log += proc.stdout + proc.stderr
        steps[step.get("id", str(n))] = _read_outputs(output)
        if proc.returncode != 0:
            failed = step.get("id", str(n))
    outputs = {
        name: _substitute(spec["value"], inputs, steps) for name, spec in doc["outputs"].items()
    }
    return _ActionRun(outputs, log, failed, tmp_path)


def _installed(tmp_path: Path) -> None:
    # The install step's virtual environment, as it is found already made (a job's second
    # use of the action): its key is the install script's own.
    spec = f"{ROOT}"
    key = subprocess.run(
        ["bash", "-c", 'printf "%s\\n%s\\n" "$1" "$2" | cksum | cut -d" " -f1', "-", spec,
         "python3"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    bin_dir = tmp_path / "runner" / f"perfgate-venv-{key}" / "bin"
    bin_dir.mkdir(parents=True)
    for name, run in (("python", ""), ("perfgate", " -m perfgate")):
        launcher = bin_dir / name
        launcher.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}"{run} "$@"\n')
        launcher.chmod(0o755)


def test_the_action_passes_fails_and_errors(tmp_path: Path) -> None:
    _installed(tmp_path)
    ok = _emulate_action(
        tmp_path, baseline="baselines/h100/zoo.yaml",
        captures=str(data("zoo-good-short-run2.csv")), junit=str(tmp_path / "ok.xml"),
        markdown="", json="", pr_comment="",
    )  # fmt: skip
    assert ok.failed is None and ok.outputs["verdict"] == "pass", ok.log
    assert ok.outputs["exit-code"] == "0" and ok.outputs["junit"] == str(tmp_path / "ok.xml")
    assert ok.summary.read_text().startswith("### ✅ perfgate: PASSED")
    ok.summary.unlink()
    bad = _emulate_action(
        tmp_path, baseline="baselines/h100/zoo.yaml",
        captures=str(data("zoo-bad-short-run1.csv")), markdown="", json="", pr_comment="",
        junit="", step_summary="false",
    )  # fmt: skip
    assert bad.failed == "gate" and bad.outputs["verdict"] == "fail"
    assert bad.outputs["exit-code"] == "1" and bad.outputs["regressed"] == "8"
    assert not bad.summary.exists()  # the step summary was not asked for
    # Unusable: the captures input matches nothing. Still an error verdict, an annotation
    # that says why, and the reports, the step summary among them.
    junit = tmp_path / "error.xml"
    unusable = _emulate_action(
        tmp_path, baseline="baselines/h100/zoo.yaml", captures="none/*.csv",
        junit=str(junit), markdown="", json=str(tmp_path / "error.json"), pr_comment="",
    )  # fmt: skip
    assert unusable.failed == "gate" and unusable.outputs["verdict"] == "error"
    assert unusable.outputs["exit-code"] == "2"
    assert unusable.errors() == ["::error title=perfgate action::no capture matches none/*.csv"]
    error = ET.parse(junit).getroot().find(".//testcase/error")
    assert error is not None and error.get("message") == "no capture matches none/*.csv"
    assert "no capture matches none/" in unusable.summary.read_text()
    assert "no capture matches" in (tmp_path / "error.json").read_text()


def test_the_action_says_why_a_capture_failed(tmp_path: Path) -> None:
    _installed(tmp_path)
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    (fake / "ncu").write_text(
        "#!/bin/sh\necho 'ncu: command not found: libcupti.so missing' >&2\nexit 1\n"
    )
    (fake / "ncu").chmod(0o755)
    junit = tmp_path / "junit.xml"
    run = _emulate_action(
        tmp_path, path=str(fake), baseline="baselines/h100/zoo.yaml",
        program="python3 -c 'print(1)'", capture_output=str(tmp_path / "cap" / "c.csv"),
        junit=str(junit), markdown="", json="", pr_comment="",
    )  # fmt: skip
    assert run.failed == "gate" and run.outputs["verdict"] == "error", run.log
    assert run.outputs["exit-code"] == "2"
    (annotation,) = run.errors()
    assert annotation.startswith("::error title=perfgate capture failed::")
    assert "ncu exited with code 1" in annotation and "see its output above" not in annotation
    assert "%0A" not in annotation or annotation.count("::") == 2  # one workflow command
    error = ET.parse(junit).getroot().find(".//testcase/error")
    assert error is not None and "ncu exited with code 1" in str(error.get("message"))
    assert "ncu exited with code 1" in run.summary.read_text()


def test_the_action_says_why_perfgate_could_not_be_installed(tmp_path: Path) -> None:
    # A release that pip cannot install: its error, not a raw log, is the annotation.
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    (fake / "python3").write_text(
        "#!/bin/bash\n"
        'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; exit 0; fi\n'
        "echo 'ERROR: Could not find a version that satisfies the requirement "
        "perfgate==0.2.0 (from versions: none)' >&2\n"
        "echo 'ERROR: No matching distribution found for perfgate==0.2.0' >&2\nexit 1\n"
    )
    (fake / "python3").chmod(0o755)
    run = _emulate_action(
        tmp_path, path=str(fake), baseline="baselines/h100/zoo.yaml",
        captures=str(data("zoo-good-short-run2.csv")), perfgate_version="0.2.0",
    )  # fmt: skip
    assert run.failed == "install" and run.outputs["verdict"] == "error", run.log
    assert run.outputs["exit-code"] == "2"
    (annotation,) = run.errors()
    assert annotation.startswith("::error title=perfgate action::could not install perfgate==0.2.0")
    assert "No matching distribution found for perfgate==0.2.0" in annotation
    assert "perfgate could not be installed" in run.summary.read_text()
    refused = _emulate_action(
        tmp_path,
        baseline="baselines/h100/zoo.yaml",
        perfgate_version="latest",
        step_summary="false",
    )
    assert refused.outputs["verdict"] == "error" and refused.outputs["exit-code"] == "2"
    assert "is not a version number" in refused.errors()[0]


def test_the_action_keeps_each_check_in_a_history_and_draws_its_trends(tmp_path: Path) -> None:
    import sqlite3

    _installed(tmp_path)
    db = tmp_path / "cache" / "history.sqlite"
    db.parent.mkdir()
    runs = []
    for n, capture in enumerate(("zoo-good-short-run2.csv", "zoo-good-short-run3.csv",
                                 "zoo-bad-short-run1.csv"), 1):  # fmt: skip
        out = tmp_path / f"report{n}"
        runs.append(
            _emulate_action(
                tmp_path, baseline="baselines/h100/zoo.yaml", captures=str(data(capture)),
                history=str(db), markdown=str(out / "summary.md"), json="", junit="",
                pr_comment="", step_summary="false",
                github={"GITHUB_RUN_ID": str(500 + n), "GITHUB_JOB": "gate",
                        "GITHUB_SHA": f"{n}" * 40, "GITHUB_REF_NAME": "main"},
            )
        )  # fmt: skip
    first, second, bad = runs
    assert first.failed is None and first.outputs["verdict"] == "pass", first.log
    assert "$ perfgate history import --db " in first.log
    assert second.failed is None and bad.failed == "gate" and bad.outputs["verdict"] == "fail"
    with sqlite3.connect(db) as con:
        kept = con.execute("SELECT run_id, commit_sha, branch, status FROM runs").fetchall()
    assert sorted(kept) == [
        ("github:501:1:gate", "1" * 40, "main", "passed"),
        ("github:502:1:gate", "2" * 40, "main", "passed"),
        ("github:503:1:gate", "3" * 40, "main", "failed"),
    ]
    # The first run had no history to draw from; the failing one draws its regressed
    # kernels over the two runs kept before it.
    assert "**Trend**" not in (tmp_path / "report1" / "summary.md").read_text()
    summary = (tmp_path / "report3" / "summary.md").read_text()
    trends = sorted((tmp_path / "report3").glob("summary.*.svg"))
    assert summary.count("**Trend** of ") >= 8 and all(f"]({t.name})" in summary for t in trends)
    # A history that cannot be kept is a warning; the verdict stands and no URL is logged.
    url = "postgresql://ci:s3cret@127.0.0.1:9/none?connect_timeout=2"
    down = _emulate_action(
        tmp_path, baseline="baselines/h100/zoo.yaml",
        captures=str(data("zoo-good-short-run2.csv")), history=url,
        markdown=str(tmp_path / "report4" / "summary.md"), json="", junit="", pr_comment="",
        step_summary="false",
    )  # fmt: skip
    assert down.failed is None and down.outputs["verdict"] == "pass", down.log
    assert "::warning title=perfgate history not kept::" in down.log
    assert "s3cret" not in down.log and "<history URL>" in down.log
