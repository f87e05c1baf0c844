"""Issue 12: a baseline's life in a repository. Fingerprints (one baseline per GPU), baseline
directories, accept with a reason, update and ratchet keeping hand edits, show and diff.

Every capture here is real (tests/data/h100 from an H100, tests/data/h200/real from an H200).
The `.meta.json` sidecars written by some tests are synthetic: they stand for what `perfgate
capture` writes beside a capture (ncu version, driver), which the committed captures predate.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline.load import load_baseline
from perfgate.common.errors import UsageError
from perfgate.judge.states import KernelState
from perfgate.lifecycle.edit import dump, load
from perfgate.lifecycle.ownership import calibrated_bound
from perfgate.lifecycle.record import RecordSettings
from perfgate.lifecycle.stamps import now, who
from perfgate.usecases.check import CheckRequest, run_check
from perfgate.usecases.edit import EditRequest, run_accept, run_diff, run_update
from perfgate.usecases.record import RecordRequest, run_record
from tests.conftest import ROOT, data

H200 = ROOT / "tests" / "data" / "h200" / "real"
ADD_2X = (
    "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char *, 3>> [grid 16384x1x1]"
)


def h200(name: str) -> str:
    return str(H200 / name)


def runs(build: str, prefix: str = "") -> tuple[str, ...]:
    return tuple(h200(f"{prefix}{build}-run{i}.csv") for i in (1, 2, 3))


def perfgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT
    )


def record_to(path: Path, captures: tuple[str, ...]) -> Path:
    run_record(RecordRequest(captures, str(path), RecordSettings(reason="known good")))
    return path


@pytest.fixture(scope="module")
def flash(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The FlashAttention model's baseline, recorded from 3 runs on an H200."""
    return record_to(tmp_path_factory.mktemp("flash") / "h200.yaml", runs("torch-flash"))


def copy(src: Path, tmp_path: Path, name: str = "b.yaml") -> Path:
    target = tmp_path / name
    shutil.copyfile(src, target)
    return target


# ------------------------------------------------------------------------------ fingerprint


def test_record_writes_the_fingerprint_of_the_captures(flash: Path) -> None:
    baseline = load_baseline(flash)
    fp = baseline.fingerprint
    assert fp is not None
    assert (fp.gpu, fp.cc) == ("NVIDIA H200", "9.0")
    assert fp.ncu is None  # these captures were made by hand: no sidecar says which ncu
    assert "gpu__time_duration.sum" in fp.metrics
    assert fp.stall_family == "per_warp_active" and "long_scoreboard" in fp.stall_reasons


def test_a_capture_from_another_gpu_is_refused_with_what_differs(flash: Path) -> None:
    h100 = str(data("torch-short-run1.csv"))
    proc = perfgate("check", "-b", str(flash), "-c", h100)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"perfgate: error: {h100}: captured on NVIDIA H100 80GB HBM3")
    assert f"{flash} is for NVIDIA H200 (cc 9.0)" in proc.stderr
    assert "--allow-other-gpu" in proc.stderr
    allowed = perfgate("check", "-b", str(flash), "-c", h100, "--allow-other-gpu")
    assert allowed.returncode in (0, 1)
    assert "compared anyway (--allow-other-gpu)" in allowed.stdout


def test_a_second_gpus_capture_riding_along_is_never_dropped(flash: Path) -> None:
    h100 = str(data("torch-short-run1.csv"))
    with pytest.raises(UsageError) as err:
        run_check(CheckRequest((str(flash),), (h200("start2-torch-flash-run1.csv"), h100)))
    assert err.value.lines()[0].startswith(f"{h100}: captured on NVIDIA H100 80GB HBM3")


def test_another_ncu_version_is_warned_about(flash: Path, tmp_path: Path) -> None:
    # Synthetic sidecars (see the module's text) on copies of real captures.
    versions = {"2025.3.1.0": runs("torch-flash"), "2026.1.0": runs("torch-flash", "start2-")}
    copies: dict[str, list[str]] = {}
    for version, captures in versions.items():
        for src in captures:
            target = tmp_path / f"{version}-{Path(src).name}"
            shutil.copyfile(src, target)
            meta = {"perfgate_capture": 1, "ncu_version": version, "driver": "580.159.04"}
            Path(f"{target}.meta.json").write_text(json.dumps(meta))
            copies.setdefault(version, []).append(str(target))
    baseline = record_to(tmp_path / "b.yaml", tuple(copies["2025.3.1.0"]))
    assert load_baseline(baseline).gpu.ncu == "2025.3.1.0"
    report = run_check(CheckRequest((str(baseline),), tuple(copies["2026.1.0"])))
    assert report.exit_code == 0
    (warning,) = [w for w in report.results[0].warnings if "ncu" in w]
    assert warning.startswith(
        "the capture was made with ncu 2026.1.0, the baseline with ncu 2025.3.1.0"
    )


def test_record_refuses_captures_from_two_gpus(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="the captures come from 2 GPUs"):
        run_record(
            RecordRequest(
                (h200("torch-flash-run1.csv"), str(data("torch-short-run1.csv"))),
                str(tmp_path / "b.yaml"),
                RecordSettings(),
            )
        )


# -------------------------------------------------------------------- a directory of them


@pytest.fixture(scope="module")
def per_gpu(flash: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("baselines")
    shutil.copyfile(flash, folder / "h200.yaml")
    shutil.copyfile(ROOT / "baselines" / "h100" / "torch.yaml", folder / "h100.yaml")
    (folder / "README.txt").write_text("not a baseline: ignored")
    return folder


def test_a_directory_judges_each_capture_by_its_gpu(per_gpu: Path) -> None:
    proc = perfgate(
        "check", "-b", str(per_gpu),
        "-c", h200("start2-torch-flash-run1.csv"), "-c", str(data("torch-short-run2.csv")),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # One status line: the kernels of both baselines, then each baseline's program GPU time.
    assert "(20 baselined kernels, 2 baselines); program GPU time" in lines[0]
    assert lines[0].count("program GPU time") == 2
    assert any(
        line.startswith(f"{per_gpu / 'h100.yaml'} (NVIDIA H100 80GB HBM3): ") for line in lines
    )
    assert any(line.startswith(f"{per_gpu / 'h200.yaml'} (NVIDIA H200): ") for line in lines)


def test_a_directorys_baseline_without_a_capture_is_only_noted(per_gpu: Path) -> None:
    report = run_check(CheckRequest((str(per_gpu),), (h200("start2-torch-flash-run1.csv"),)))
    assert report.exit_code == 0
    assert [r.baseline_path for r in report.results] == [str(per_gpu / "h200.yaml")]
    assert report.notes == (
        f"{per_gpu / 'h100.yaml'} (NVIDIA H100 80GB HBM3 (cc 9.0)): no capture from this GPU; "
        "not checked",
    )


def test_no_baseline_for_the_gpu_lists_what_is_there(per_gpu: Path, tmp_path: Path) -> None:
    only = tmp_path / "only-h200"
    only.mkdir()
    shutil.copyfile(per_gpu / "h200.yaml", only / "h200.yaml")
    h100 = str(data("torch-short-run1.csv"))
    proc = perfgate("check", "-b", str(only), "-c", h100)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"perfgate: error: {h100}: captured on NVIDIA H100 80GB HBM3 (cc 9.0), and no baseline "
        f"is for that GPU ({only / 'h200.yaml'} is for NVIDIA H200 (cc 9.0)): record a baseline "
        "on this GPU (perfgate baseline record) and pass it or its directory with --baseline, "
        "or pass --allow-other-gpu to compare across GPUs anyway"
    )


def test_two_baselines_for_one_gpu_are_ambiguous(per_gpu: Path, tmp_path: Path) -> None:
    twice = tmp_path / "twice"
    twice.mkdir()
    for name in ("a.yaml", "b.yml"):
        shutil.copyfile(per_gpu / "h200.yaml", twice / name)
    proc = perfgate("check", "-b", str(twice), "-c", h200("start2-torch-flash-run1.csv"))
    assert proc.returncode == 2
    assert "two baselines for NVIDIA H200 (cc 9.0)" in proc.stderr


def test_an_empty_directory_is_an_error(tmp_path: Path) -> None:
    proc = perfgate("check", "-b", str(tmp_path), "-c", h200("torch-flash-run1.csv"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"perfgate: error: {tmp_path}: holds no baseline")


# ------------------------------------------------------------------- record, never clobber


def test_record_refuses_to_replace_a_baseline(flash: Path, tmp_path: Path) -> None:
    target = copy(flash, tmp_path)
    before = target.read_bytes()
    proc = perfgate("baseline", "record", "-c", h200("torch-flash-run1.csv"), "-o", str(target))
    assert proc.returncode == 2
    assert "perfgate baseline update" in proc.stderr and "--overwrite" in proc.stderr
    assert target.read_bytes() == before
    over = perfgate(
        "baseline", "record", "-c", h200("torch-flash-run1.csv"), "-o", str(target), "--overwrite"
    )
    assert over.returncode == 0 and target.read_bytes() != before


# ------------------------------------------------------------------------- hand edits kept

COMMENT = "# keep: the attention kernel is allowed 30% (ticket PERF-12)"


def hand_edit(path: Path) -> str:
    """A reviewer's edits: a comment, a hand-set bound on one metric of the add kernel, and
    a file-wide threshold. Returns the hand-set line."""
    text = path.read_text()
    text = text.replace(
        "kernels:\n", f"thresholds:\n  launches: {{relative: 0.5}}\n{COMMENT}\nkernels:\n", 1
    )
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if ADD_2X in line)
    reg = next(i for i in range(at, len(lines)) if "registers_per_thread:" in lines[i])
    hand = "    registers_per_thread: {value: 32, threshold: {relative: 0.25}}  # hand-set\n"
    lines[reg] = hand
    path.write_text("".join(lines))
    return hand


def test_accept_takes_the_regressed_kernel_with_reason_and_keeps_hand_edits(
    flash: Path, tmp_path: Path
) -> None:
    target = copy(flash, tmp_path)
    hand = hand_edit(target)
    redundant = runs("torch-redundant")
    assert run_check(CheckRequest((str(target),), redundant)).exit_code == 1
    result = run_accept(
        EditRequest(str(target), redundant, "the add runs twice on purpose", by="Ada <a@x>")
    )
    assert [(e.kernel, e.action.value) for e in result.plan.edits] == [(ADD_2X, "accept")]
    text = target.read_text()
    assert COMMENT in text and hand in text
    assert "thresholds:\n  launches: {relative: 0.5}\n" in text
    baseline = load_baseline(target)
    kernel = next(k for k in baseline.kernels if k.id == ADD_2X)
    assert kernel.launches == 4
    (entry,) = kernel.history
    assert (entry.reason, entry.by, entry.action) == (
        "the add runs twice on purpose",
        "Ada <a@x>",
        "accept",
    )
    assert entry.previous["launches"] == 2
    assert baseline.provenance["updated_by"] == "Ada <a@x>"
    # The accepted build now passes; against it, the original build launches the add less.
    assert run_check(CheckRequest((str(target),), redundant)).exit_code == 0
    original = run_check(CheckRequest((str(target),), runs("torch-flash", "start2-")))
    assert next(v for v in original.verdicts if v.kernel == ADD_2X).state is KernelState.IMPROVED


def test_accept_with_nothing_regressed_says_so(flash: Path, tmp_path: Path) -> None:
    target = copy(flash, tmp_path)
    proc = perfgate(
        "baseline", "accept", "-b", str(target), "-c", h200("start2-torch-flash-run1.csv"),
        "--reason", "nothing",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "nothing to accept" in proc.stderr
    assert target.read_bytes() == flash.read_bytes()


def test_accept_a_substitution_removes_the_missing_kernel_and_adds_its_replacements(
    flash: Path, tmp_path: Path
) -> None:
    target = copy(flash, tmp_path)
    math = runs("torch-math")
    before = run_check(CheckRequest((str(target),), math))
    missing = [v.kernel for v in before.verdicts if v.state is KernelState.MISSING]
    assert missing
    result = run_accept(EditRequest(str(target), math, "SDPA math path on purpose", add_new=True))
    actions = {e.action.value for e in result.plan.edits}
    assert {"remove", "add"} <= actions
    baseline = load_baseline(target)
    assert not {k.id for k in baseline.kernels} & set(missing)
    removed = baseline.provenance["removed"]
    assert {r["id"] for r in removed} == set(missing)
    assert all(r["reason"] == "SDPA math path on purpose" for r in removed)
    assert run_check(CheckRequest((str(target),), runs("torch-math", ""))).exit_code == 0


def test_update_keeps_hand_edits_and_leaves_regressions_without_a_reason(
    flash: Path, tmp_path: Path
) -> None:
    target = copy(flash, tmp_path)
    hand = hand_edit(target)
    result = run_update(EditRequest(str(target), runs("torch-redundant")))
    assert any(line.startswith(f"{ADD_2X}: regressed; left as it was") for line in result.plan.left)
    text = target.read_text()
    assert COMMENT in text and hand in text
    kernel = next(k for k in load_baseline(target).kernels if k.id == ADD_2X)
    assert kernel.launches == 2 and not kernel.history
    # With a reason, the regression is taken and recorded as accepted.
    run_update(EditRequest(str(target), runs("torch-redundant"), reason="fused later"))
    kernel = next(k for k in load_baseline(target).kernels if k.id == ADD_2X)
    assert kernel.launches == 4 and kernel.history[0].action == "accept"
    assert hand in target.read_text()


def test_update_from_another_machine_start_keeps_the_file_loadable_and_passing(
    flash: Path, tmp_path: Path
) -> None:
    target = copy(flash, tmp_path)
    start2 = runs("torch-flash", "start2-")
    result = run_update(EditRequest(str(target), start2))
    assert result.changed and not result.plan.left
    assert {e.action.value for e in result.plan.edits} == {"update"}
    assert run_check(CheckRequest((str(target),), start2)).exit_code == 0
    assert run_check(CheckRequest((str(target),), runs("torch-flash"))).exit_code == 0


def test_ratchet_takes_only_improvements_and_never_loosens(tmp_path: Path) -> None:
    # Recorded on the build that launches the add twice; the fixed build launches it once.
    target = record_to(tmp_path / "b.yaml", runs("torch-redundant"))
    before = load_baseline(target)
    result = run_update(EditRequest(str(target), runs("torch-flash"), ratchet=True))
    (edit,) = result.plan.edits
    assert (edit.kernel, edit.action.value) == (ADD_2X, "ratchet")
    assert set(edit.metrics) == {"launches", "total_time"}
    assert edit.previous == {"launches": 4, "total_time": pytest.approx(177280, rel=0.01)}
    after = load_baseline(target)
    old = {m.name: m for m in next(k for k in before.kernels if k.id == ADD_2X).metrics}
    new = {m.name: m for m in next(k for k in after.kernels if k.id == ADD_2X).metrics}
    assert new["launches"].value == 2
    for name in new:
        if name not in edit.metrics:
            assert new[name] == old[name], name  # untouched, bound included
        was, now_ = calibrated_bound(old[name].calibration), calibrated_bound(new[name].calibration)
        if was and now_:
            assert now_[0] <= was[0], name
    others = [replace(k, line=None) for k in after.kernels if k.id != ADD_2X]
    assert others == [replace(k, line=None) for k in before.kernels if k.id != ADD_2X]
    # Locked in: the fixed build passes, the build with the redundant launch fails.
    assert run_check(CheckRequest((str(target),), runs("torch-flash", "start2-"))).exit_code == 0
    assert run_check(CheckRequest((str(target),), runs("torch-redundant"))).exit_code == 1


def test_ratchet_leaves_a_kernel_with_a_trade_off_alone(tmp_path: Path) -> None:
    # The pipelined Triton matmul is faster and uses more registers: not a pure improvement.
    target = record_to(tmp_path / "b.yaml", runs("triton-regressed"))
    text = target.read_text()
    result = run_update(EditRequest(str(target), runs("triton-good"), ratchet=True))
    assert not result.plan.edits and not result.changed
    assert all(": regressed; the ratchet leaves it as it was" in line for line in result.plan.left)
    assert target.read_text() == text


# ---------------------------------------------------------------------------- the writer


@pytest.mark.parametrize("name", ["zoo.yaml", "zoo-full.yaml", "torch.yaml"])
def test_the_round_trip_writer_changes_nothing_it_is_not_asked_to(name: str) -> None:
    text = (ROOT / "baselines" / "h100" / name).read_text()
    assert dump(load(text)) == text


def test_dates_and_words_yaml_would_misread_stay_strings(flash: Path, tmp_path: Path) -> None:
    target = copy(flash, tmp_path)
    run_accept(EditRequest(str(target), runs("torch-redundant"), reason="no", by="2026-01-01"))
    kernel = next(k for k in load_baseline(target).kernels if k.id == ADD_2X)
    assert (kernel.history[0].reason, kernel.history[0].by) == ("no", "2026-01-01")


# ------------------------------------------------------------------------- show and diff


def test_show_condenses_a_baseline_for_review(flash: Path, tmp_path: Path) -> None:
    target = copy(flash, tmp_path)
    hand_edit(target)
    proc = perfgate("baseline", "show", str(target), "-k", "CUDAFunctor_add<float>.*16384")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{target}: NVIDIA H200 (cc 9.0), stalls: per_warp_active")
    assert lines[0].endswith("; 12 kernels (1 shown)")
    assert "registers_per_thread 32 +25% (hand-set)" in proc.stdout
    # The file-wide threshold is what the check applies to a metric without its own.
    assert "launches 2 +50%" in proc.stdout


def test_diff_shows_what_a_reviewer_must_see(flash: Path, tmp_path: Path) -> None:
    same = perfgate("baseline", "diff", str(flash), str(flash), "--exit-code")
    assert same.returncode == 0
    assert same.stdout.strip() == f"{flash} and {flash} gate the same values"
    target = copy(flash, tmp_path)
    run_accept(EditRequest(str(target), runs("torch-redundant"), "on purpose", by="Ada"))
    d = run_diff(str(flash), str(target))
    (kernel,) = d.kernels
    assert kernel.id == ADD_2X and kernel.launches == (2, 4)
    moved = {c.metric for c in kernel.metrics if c.beyond}
    assert {"launches", "total_time"} <= moved
    assert "duration" not in moved  # the same kernel, as fast as before: within its bound
    proc = perfgate("baseline", "diff", str(flash), str(target), "--exit-code")
    assert proc.returncode == 1
    assert "launches: 2 -> 4 (+100.0%)" in proc.stdout
    assert "by Ada: on purpose (was: launches 2" in proc.stdout


# ----------------------------------------------------------------------------- who, when


def test_who_is_the_ci_actor_with_a_link_to_the_run() -> None:
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTOR": "octocat",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_RUN_ID": "42",
    }
    assert who(env) == "octocat via GitHub Actions (https://github.com/o/r/actions/runs/42)"


def test_source_date_epoch_fixes_the_date() -> None:
    assert now({"SOURCE_DATE_EPOCH": "0"}) == "1970-01-01T00:00:00Z"


def test_validate_takes_a_directory_of_baselines() -> None:
    folder = ROOT / "baselines" / "h100"
    proc = perfgate("baseline", "validate", str(folder))
    assert proc.returncode == 0
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == [
        f"ok {folder / name}" for name in ("torch.yaml", "zoo-full.yaml", "zoo.yaml")
    ]


def test_a_capture_made_by_perfgate_capture_gives_the_whole_fingerprint(tmp_path: Path) -> None:
    # Real: `perfgate capture` of the PyTorch model on an H200, with its sidecars.
    made = ROOT / "tests" / "data" / "h200" / "capture"
    captures = (str(made / "torch-capture.csv"), str(made / "torch-capture-2.csv"))
    fp = load_baseline(record_to(tmp_path / "b.yaml", captures)).fingerprint
    assert fp is not None
    assert (fp.gpu, fp.cc, fp.ncu, fp.driver, fp.clock_control) == (
        "NVIDIA H200", "9.0", "2025.3.1.0", "580.159.04", "none",
    )  # fmt: skip
    assert fp.stall_family == "per_issue_active"  # the family perfgate capture asks for


def test_a_capture_of_a_failed_program_is_checked_with_a_warning(
    flash: Path, tmp_path: Path
) -> None:
    # A real capture with a sidecar saying the program failed (the code is synthetic: the
    # committed failed runs wrote no capture).
    src = h200("start2-torch-flash-run1.csv")
    target = tmp_path / "cap.csv"
    shutil.copyfile(src, target)
    Path(f"{target}.meta.json").write_text(
        json.dumps({"perfgate_capture": 1, "program_exit_code": 3})
    )
    report = run_check(CheckRequest((str(flash),), (str(target),)))
    assert any(
        w.startswith(f"{target}: the program exited with code 3")
        for w in report.results[0].warnings
    )
