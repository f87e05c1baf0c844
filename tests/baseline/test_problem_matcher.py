"""Every baseline problem is one `FILE:LINE:COL: message` line (the json path kept first in
the message, `FILE:LINE:COL: $.kernels[0].match: ...`), the form editors and GitHub problem
matchers parse; .github/perfgate-matcher.json turns perfgate's error lines into annotations on
the baseline's line and column, for a workflow's own perfgate steps. Under the action, perfgate
annotates each problem itself, once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate.baseline.load import load_baseline
from perfgate.common.errors import BaselineError
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "corpus" / "baselines"
# Problems of the whole file, with no line to point at.
WHOLE_FILE = {"binary.yaml", "empty.yaml", "comments-only.yaml"}
LOCATED = re.compile(r"^(?P<file>[^:]+):(?P<line>[1-9]\d*):(?P<col>[1-9]\d*): (?P<message>\S.*)$")
MATCHER = json.loads((ROOT / ".github" / "perfgate-matcher.json").read_text())


def _problems(path: Path) -> list[str]:
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    return info.value.lines()


# The corpus's baselines that perfgate refuses (expectations.yaml: exit 2).
_EXPECTED = yaml.safe_load((ROOT / "tests" / "corpus" / "expectations.yaml").read_text())
REFUSED = sorted(
    name
    for name, want in _EXPECTED["baselines"].items()
    if want.get("exit") == 2 and name not in WHOLE_FILE and (CORPUS / name).exists()
)


def _load_problem(path: Path) -> list[str] | None:
    try:
        load_baseline(path)
    except BaselineError as exc:
        return exc.lines()
    return None


def test_the_refused_corpus_baselines_are_many() -> None:
    assert len(REFUSED) > 30, REFUSED


@pytest.mark.parametrize("name", REFUSED)
def test_every_baseline_problem_names_file_line_and_column(name: str) -> None:
    path = CORPUS / name
    lines = _load_problem(path)
    assert lines is not None, f"{name}: expected to be refused, but it loads"
    for line in lines:
        m = LOCATED.match(line)
        assert m, line
        assert m.group("file") == str(path)
        assert int(m.group("line")) <= len(path.read_bytes().splitlines()) + 1
        assert "(line " not in m.group("message"), line


def test_a_schema_problem_keeps_its_json_path_after_the_position() -> None:
    lines = _problems(CORPUS / "wrong-types.yaml")
    assert lines[0] == (
        f"{CORPUS / 'wrong-types.yaml'}:6:46: $.kernels[0].metrics.registers_per_thread.min: "
        "'sixteen' is not of type 'number'"
    ), lines


def test_a_yaml_syntax_error_is_in_the_same_form() -> None:
    assert _problems(CORPUS / "syntax-error.yaml")[0].startswith(
        f"{CORPUS / 'syntax-error.yaml'}:3:3: not valid YAML"
    )


def _match(line: str) -> dict[str, str] | None:
    (pattern,) = MATCHER["problemMatcher"][0]["pattern"]
    m = re.search(pattern["regexp"], line)
    if not m:
        return None
    return {key: m.group(pattern[key]) for key in ("file", "line", "column", "message")}


def test_the_problem_matcher_reads_perfgates_real_error_output(tmp_path: Path) -> None:
    (matcher,) = MATCHER["problemMatcher"]
    assert matcher["owner"] == "perfgate" and matcher["severity"] == "error"
    bad = tmp_path / "h100.yaml"
    bad.write_text((CORPUS / "wrong-types.yaml").read_text())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfgate",
            "baseline",
            "validate",
            str(bad),
            str(CORPUS / "syntax-error.yaml"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 3
    found = [_match(line) for line in errors]
    assert found[0] == {
        "file": str(bad),
        "line": "6",
        "column": "46",
        "message": "$.kernels[0].metrics.registers_per_thread.min: 'sixteen' is not of type 'number'",
    }
    assert found[2] is not None and found[2]["file"] == str(CORPUS / "syntax-error.yaml")
    assert (found[2]["line"], found[2]["column"]) == ("3", "3")
    assert found[2]["message"].startswith("not valid YAML")
    # Not an error line of a file: the report's own lines are left alone.
    assert _match("perfgate check FAILED: 8 regressed with 10 root causes") is None


def _registered() -> list[dict[str, Any]]:
    """The problem matchers action.yml registers for its steps (`::add-matcher::` lines)."""
    action = (ROOT / "action.yml").read_text()
    paths = re.findall(r"::add-matcher::\$GITHUB_ACTION_PATH/([^\s\"']+)", action)
    return [m for path in paths for m in json.loads((ROOT / path).read_text())["problemMatcher"]]


def _unescaped(text: str) -> str:
    for code, ch in (("%3A", ":"), ("%2C", ","), ("%0A", "\n"), ("%0D", "\r"), ("%25", "%")):
        text = text.replace(code, ch)
    return text


_COMMAND = re.compile(r"^::(?P<kind>error|warning|notice)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


def annotations(log: str, matchers: list[dict[str, Any]]) -> list[dict[str, str | None]]:
    """What GitHub makes of a step's log: an annotation for each `::error`/`::warning`
    workflow command, and one for each line a registered problem matcher matches."""
    found: list[dict[str, str | None]] = []
    for line in log.splitlines():
        m = _COMMAND.match(line)
        if m is not None:
            props = dict(p.split("=", 1) for p in (m.group("props") or "").split(",") if "=" in p)
            found.append(
                {
                    "file": _unescaped(props["file"]) if "file" in props else None,
                    "line": props.get("line"),
                    "col": props.get("col"),
                    "message": _unescaped(m.group("message")),
                }
            )
            continue
        for matcher in matchers:
            (pattern,) = matcher["pattern"]
            hit = re.search(pattern["regexp"], line)
            if hit:
                found.append(
                    {key: hit.group(pattern[name]) for key, name in
                     (("file", "file"), ("line", "line"), ("col", "column"),
                      ("message", "message"))}
                )  # fmt: skip
    return found


@pytest.mark.parametrize("phase", ["check", "capture"])
def test_under_the_action_each_baseline_problem_is_annotated_once(
    tmp_path: Path, phase: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The action's gate step with a baseline holding two schema errors, found by `perfgate
    check` or, with a program to capture, by `perfgate capture`: each is one annotation, on
    its file, line and column (the action used to annotate each twice: once without a file,
    once through this matcher)."""
    from tests.ci.test_workflows import _run_action

    bad = tmp_path / "h100.yaml"
    bad.write_text((CORPUS / "wrong-types.yaml").read_text())
    inputs = (
        {"captures": str(ROOT / "tests" / "data" / "h100" / "zoo-bad-short-run1.csv")}
        if phase == "check"
        else {
            "program": "true",
            "capture_output": str(tmp_path / "c.csv"),
            # The stand-in ncu (tests/fake_ncu.py): the baseline stops the capture first.
            "capture_args": f"--ncu {ROOT / 'tests' / 'fake_ncu.py'}",
        }
    )
    texts = ROOT / "tests" / "data" / "h200" / "capture"
    monkeypatch.setenv("FAKE_NCU_VERSION", str(texts / "ncu-version.txt"))
    proc, outputs = _run_action(tmp_path, baseline=str(bad), **inputs)
    assert proc.returncode == 2 and outputs["verdict"] == "error"
    found = annotations(proc.stdout + proc.stderr, _registered())
    about = [a for a in found if "registers_per_thread" in str(a["message"])]
    assert sorted((a["line"], a["col"]) for a in about) == [("6", "35"), ("6", "46")], found
    assert all(a["file"] == str(bad) for a in about), about
    # Nothing else was annotated: every annotation is one of the two problems.
    assert len(found) == 2, found


def test_the_matcher_still_reads_perfgates_error_lines_for_your_own_steps() -> None:
    # The action registers none (perfgate annotates its own problems); the file is for a
    # workflow that runs `perfgate baseline validate` itself (docs/action.md).
    assert _registered() == []
    assert _match("perfgate: error: b.yaml:3:3: not valid YAML") is not None
