"""A run held to its own machine start's runs (perfgate.history.detect.held_points): the start
is read from the captures' sidecars, kept with each result, read back with each point, and
`history detect --drift` and `check --history --drift` hold a run to the earlier runs of its
start where the start holds enough of them (docs/history.md "Drift").

The captures are the families' real NVRTC captures of two machine starts (fam-a, fam-b) and
fam-b's real change (nvrtc-uncoalesced: the copy kernel reads with a 32-way stride, +47%). They
were captured before `perfgate capture` wrote sidecars; each copy here gets a sidecar naming
the start it was captured on, as `perfgate capture` would have written it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.history import changepoints as cp
from perfgate.history import detect
from perfgate.history.records import machine_start
from tests.history.test_history_changepoints import FAMILIES, invoke, nvrtc_baseline

STARTS = {"fam-a": "a1a1a1a1a1a1a1a1", "fam-b": "b2b2b2b2b2b2b2b2"}


def _copy(tmp: Path, capture: str, start: str | None, sidecar: bool = True) -> Path:
    """The family capture `capture` ("fam-b/nvrtc-run1") copied, with a sidecar naming
    `start` (a sidecar that names none where it is None, as an older perfgate wrote)."""
    src = FAMILIES / f"{capture}.csv.gz"
    dest = tmp / capture.replace("/", "-")
    dest = dest.with_name(dest.name + ".csv.gz")
    shutil.copyfile(src, dest)
    if sidecar:
        meta = {"perfgate_capture": 1, "gpu": "NVIDIA H100 80GB HBM3", "machine_start": start}
        Path(f"{dest}.meta.json").write_text(json.dumps(meta), "utf-8")
    return dest


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return nvrtc_baseline(tmp_path_factory.mktemp("baseline"))


def _history(tmp: Path, baseline: Path, own_runs: int) -> Path:
    """main: fam-a's three runs five times over (15 runs of start a), then fam-b's run
    `own_runs` times (start b), each a run of its own."""
    db = tmp / "history.sqlite"
    runs = [_copy(tmp, f"fam-a/nvrtc-run{i}", STARTS["fam-a"]) for i in (1, 2, 3)] * 5
    runs += [_copy(tmp, "fam-b/nvrtc-run1", STARTS["fam-b"])] * own_runs
    for n, capture in enumerate(runs, 1):
        code, _, err = invoke("history", "add", "--db", str(db), "-b", str(baseline),
                              "-c", str(capture), "--run-id", f"run-{n:02d}", "--branch", "main")  # fmt: skip
        assert code == 0, err
    return db


def _changed(tmp: Path, start: str | None) -> Path:
    return _copy(tmp, "fam-b/nvrtc-uncoalesced-run1", start)


def test_a_result_keeps_the_machine_start_its_sidecars_name(tmp_path: Path) -> None:
    a1 = _copy(tmp_path, "fam-a/nvrtc-run1", STARTS["fam-a"])
    a2 = _copy(tmp_path, "fam-a/nvrtc-run2", STARTS["fam-a"])
    b1 = _copy(tmp_path, "fam-b/nvrtc-run1", STARTS["fam-b"])
    unsaid = _copy(tmp_path, "fam-a/nvrtc-run3", None)
    (tmp_path / "bare").mkdir()
    bare = _copy(tmp_path / "bare", "fam-a/nvrtc-run3", None, sidecar=False)
    assert machine_start([str(a1), str(a2)]) == STARTS["fam-a"]
    assert machine_start([str(a1), str(b1)]) is None  # two starts: neither's series
    assert machine_start([str(a1), str(unsaid)]) is None  # one does not say
    assert machine_start([str(a1), str(bare)]) is None  # one has no sidecar
    assert machine_start([str(unsaid)]) is None
    assert machine_start([str(bare)]) is None
    assert machine_start([]) is None


def test_each_point_of_a_series_names_its_run_s_machine_start(
    tmp_path: Path, baseline: Path
) -> None:
    db = _history(tmp_path, baseline, 2)
    code, out, err = invoke("history", "show", "--db", str(db), "copy_vec", "-m", "duration",
                            "--format", "json")  # fmt: skip
    assert code == 0, err
    (series,) = json.loads(out)["series"]
    starts = [p["machine_start"] for p in series["points"]]
    assert starts == [STARTS["fam-a"]] * 15 + [STARTS["fam-b"]] * 2


@pytest.mark.parametrize(("own_runs", "own"), [(10, True), (9, False)])
def test_a_run_is_held_to_its_own_start_once_it_holds_enough_runs(
    tmp_path: Path, baseline: Path, own_runs: int, own: bool
) -> None:
    db = _history(tmp_path, baseline, own_runs)
    changed = _changed(tmp_path, STARTS["fam-b"])
    code, _, err = invoke("history", "add", "--db", str(db), "-b", str(baseline), "-c",
                          str(changed), "--run-id", "judged", "--branch", "main")  # fmt: skip
    assert code == 0, err
    code, out, err = invoke("history", "detect", "--db", str(db), "--drift", "copy_vec", "-m",
                            "duration", "--format", "json")  # fmt: skip
    assert code == 0, err
    (flag,) = json.loads(out)["drifts"]
    assert flag["own_machine_start"] is own
    # Its own start's runs only, or the 30 newest of every start's.
    assert flag["runs"] == (own_runs if own else 15 + own_runs)
    code, text, _ = invoke("history", "detect", "--db", str(db), "--drift", "copy_vec", "-m",
                           "duration")  # fmt: skip
    said = (
        f"over the last {flag['runs']} runs of its machine start ("
        if own
        else (f"over the last {flag['runs']} runs (")
    )
    assert said in text and ("of its machine start" in text) is own


def test_a_check_held_to_the_history_uses_its_own_start_too(tmp_path: Path, baseline: Path) -> None:
    db = _history(tmp_path, baseline, 10)
    changed = _changed(tmp_path, STARTS["fam-b"])
    code, _, err = invoke("check", "-b", str(baseline), "-c", str(changed), "--history",
                          str(db), "--drift", "main")  # fmt: skip
    assert code == 1  # the check's own verdict: the copy kernel regressed
    assert "copy_vec duration:" in err
    assert "over the last 10 runs of its machine start (" in err
    # A sidecar that names no start (an older perfgate's): held to every start's runs.
    (tmp_path / "bare").mkdir()
    bare = _changed(tmp_path / "bare", None)
    code, _, err = invoke("check", "-b", str(baseline), "-c", str(bare), "--history", str(db),
                          "--drift", "main")  # fmt: skip
    assert code == 1
    assert "over the last 25 runs (" in err and "of its machine start" not in err


def _points(starts: list[str | None]) -> list[detect.RunPoint]:
    return [
        detect.RunPoint(f"r{i}", f"2026-11-26T10:{i:02d}", None, "main", 1.0, "pass", None, s)
        for i, s in enumerate(starts)
    ]


def test_held_points_takes_the_start_s_runs_from_its_minimum() -> None:
    rule = replace(cp.DEFAULT_DRIFT, min_runs=3)
    mixed = _points(["a", "b", "a", None, "a", "b"])
    mine, own = detect.held_points(mixed, "a", rule)
    assert own and [p.run_id for p in mine] == ["r0", "r2", "r4"]
    everyone, own = detect.held_points(mixed, "b", rule)  # two of b: fewer than 3
    assert not own and len(everyone) == 6
    everyone, own = detect.held_points(mixed, None, rule)  # a run of no known start
    assert not own and len(everyone) == 6
    # Points of no known start are no one's: a run of no start is not held to them alone.
    nobody = _points([None] * 6)
    assert detect.held_points(nobody, None, rule) == (tuple(nobody), False)
