"""Bad and odd inputs (tests/corpus, made by tests/corpus/make_corpus.py) through the command
line: each gets its documented exit code and one message naming the file, never a traceback,
and nothing in them is ever executed."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import DATA, ROOT

CORPUS = ROOT / "tests" / "corpus"
EXPECT = yaml.safe_load((CORPUS / "expectations.yaml").read_text())
ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
PWNED = Path("/tmp/perfgate-corpus-pwned")

CASES = (
    [("capture", CORPUS / "captures" / name, e) for name, e in EXPECT["captures"].items()]
    + [("capture", DATA / name, e) for name, e in EXPECT["real_captures"].items()]
    + [("baseline", CORPUS / "baselines" / name, e) for name, e in EXPECT["baselines"].items()]
)


def test_every_corpus_file_has_an_expectation() -> None:
    listed = {p.name for kind, p, _ in CASES if p.parent.parent == CORPUS}
    present = {p.name for folder in ("captures", "baselines") for p in (CORPUS / folder).iterdir()}
    assert listed == present


@pytest.mark.parametrize(
    ("kind", "path", "expect"), CASES, ids=[f"{k}:{p.name}" for k, p, _ in CASES]
)
def test_corpus(kind: str, path: Path, expect: dict[str, object]) -> None:
    PWNED.unlink(missing_ok=True)
    if kind == "capture":
        args = ["check", "--baseline", str(ZOO), "--capture", str(path)]
    else:
        args = [
            "check",
            "--baseline",
            str(path),
            "--capture",
            str(DATA / "zoo-good-short-run1.csv"),
        ]
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert time.perf_counter() - start < 20
    assert proc.returncode == expect["exit"], proc.stdout[-1500:] + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not PWNED.exists()
    if expect["exit"] == 2:
        lines = proc.stderr.strip().splitlines()
        assert lines and all(line.startswith(f"perfgate: error: {path}") for line in lines), (
            proc.stderr
        )
        assert len(lines) == 1 or all(
            re.match(rf"perfgate: error: {re.escape(str(path))}:\d+:\d+: \$", line)
            for line in lines
        )
        assert re.search(str(expect["stderr"]), lines[0]), lines[0]
    else:
        assert proc.stderr == ""
        assert re.search(str(expect["stdout"]), proc.stdout, re.M), proc.stdout[:2000]


def test_debug_shows_the_traceback_that_is_otherwise_hidden() -> None:
    path = CORPUS / "captures" / "cut-mid-row.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "--debug", "check", "--baseline", str(ZOO), "--capture", str(path)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith(
        "perfgate: error: "
    )


def test_missing_paths_and_directories(tmp_path: Path) -> None:
    for args in (
        ["check", "--baseline", str(ZOO), "--capture", str(tmp_path / "nope.csv")],
        [
            "check",
            "--baseline",
            str(tmp_path / "nope.yaml"),
            "--capture",
            str(DATA / "zoo-good-short-run1.csv"),
        ],
        ["check", "--baseline", str(ZOO), "--capture", str(tmp_path)],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT
        )
        assert proc.returncode == 2
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_oversized_baseline_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("w") as fh:
        fh.write("format_version: 1\nkernels:\n")
        line = "- {id: k, match: {function: k}, metrics: {duration: {value: 1}}}\n"
        fh.write(line * (17 * 1024 * 1024 // len(line)))
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "baseline", "validate", str(big)], capture_output=True, text=True, cwd=ROOT
    )  # fmt: skip
    assert proc.returncode == 2 and "a baseline is at most 16,777,216" in proc.stderr
