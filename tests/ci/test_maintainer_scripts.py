"""Maintainer scripts (issue 25): a device experiment that did not work says so, one line and
a non-zero exit code, never a traceback or an exit code 0 after failed commands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

COST = ROOT / "benchmarks" / "capture_cost"


def _tools(folder: Path, **scripts: str) -> Path:
    """A PATH folder holding a shell script per tool."""
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        tool = folder / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    return folder


def _run(args: list[str], path: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{path}:/usr/bin:/bin", "OUT": str(tmp_path / "out"), "W": str(tmp_path / "w"),
           "HOME": str(tmp_path)}  # fmt: skip
    (tmp_path / "out").mkdir(exist_ok=True)
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)


def _python(folder: Path) -> Path:
    """`python3` in `folder` is this interpreter (perfgate's dependencies at hand)."""
    return _tools(folder, python3=f'exec "{sys.executable}" "$@"')


def test_exp1_without_ncu_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _run([sys.executable, str(COST / "exp1.py")], tmp_path / "empty", tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert (
        proc.stderr
        == "exp1.py: error: ncu not found on PATH: run this on the device machine (docs/capture.md)\n"
    )


def test_exp1_with_a_failing_nvcc_stops_with_one_line(tmp_path: Path) -> None:
    fake = ROOT / "tests" / "fake_ncu.py"
    path = _tools(tmp_path / "bin", nvcc="echo 'nvcc fatal: no GPU here' >&2; exit 1",
                  **{"nvidia-smi": "exit 0"})  # fmt: skip
    (path / "ncu").symlink_to(fake)
    proc = _run([sys.executable, str(COST / "exp1.py")], path, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("exp1.py: error: nvcc could not build")


def test_exp1_refuses_arguments(tmp_path: Path) -> None:
    proc = _run([sys.executable, str(COST / "exp1.py"), "--bogus"], tmp_path / "empty", tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("exp1.py: error: takes no arguments")


def test_exp3_without_its_tools_exits_2(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash
    path = _python(tmp_path / "bin")
    proc = _run([bash, str(COST / "exp3.sh")], path, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "exp3.sh: error: nvcc not found on PATH" in proc.stderr


def test_exp3_with_a_failing_nvcc_exits_1(tmp_path: Path) -> None:
    """Before: nvcc failed, every later command failed too (6 error texts) and it exited 0."""
    bash = shutil.which("bash")
    assert bash
    path = _tools(_python(tmp_path / "bin"), nvcc="exit 1", ncu="exit 1",
                  **{"nvidia-smi": "exit 0"})  # fmt: skip
    proc = _run([bash, str(COST / "exp3.sh")], path, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "exp3.sh: error: nvcc could not build tests/zoo/zoo.cu" in proc.stderr


def test_exp3_names_every_command_that_should_have_worked_and_exits_1(tmp_path: Path) -> None:
    """With a fake nvcc that builds programs doing nothing and tests/fake_ncu.py (no replay
    set up, so each capture fails), every capture, check and doctor run that must succeed is
    named, the error-text runs that must fail are not, and the exit code is 1."""
    bash = shutil.which("bash")
    assert bash
    build = 'while [ $# -gt 0 ]; do [ "$1" = -o ] && printf "#!/bin/sh\\n" > "$2" && chmod +x "$2"; shift; done'
    path = _tools(_python(tmp_path / "bin"), nvcc=build, **{"nvidia-smi": "exit 0"})
    (path / "ncu").symlink_to(ROOT / "tests" / "fake_ncu.py")
    proc = _run([bash, str(COST / "exp3.sh")], path, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [line for line in proc.stderr.splitlines() if line.startswith("exp3.sh: FAILED")]
    assert any("perfgate capture -b" in line and "zoo-capture-1.csv" in line for line in failed)
    assert any("perfgate check -b" in line for line in failed)
    assert not any("e-nokernels" in line or "e-exit3" in line for line in failed)  # must fail
    assert "expected to fail, succeeded" not in proc.stderr
    assert f"exp3.sh: {len(failed)} command(s) did not do what they should" in proc.stderr


def test_every_path_scripts_mutate_names_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/mutate.py runs each module's test files by path and skips a path that does not
    exist (so that `--before` can leave out the tests a run added): a test file moved or
    renamed would silently drop out of every mutation run. Every module and every test file
    its tables name exists."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mutate", ROOT / "scripts" / "mutate.py")
    assert spec is not None and spec.loader is not None
    mutate = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutate", mutate)  # its dataclasses look themselves up
    spec.loader.exec_module(mutate)
    tables = [mutate.MODULES, *mutate.SELECTION_TESTS.values()]
    named = {path for table in tables for key, tests in table.items() for path in (key, *tests)}
    named |= {path for selection in mutate.SELECTIONS.values() for path in selection}
    named |= set(mutate.ONLY_FUNCTIONS) | set(mutate.HAND_MUTANTS) | set(mutate.NEW_TESTS)
    assert len(named) > 50
    assert sorted(p for p in named if not (ROOT / p).is_file()) == []
