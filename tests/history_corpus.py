"""A real history for the trend tests: the field corpus' transformers decoder (hf-decoder,
tests/data/field/README.md) recorded as a baseline from machine start A's three runs, then
checked and kept run by run: starts A to F of the unchanged build and, between them, two real
changes of start E (the SDPA math backend and eager attention), which regress kernels.

Each run is stored with `perfgate history add`, with a commit of its own; one branch name is
hostile markup, so a page that shows it unescaped would run it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from perfgate.cli import main
from tests.conftest import ROOT

FIELD = ROOT / "tests" / "data" / "field"
WORKLOAD = "hf-decoder"
HOSTILE_BRANCH = "fix/<script>alert(1)</script>&<b>x</b>"

# (capture under tests/data/field, the check's verdict word): oldest first.
RUNS: tuple[tuple[str, str], ...] = (
    ("h100/h100-a/hf-decoder-run1.csv.gz", "passed"),
    ("h100/h100-a/hf-decoder-run2.csv.gz", "passed"),
    ("h100/h100-a/hf-decoder-run3.csv.gz", "passed"),
    ("h100/h100-b/hf-decoder-run1.csv.gz", "passed"),
    ("h100/h100-b/hf-decoder-run2.csv.gz", "passed"),
    ("h100/h100-c/hf-decoder-run1.csv.gz", "passed"),
    ("h100/h100-c/hf-decoder-run2.csv.gz", "passed"),
    ("h100/h100-d/hf-decoder-run1.csv.gz", "passed"),
    ("changes/h100-e/hf-decoder-sdpa-math-run1.csv.gz", "failed"),
    ("changes/h100-e/hf-decoder-eager-run1.csv.gz", "failed"),
    ("h100/h100-e/hf-decoder-run1.csv.gz", "passed"),
    ("h100/h100-f/hf-decoder-run1.csv.gz", "passed"),
)
REGRESSED_CHANGE = FIELD / "changes" / "h100-e" / "hf-decoder-sdpa-math-run1.csv.gz"


def commit(n: int) -> str:
    return f"{n:02d}c0ffee" + "0" * 32


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def record_baseline(folder: Path) -> Path:
    baseline = folder / f"{WORKLOAD}.yaml"
    runs = [FIELD / "h100" / "h100-a" / f"{WORKLOAD}-run{i}.csv.gz" for i in (1, 2, 3)]
    code, _, err = invoke("baseline", "record", *(a for r in runs for a in ("-c", str(r))),
                          "-o", str(baseline))  # fmt: skip
    assert code == 0, err
    return baseline


def build(folder: Path, runs: int = len(RUNS)) -> tuple[Path, Path]:
    """The baseline and a history of the first `runs` runs, in `folder`."""
    baseline = record_baseline(folder)
    db = folder / "history.sqlite"
    for n, (capture, verdict) in enumerate(RUNS[:runs], 1):
        branch = HOSTILE_BRANCH if n == 4 else "main"
        code, out, err = invoke(
            "history", "add", "--db", str(db), "-b", str(baseline), "-c", str(FIELD / capture),
            "--run-id", f"run-{n:02d}", "--commit", commit(n), "--branch", branch,
        )  # fmt: skip
        assert code == 0, err
        assert f"(the check {verdict})" in out, (capture, out)
    return baseline, db
