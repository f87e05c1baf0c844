"""`perfgate capture` without a GPU: the ncu command it builds from baselines, and runs of a
stand-in ncu (tests/fake_ncu.py) that replays real ncu texts recorded on an H200."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from perfgate.baseline.load import load_baseline
from perfgate.common.errors import UsageError
from perfgate.metrics.passes import CLOCK_METRICS
from perfgate.ncu.command import (
    CAPTURE_STALL_FAMILY,
    MAX_FILTER,
    CaptureOptions,
    ClockControl,
    build_plan,
    escape_regex,
    gated_metrics,
)
from tests.conftest import ROOT

TEXTS = ROOT / "tests" / "data" / "h200" / "capture"
REAL = ROOT / "tests" / "data" / "h200" / "real"
FAKE_NCU = str(ROOT / "tests" / "fake_ncu.py")


def perfgate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, **(env or {})}, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def zoo_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default baseline recorded from three real H200 captures of the zoo."""
    out = tmp_path_factory.mktemp("b") / "zoo.yaml"
    runs = [a for i in (1, 2, 3) for a in ("-c", str(REAL / f"start2-zoo-good-run{i}.csv"))]
    proc = perfgate("baseline", "record", *runs, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _plan(baseline: Path, **kw: object) -> object:
    options = CaptureOptions((str(baseline),), ("./app",), **kw)  # type: ignore[arg-type]
    return build_plan(options, "/tmp/r", "/tmp/l")


def _option(argv: tuple[str, ...], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_metrics_are_what_the_baseline_gates(zoo_baseline: Path) -> None:
    plan = _plan(zoo_baseline)
    metrics = _option(plan.profile, "--metrics").split(",")
    # Every raw metric the baseline's formulas read on CC 9.0, nothing of the catalog's
    # opt-in metrics, and the stall family that costs fewest passes.
    assert "gpu__time_duration.sum" in metrics and "launch__registers_per_thread" in metrics
    assert "sm__throughput.avg.pct_of_peak_sustained_elapsed" not in metrics  # opt-in metric
    stall = [m for m in metrics if "issue_stalled" in m]
    assert stall and all("_per_issue_active.ratio" in m for m in stall)
    assert CAPTURE_STALL_FAMILY == "per_issue_active"
    assert not any("not_selected" in m for m in stall)  # no stall: never gated
    assert any("stalled_selected_" in m for m in stall)  # stall_cpi divides by it
    # 28 counters and launch attributes, 18 stall, 3 clock (no baseline gates them: they
    # come with every capture so a duration can be read against its clock), 1 free.
    assert len(metrics) == 50, metrics
    assert metrics[-4:-1] == list(CLOCK_METRICS)
    assert _option(plan.profile, "--clock-control") == "none"


def test_clock_control_is_the_users_choice_and_recorded(zoo_baseline: Path) -> None:
    """ncu's own default is base (clocks locked per kernel); perfgate passes none unless the
    user asks for base, and the sidecar records which (perfgate.ncu.runner)."""
    plan = _plan(zoo_baseline, clock_control=ClockControl.BASE)
    assert _option(plan.profile, "--clock-control") == "base"
    assert [c.value for c in ClockControl] == ["none", "base"]


def test_dominant_stall_asks_every_recorded_reason(zoo_baseline: Path) -> None:
    baseline = load_baseline(zoo_baseline)
    reasons = {
        r for k in baseline.kernels for m in k.metrics if m.name == "dominant_stall"
        for r in (m.reasons or ())
    }  # fmt: skip
    names = gated_metrics([baseline], "9.0")
    for reason in reasons:
        assert f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio" in names


def test_sampled_stalls_stay_sampled(tmp_path: Path, zoo_baseline: Path) -> None:
    data = yaml.safe_load(zoo_baseline.read_text())
    data["kernels"] = data["kernels"][:1]
    data["kernels"][0]["metrics"] = {
        "stall.long_scoreboard": {
            "value": 50,
            "group": "sampling",
            "reasons": ["long_scoreboard", "wait"],
        }
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    metrics = _option(_plan(path).profile, "--metrics").split(",")
    assert "smsp__pcsamp_warps_issue_stalled_long_scoreboard" in metrics
    assert "smsp__pcsamp_warps_issue_stalled_wait" in metrics
    assert not any("per_issue_active" in m for m in metrics)


def test_kernel_filter_is_the_baselined_functions(zoo_baseline: Path) -> None:
    plan = _plan(zoo_baseline, kernels=("^extra$",))
    argv = plan.profile
    assert _option(argv, "--kernel-name-base") == "function"
    regex = _option(argv, "--kernel-name")
    assert regex.startswith("regex:")
    pattern = re.compile(regex[len("regex:") :])
    for kernel in load_baseline(zoo_baseline).kernels:
        assert kernel.match.name
        assert pattern.search(kernel.match.name.split("(")[0])
    assert pattern.search("extra")
    assert not pattern.search("zoo_coalescing_v2") and not pattern.search("other_kernel")


def test_templated_names_filter_on_their_function(tmp_path: Path) -> None:
    # The CSV prints "<4, ...>" and "at::"; ncu matches a demangled filter against
    # "<(int)4, ...>" and "at::native::" (seen on the H200), so the function base is used.
    runs = [a for i in (1, 2) for a in ("-c", str(REAL / f"torch-flash-run{i}.csv"))]
    out = tmp_path / "torch.yaml"
    assert perfgate("baseline", "record", *runs, "-o", str(out)).returncode == 0
    regex = _option(_plan(out).profile, "--kernel-name")[len("regex:") :]
    pattern = re.compile(regex)
    for seen in ("vectorized_elementwise_kernel", "nchwToNhwcKernel", "flash_fwd_kernel",
                 "vectorized_layer_norm_kernel", "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"):  # fmt: skip
        assert pattern.fullmatch(seen), seen
    assert "<" not in regex and "::" not in regex


def test_escape_regex_leaves_spaces_and_commas() -> None:
    name = "void at::reduce_kernel<512, 1>(T3) [x]*+?|^$.{}"
    escaped = escape_regex(name)
    assert re.fullmatch(escaped, name)
    assert "\\ " not in escaped and "\\," not in escaped  # ECMAScript rejects those escapes


def test_regex_matches_and_long_filters_profile_everything(
    tmp_path: Path, zoo_baseline: Path
) -> None:
    data = yaml.safe_load(zoo_baseline.read_text())
    data["kernels"][0]["match"] = {"regex": "zoo_.*"}
    path = tmp_path / "rx.yaml"
    path.write_text(yaml.safe_dump(data))
    plan = _plan(path)
    assert "--kernel-name" not in plan.profile and any("by regex" in n for n in plan.notes)
    template = yaml.safe_load(zoo_baseline.read_text())["kernels"][0]
    data["kernels"] = [
        {**copy.deepcopy(template), "id": f"k{i}", "match": {"name": f"kernel_{i}_{'x' * 200}(int)"}}
        for i in range(40)
    ]  # fmt: skip
    path.write_text(yaml.safe_dump(data))
    plan = _plan(path)
    assert "--kernel-name" not in plan.profile
    assert any(f"over {MAX_FILTER}" in n for n in plan.notes)


def test_all_kernels_drops_the_filter(zoo_baseline: Path) -> None:
    assert "--kernel-name" not in _plan(zoo_baseline, all_kernels=True).profile


def test_options_and_program_pass_through(zoo_baseline: Path) -> None:
    program = (sys.executable, "-c", "print(1)", "a b", 'it\'s "q"', "$HOME;ls", "--flag")
    options = CaptureOptions(
        (str(zoo_baseline),), program, replay_mode="application", launch_skip=2,
        launch_count=5, nvtx_include=("perfgate/",),
    )  # fmt: skip
    argv = build_plan(options, "/tmp/r", "/tmp/l").profile
    assert argv[-len(program) :] == program  # an argument list, untouched
    assert _option(argv, "--replay-mode") == "application"
    assert _option(argv, "--launch-skip") == "2" and _option(argv, "--launch-count") == "5"
    assert "--nvtx" in argv and _option(argv, "--nvtx-include") == "perfgate/"
    assert _option(argv, "--export") == "/tmp/r" and _option(argv, "--log-file") == "/tmp/l"


def test_program_named_like_an_option_is_a_path(zoo_baseline: Path) -> None:
    options = CaptureOptions((str(zoo_baseline),), ("-weird", "x"))
    assert build_plan(options, "r", "l").profile[-2:] == ("./-weird", "x")


def test_directory_of_baselines(tmp_path: Path, zoo_baseline: Path) -> None:
    (tmp_path / "a.yaml").write_text(zoo_baseline.read_text())
    (tmp_path / "notes.txt").write_text("not a baseline")
    plan = build_plan(CaptureOptions((str(tmp_path),), ("./app",)), "r", "l")
    assert plan.baselines == (str(tmp_path / "a.yaml"),)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match=r"no \*\.yaml"):
        build_plan(CaptureOptions((str(empty),), ("./app",)), "r", "l")


def test_the_programs_options_stay_the_programs_without_a_double_dash(
    tmp_path: Path, zoo_baseline: Path
) -> None:
    """`perfgate capture ... ./bench -q --color never`: -q and --color are also perfgate's own
    options, but after the program they are the program's (issue 23)."""
    out = tmp_path / "cap.csv"
    proc = perfgate("capture", "-b", str(zoo_baseline), "-o", str(out), "--dry-run",
                    "--ncu", "/nonexistent/ncu", "./bench", "-q", "--color", "never")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith("./bench -q --color never")
    # perfgate's own options before the program still work, in either place.
    quiet = perfgate("capture", "-q", "-b", str(zoo_baseline), "-o", str(out), "--dry-run",
                     "--ncu", "/nonexistent/ncu", "--color", "never", "./bench", "-x")  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.splitlines()[0].endswith("./bench -x")


def test_dry_run_prints_and_runs_nothing(tmp_path: Path, zoo_baseline: Path) -> None:
    out = tmp_path / "cap.csv"
    proc = perfgate("capture", "-b", str(zoo_baseline), "-o", str(out), "--dry-run",
                    "--ncu", "/nonexistent/ncu", "--", "python3", "-c", "print('a b')")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("/nonexistent/ncu --cache-control all --clock-control none")
    assert first.endswith("python3 -c 'print('\"'\"'a b'\"'\"')'")  # shell-quoted for reading
    assert "--import" in proc.stdout and "--print-units base" in proc.stdout
    assert not out.exists() and not list(tmp_path.iterdir())


def _fake(log: str, csv: str = "ok.import.csv", **more: str) -> dict[str, str]:
    return {
        "FAKE_NCU_VERSION": str(TEXTS / "ncu-version.txt"),
        "FAKE_NCU_LOG": str(TEXTS / log),
        "FAKE_NCU_CSV": str(TEXTS / csv),
        **more,
    }


def _capture(
    baseline: Path, out: Path, env: dict[str, str], *program: str, phases: str = "full"
) -> subprocess.CompletedProcess[str]:
    """The single-phase capture unless `phases` says otherwise (tests/usecases/test_two_phase.py)."""
    prog = program or (sys.executable, "-c", "print('program output')")
    return perfgate("capture", "-b", str(baseline), "-o", str(out), "--ncu", FAKE_NCU,
                    "--phases", phases, "--", *prog, env=env)  # fmt: skip


def test_capture_writes_ncu_output_log_and_metadata(tmp_path: Path, zoo_baseline: Path) -> None:
    out = tmp_path / "cap.csv"
    env = _fake("zoo-capture-1.csv.log", "zoo-capture-1.csv", FAKE_NCU_ARGV=str(tmp_path / "argv"))
    proc = _capture(zoo_baseline, out, env, sys.executable, "-c",
                    "import sys; print(sys.argv[1:])", "a b", "it's")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == (TEXTS / "zoo-capture-1.csv").read_bytes()  # exactly ncu's
    assert "['a b', \"it's\"]" in proc.stderr  # the program's output, passed on, not captured
    assert Path(f"{out}.log").read_text() == (TEXTS / "zoo-capture-1.csv.log").read_text()
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["perfgate_capture"] == 1 and meta["ncu_version"] == "2025.3.1.0"
    assert meta["clock_control"] == "none" and meta["program_exit_code"] == 0
    assert meta["passes"] == [9] * 27
    assert meta["command"][-2:] == ["a b", "it's"]
    assert "27 launch(es), 9 replay passes" in proc.stdout
    assert "profiled 1 launch(es)" in proc.stderr  # progress from ncu's ==PROF== lines
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[-5:] == [sys.executable, "-c", "import sys; print(sys.argv[1:])", "a b", "it's"]


def test_no_kernels_is_exit_2_with_the_list(tmp_path: Path, zoo_baseline: Path) -> None:
    out = tmp_path / "cap.csv"
    proc = _capture(zoo_baseline, out, _fake("e-nokernels.csv.log"))
    assert proc.returncode == 2
    assert "profiled no kernels" in proc.stderr and "zoo_coalescing" in proc.stderr
    assert "--launch-skip" in proc.stderr  # the hints
    assert not out.exists() and Path(f"{out}.log").exists()


@pytest.mark.parametrize(
    ("log", "code", "words"),
    [
        ("e-exit3.csv.log", 3, "exited with code 3: no capture"),
        ("e-abort.csv.log", 6, "SIGABRT"),
        ("segfault.log", 11, "SIGSEGV"),
    ],
)
def test_program_failure_is_exit_2(
    tmp_path: Path, zoo_baseline: Path, log: str, code: int, words: str
) -> None:
    out = tmp_path / "cap.csv"
    proc = _capture(zoo_baseline, out, _fake(log, FAKE_NCU_RC=str(code)))
    assert proc.returncode == 2
    assert words in proc.stderr
    assert not out.exists()
    assert json.loads(Path(f"{out}.meta.json").read_text())["program_exit_code"] == code
    allowed = perfgate("capture", "-b", str(zoo_baseline), "-o", str(out), "--ncu", FAKE_NCU,
                       "--allow-program-failure", "--", "true", env=_fake(log, FAKE_NCU_RC=str(code)))  # fmt: skip
    assert out.exists() and f"exited with code {code}" in allowed.stderr


@pytest.mark.parametrize(
    ("stdout", "words"),
    [
        ("no-program.stdout", "does not exist or is not an executable"),
        ("bad-option.stdout", "rejected an option's value"),
    ],
)
def test_ncu_errors_before_its_log_opens(
    tmp_path: Path, zoo_baseline: Path, stdout: str, words: str
) -> None:
    out = tmp_path / "cap.csv"
    proc = _capture(zoo_baseline, out, _fake("ok.log", FAKE_NCU_STDOUT=str(TEXTS / stdout)))
    assert proc.returncode == 2
    assert words in proc.stderr
    assert not out.exists()


def test_dropped_metric_is_named(tmp_path: Path, zoo_baseline: Path) -> None:
    data = yaml.safe_load(zoo_baseline.read_text())
    data["kernels"][0]["metrics"]["fb__bytes_read.sum"] = {"value": 1}
    odd = tmp_path / "odd.yaml"
    odd.write_text(yaml.safe_dump(data))
    out = tmp_path / "cap.csv"
    proc = _capture(odd, out, _fake("e-dropped.csv.log", "e-dropped.csv"))
    assert proc.returncode == 2
    assert "fb__bytes_read.sum: absent from the capture on CC 9.0 (GH100" in proc.stderr
    assert "dram__bytes_read.sum" in proc.stderr  # the known alternative
    assert out.exists()  # written, so the user can look


def test_output_never_replaces_an_input(tmp_path: Path, zoo_baseline: Path) -> None:
    before = zoo_baseline.read_text()
    link = tmp_path / "link.yaml"
    link.symlink_to(zoo_baseline)
    for out in (zoo_baseline, link):
        proc = _capture(zoo_baseline, out, _fake("ok.log"))
        assert proc.returncode == 2 and "-o is also an input" in proc.stderr, proc.stderr
        assert "perfgate would replace it" in proc.stderr
        assert zoo_baseline.read_text() == before


def test_ncu_not_found(tmp_path: Path, zoo_baseline: Path) -> None:
    proc = perfgate("capture", "-b", str(zoo_baseline), "--ncu", "/nonexistent/ncu", "--", "x")
    assert proc.returncode == 2
    assert "ncu not found" in proc.stderr and "Traceback" not in proc.stderr


def test_pass_cost_table_in_docs_is_the_measured_one() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks" / "capture_cost"))
    try:
        import table
    finally:
        sys.path.pop(0)
    doc = (ROOT / "docs" / "capture.md").read_text()
    assert table.markdown() in doc


def test_cheaper_stall_family_checks_against_an_older_baseline(
    tmp_path: Path, zoo_baseline: Path
) -> None:
    # The baseline holds per_warp_active stalls (tests/data/h200/real); perfgate capture asked
    # for per_issue_active on the device: one comparability group, so the good build passes
    # and the regressed build fails on what the zoo expects.
    from tests.zoo.expectations import unmet

    good = perfgate("check", "-b", str(zoo_baseline), "-c", str(TEXTS / "zoo-capture-1.csv"))
    assert good.returncode == 0, good.stdout + good.stderr
    report = tmp_path / "r.json"
    bad = perfgate("check", "-b", str(zoo_baseline), "-c", str(TEXTS / "zoo-bad-capture.csv"),
                   "--json", str(report))  # fmt: skip
    assert bad.returncode == 1, bad.stdout + bad.stderr
    failed: dict[str, set[str]] = {}
    for kernel in json.loads(report.read_text())["results"][0]["kernels"]:
        for c in kernel["comparisons"]:
            if c["state"] == "regressed":
                failed.setdefault(kernel["kernel"], set()).add(c["metric"])
    assert unmet(failed) == [], failed


def test_filter_follows_inductor_renumbering() -> None:
    from perfgate.baseline.model import KernelBaseline, KernelMatch
    from perfgate.ingest.names import normalise
    from perfgate.ncu.command import base_name

    recorded, renamed = "triton_poi_fused_add_mul_relu_1", "triton_poi_fused_add_mul_relu_0"
    assert normalise(recorded) == normalise(renamed)  # check treats them as one kernel
    pattern = base_name(KernelBaseline("k", KernelMatch(name=recorded), ()))
    assert pattern and re.fullmatch(pattern, renamed)  # so the filter profiles the new number
    plain = base_name(KernelBaseline("k", KernelMatch(name="my_kernel_2(int)"), ()))
    assert plain and not re.fullmatch(plain, "my_kernel_3")  # not Inductor: exact


def test_a_bad_baseline_leaves_no_temporary_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kernels: [")
    out = tmp_path / "out" / "cap.csv"
    proc = perfgate("capture", "-b", str(bad), "-o", str(out), "--ncu", FAKE_NCU, "--", "true",
                    env=_fake("ok.log"))  # fmt: skip
    assert proc.returncode == 2 and "bad.yaml" in proc.stderr
    assert list(out.parent.iterdir()) == []


def _old_pair(out: Path) -> None:
    """A good capture and its metadata from an earlier run at `out`."""
    out.write_bytes((REAL / "start2-zoo-good-run1.csv").read_bytes())
    Path(f"{out}.meta.json").write_text(json.dumps({"perfgate_capture": 1, "program_exit_code": 0}))
    Path(f"{out}.ncu-rep").write_text("old report")


@pytest.mark.parametrize(
    ("env", "ncu"),
    [
        (_fake("e-nokernels.csv.log"), FAKE_NCU),
        (_fake("e-exit3.csv.log", FAKE_NCU_RC="3"), FAKE_NCU),
        (_fake("ok.log", FAKE_NCU_STDOUT=str(TEXTS / "bad-option.stdout")), FAKE_NCU),
        (_fake("ok.log"), "/nonexistent/ncu"),
    ],
    ids=["no-kernels", "program-failed", "ncu-error", "ncu-missing"],
)
def test_a_failed_capture_leaves_no_earlier_capture_at_output(
    tmp_path: Path, zoo_baseline: Path, env: dict[str, str], ncu: str
) -> None:
    out = tmp_path / "cap.csv"
    _old_pair(out)
    proc = perfgate("capture", "-b", str(zoo_baseline), "-o", str(out), "--ncu", ncu, "--",
                    sys.executable, "-c", "print(1)", env=env)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not out.exists() and not Path(f"{out}.ncu-rep").exists()
    meta = Path(f"{out}.meta.json")
    if meta.exists():  # only the failed run's own, which says it failed
        assert json.loads(meta.read_text())["error"]
    check = perfgate("check", "-b", str(zoo_baseline), "-c", str(out))
    assert check.returncode == 2 and "cap.csv" in check.stderr  # nothing stale to pass on


def test_a_refused_output_is_left_alone(tmp_path: Path, zoo_baseline: Path) -> None:
    """-o naming an input is refused before anything at -o is touched."""
    out = tmp_path / "cap.csv"
    _old_pair(out)
    before = out.read_bytes()
    proc = _capture(zoo_baseline, out, _fake("ok.log"), str(out))
    assert proc.returncode == 2 and "perfgate would replace it" in proc.stderr
    assert out.read_bytes() == before
