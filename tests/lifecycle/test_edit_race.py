"""Two `baseline accept`/`update` runs on one file at once (issue 23): an edit applies by kernel
id to the very text that was validated, under a lock on a sibling lock file, and is written only
if the file still holds that text (compare-and-swap): otherwise exit 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from perfgate.baseline.load import parse_baseline
from perfgate.cli import main
from perfgate.common import fileio
from perfgate.common.errors import UsageError
from perfgate.ingest import read_captures
from perfgate.lifecycle import edit
from perfgate.lifecycle.plan import plan_update
from perfgate.lifecycle.stamps import Stamp
from tests.conftest import ROOT, data

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
BAD = data("zoo-bad-short-run1.csv")
MARK = "# a line another run wrote\n"


def _update(target: Path) -> tuple[int, str]:
    args = ["baseline", "update", "-b", str(target), "-c", str(BAD), "--reason", "bad build"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output


def test_a_file_changed_between_validation_and_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "zoo.yaml"
    target.write_bytes(ZOO.read_bytes())
    original = edit.apply

    def meanwhile(*args: object, **kwargs: object) -> str:
        # Another run's edit lands after this one validated the file.
        target.write_text(target.read_text() + MARK)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(edit, "apply", meanwhile)
    code, output = _update(target)
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines == [f"perfgate: error: {target}: changed while perfgate was editing it; run again"]
    assert target.read_text() == ZOO.read_text() + MARK  # the other run's edit stands


def test_a_second_run_waits_for_the_first_and_loses_nothing(tmp_path: Path) -> None:
    target = tmp_path / "zoo.yaml"
    target.write_bytes(ZOO.read_bytes())
    # Another run holds the documented lock (flock on the sibling `.zoo.yaml.lock`) while it
    # reads the file, works for a second, and writes its edit.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            "from pathlib import Path\n"
            "p = Path(sys.argv[1])\n"
            "with open(p.with_name('.' + p.name + '.lock'), 'a') as lock:\n"
            "    fcntl.flock(lock, fcntl.LOCK_EX)\n"
            "    text = p.read_text()\n"
            "    print('locked', flush=True)\n"
            "    time.sleep(1.0)\n"
            "    p.write_text(text + sys.argv[2])\n",
            str(target),
            MARK,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    started = time.monotonic()
    code, output = _update(target)
    assert holder.wait(30) == 0
    assert code == 0, output
    assert time.monotonic() - started > 0.5  # it waited for the lock
    text = target.read_text()
    assert MARK in text, "the first run's edit was lost"
    assert "reason: bad build" in text, "the second run's edit was lost"
    assert parse_baseline(text, str(target)).kernels
    assert fileio.lock_path(target).exists()


def test_a_lock_held_too_long_is_one_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "zoo.yaml"
    target.write_bytes(ZOO.read_bytes())
    with fileio.locked(target), pytest.raises(UsageError) as caught, fileio.locked(target, 0.2):
        pass
    assert "another perfgate run has been editing it" in str(caught.value)
    assert str(target) in str(caught.value)


def _kernels(text: str) -> dict[str, object]:
    doc = yaml.safe_load(text)
    return {k["id"]: k for k in doc["kernels"]}


def test_edits_land_on_their_kernel_id_not_their_list_position() -> None:
    text = ZOO.read_text()
    baseline = parse_baseline(text, str(ZOO))
    plan = plan_update(baseline, read_captures([str(BAD)]), take_regressions=True)
    when = Stamp("2026-11-23T00:00:00Z", "test")
    in_order = _kernels(edit.apply(text, baseline, plan, "bad build", when))
    # The same entries in the opposite order (another run reordered the file).
    head, *entries = text.split("\n- id: ")
    entries[-1] = entries[-1].rstrip("\n") + "\n"
    reordered = head + "".join("\n- id: " + e.rstrip("\n") for e in reversed(entries)) + "\n"
    assert [*_kernels(reordered)] == [*reversed([*_kernels(text)])]
    moved = _kernels(edit.apply(reordered, baseline, plan, "bad build", when))
    assert moved == in_order


def test_an_edit_of_perfgates_that_would_not_load_is_its_bug_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "zoo.yaml"
    target.write_bytes(ZOO.read_bytes())
    original = edit.apply

    def broken(*args: object, **kwargs: object) -> str:
        text = original(*args, **kwargs)  # type: ignore[arg-type]
        return text.replace("- id: zoo_atomics\n", "- id: zoo_coalescing\n")

    monkeypatch.setattr(edit, "apply", broken)
    code, output = _update(target)
    assert code == 3, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and "perfgate's edit of it would not load" in lines[0], output
    assert target.read_bytes() == ZOO.read_bytes()
