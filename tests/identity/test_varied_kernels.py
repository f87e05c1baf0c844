"""Kernels only some of a baseline's recorded runs launched (docs/identity.md "Kernels that
vary between runs"): recorded with how many runs launched them, warned about at record time,
and not required by a check.

The captures are real: h100-m's three MoE gate runs (tests/data/field/gate/README.md), whose
third process routed its tokens to other experts (75 launches against 45), and h100-n's run,
which routed like the first two.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.load import load_baseline
from perfgate.common.errors import BaselineError
from perfgate.ingest import read_captures
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check

GATE = Path(__file__).resolve().parents[1] / "data" / "field" / "gate"
RUNS = [GATE / "h100-m" / f"moe-run{i}.csv.gz" for i in (1, 2, 3)]
LIKE_THE_FIRST_TWO = GATE / "h100-n" / "moe-run1.csv.gz"


@pytest.fixture(scope="module")
def recorded() -> object:
    return record(read_captures(RUNS), RecordSettings())


def test_record_marks_what_only_some_runs_launched_and_warns(recorded: object) -> None:
    result = recorded
    kernels = result.baseline.kernels  # type: ignore[attr-defined]
    varied = [k for k in kernels if k.seen_in is not None]
    assert {k.seen_in for k in varied} == {(1, 3), (2, 3)}
    assert len(varied) == 23 and len(kernels) - len(varied) == 28
    warning = next(w for w in result.warnings if "only some of the 3 runs" in w)  # type: ignore[attr-defined]
    assert warning.startswith("23 kernel(s) were launched in only some of the 3 runs")
    # Four named with their counts, the other 19 counted.
    named = warning.split(": ", 1)[1].split(" and 19 more.")[0]
    assert named.count(" of 3)") == 4 and " and 19 more." in warning
    assert "torch.empty" in warning and "not require" in warning


def test_a_baseline_from_runs_that_agree_has_no_mark() -> None:
    same = record(read_captures(RUNS[:2]), RecordSettings())
    assert not [k for k in same.baseline.kernels if k.seen_in is not None]
    assert not [w for w in same.warnings if "only some" in w]


def test_the_mark_survives_the_file(recorded: object, tmp_path: Path) -> None:
    baseline = recorded.baseline  # type: ignore[attr-defined]
    path = tmp_path / "moe.yaml"
    path.write_text(dump_baseline(baseline))
    assert "seen_in: {runs: 1, of: 3}" in path.read_text()
    again = load_baseline(path)
    assert [k.seen_in for k in again.kernels] == [k.seen_in for k in baseline.kernels]


@pytest.mark.parametrize("runs, of", [(3, 3), (4, 3)])
def test_a_mark_that_says_every_run_is_refused(
    recorded: object, tmp_path: Path, runs: int, of: int
) -> None:
    """A kernel every recorded run launched is required: a hand-edited mark that says so would
    let a check skip it."""
    text = dump_baseline(recorded.baseline)  # type: ignore[attr-defined]
    edited = text.replace("seen_in: {runs: 1, of: 3}", f"seen_in: {{runs: {runs}, of: {of}}}", 1)
    assert edited != text
    path = tmp_path / "edited.yaml"
    path.write_text(edited)
    with pytest.raises(BaselineError, match=f"runs {runs} of {of}"):
        load_baseline(path)


def test_a_check_skips_them_with_the_reason_and_requires_the_rest(recorded: object) -> None:
    baseline = recorded.baseline  # type: ignore[attr-defined]
    capture = read_captures([LIKE_THE_FIRST_TWO])
    result = check(baseline, capture)
    states = {v.kernel: v for v in result.verdicts}
    skipped = [v for v in result.verdicts if v.state is KernelState.SKIPPED]
    assert len(skipped) == 21
    assert all(
        "as in 2 of the baseline's 3 recorded runs (only 1 launched it)" in v.message
        for v in skipped
    )
    # The two GEMMs the third run did not launch are in this capture: judged, not skipped.
    for kernel in baseline.kernels:
        if kernel.seen_in == (2, 3):
            assert states[kernel.id].state is KernelState.PASS, states[kernel.id]
    assert not [v for v in result.verdicts if v.state is KernelState.MISSING]
    assert int(result.exit_code) == 0


def test_a_kernel_every_run_launched_is_still_missing(recorded: object) -> None:
    from dataclasses import replace

    baseline = recorded.baseline  # type: ignore[attr-defined]
    required = next(k for k in baseline.kernels if k.seen_in is None and k.match.name)
    capture = read_captures([LIKE_THE_FIRST_TWO])
    without = replace(
        capture, launches=tuple(la for la in capture.launches if la.name != required.match.name)
    )
    result = check(baseline, without)
    states = {v.kernel: v.state for v in result.verdicts}
    assert states[required.id] is KernelState.MISSING
    assert int(result.exit_code) == 1


def test_record_and_check_as_a_user_runs_them(tmp_path: Path) -> None:
    """`perfgate baseline record` prints the warning; `perfgate check` lists the kernels as
    skipped with the reason and exits 0."""
    out = tmp_path / "moe.yaml"
    rec = subprocess.run(
        [sys.executable, "-m", "perfgate", "baseline", "record", "-o", str(out),
         *(a for p in RUNS for a in ("-c", str(p)))],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert rec.returncode == 0, rec.stderr
    assert "23 kernel(s) were launched in only some of the 3 runs" in rec.stderr + rec.stdout
    md = tmp_path / "report.md"
    chk = subprocess.run(
        [sys.executable, "-m", "perfgate", "check", "-b", str(out), "--markdown", str(md),
         "-c", str(LIKE_THE_FIRST_TWO)],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert chk.returncode == 0, chk.stdout + chk.stderr
    assert "as in 2 of the baseline's 3 recorded runs" in md.read_text()
