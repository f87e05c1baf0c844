"""Values a gate can trust: a NaN, infinite or negative counter, or a counter in an unexpected
unit, is refused with exit 2 naming the file and the column (captures derived from a real
one by changing one field, each test says which)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, data

BASELINE = ROOT / "baselines" / "h100" / "zoo.yaml"
COLUMN = "gpu__time_duration.sum"


def _derived(tmp_path: Path, value: str | None = None, unit: str | None = None) -> Path:
    text = data("zoo-good-short-run1.csv").read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    header = next(csv.reader([lines[at]]))
    col = header.index(COLUMN)

    def edit(i: int, new: str) -> None:
        row = next(csv.reader([lines[i]]))
        row[col] = new
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(row)
        lines[i] = out.getvalue()

    if unit is not None:
        edit(at + 1, unit)
    if value is not None:
        edit(at + 2, value)
    path = tmp_path / "derived.csv"
    path.write_text("".join(lines))
    return path


def _check(capture: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", "check", "-b", str(BASELINE), "-c", str(capture)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "unit", "says"),
    [
        ("1e309", None, "is infinite"),
        ("-13,632", None, "is negative"),
        (None, "furlong", "is in 'furlong', perfgate expects 'ns'"),
    ],
)
def test_unusable_values_and_units_exit_2_naming_the_column(
    tmp_path: Path, value: str | None, unit: str | None, says: str
) -> None:
    proc = _check(_derived(tmp_path, value, unit))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert str(tmp_path / "derived.csv") in lines[0] and COLUMN in lines[0] and says in lines[0]


def test_the_unchanged_capture_passes(tmp_path: Path) -> None:
    proc = _check(_derived(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("bad", [".nan", ".inf", "-3"])
def test_a_baseline_holding_nan_infinity_or_a_negative_count_is_refused(
    tmp_path: Path, bad: str
) -> None:
    text = BASELINE.read_text()
    marker = "registers_per_thread: {value: 16}"
    assert marker in text
    path = tmp_path / "b.yaml"
    path.write_text(text.replace(marker, f"registers_per_thread: {{value: {bad}}}", 1))
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "baseline", "validate", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "registers_per_thread.value" in proc.stderr
    assert ("not a finite number" in proc.stderr) or ("negative" in proc.stderr)
