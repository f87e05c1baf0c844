"""The README's commands run here, so its examples cannot rot. A fenced block preceded by
`<!-- readme-test: exit=N -->` is run (its virtual environment and `pip install` steps are
what CI does for real and are skipped here) and must exit with N; the text block marked `output-of-previous-check` must
appear in what the first such check printed."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"<!-- readme-test: ([\w=.-]+) -->\s*```(\w+)\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(3)) for m in BLOCK.finditer(README)]


def _run(line: str, tmp: Path) -> subprocess.CompletedProcess[str] | None:
    """Run one README line; its /tmp files go to this test's own folder, so a baseline left by
    an earlier run (record refuses to replace one) cannot change what it does."""
    last = None
    for part in line.split(" && "):
        argv = [a.replace("/tmp/", f"{tmp}/") for a in shlex.split(part)]
        if argv[:3] in (["python3", "-m", "venv"], ["python3", "-m", "pytest"]) or argv[:4] == [
            "python3",
            "-m",
            "pip",
            "install",
        ]:
            continue
        if argv == [".", ".venv/bin/activate"]:
            continue
        assert argv[0] == "perfgate", f"README command not runnable here: {part}"
        last = subprocess.run(
            [sys.executable, "-m", "perfgate", *argv[1:]], capture_output=True, text=True, cwd=ROOT
        )
    return last


def test_readme_has_the_two_setup_commands_and_ci_runs_the_test_one() -> None:
    tags = [tag for tag, _ in _blocks()]
    assert tags[:2] == ["exit=1", "suite"]
    install, suite = (body.strip() for _, body in _blocks()[:2])
    assert install.startswith(
        "python3 -m venv .venv && . .venv/bin/activate && python3 -m pip install . && perfgate check"
    )
    assert suite in (ROOT / ".ci" / "run").read_text(), ".ci/run must run the README's test command"


def test_readme_commands_exit_as_documented(tmp_path: Path) -> None:
    outputs = []
    ran = 0
    for tag, body in _blocks():
        if not tag.startswith("exit="):
            continue
        for line in body.strip().splitlines():
            proc = _run(line, tmp_path)
            assert proc is not None
            assert proc.returncode == int(tag.split("=")[1]), (
                line,
                proc.stdout[-2000:],
                proc.stderr,
            )
            outputs.append(proc.stdout)
            ran += 1
    assert ran >= 4
    shown = next(body for tag, body in _blocks() if tag == "output-of-previous-check")
    for line in shown.strip().splitlines():
        assert line in outputs[0].splitlines(), line


def test_readme_commands_can_be_run_again(tmp_path: Path) -> None:
    """A reader who runs the README's steps a second time (the same /tmp files there) gets the
    same exit codes: `baseline record` must not refuse the baseline its first run wrote."""
    for _ in range(2):
        for tag, body in _blocks():
            if tag == "exit=0" and "baseline record" in body:
                for line in body.strip().splitlines():
                    proc = _run(line, tmp_path)
                    assert proc is not None and proc.returncode == 0, proc and proc.stderr
