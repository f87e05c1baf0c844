"""Fail closed: a check passes only if every gate the baseline holds for a kernel in the
capture was judged (docs/check.md "Not judged").

The README's path end to end: a baseline recorded from hand captures (README step 2), then
`perfgate capture -b` in CI through a stand-in ncu (tests/fake_ncu.py) replaying real
captures, then `perfgate check`. A gate capture's durations are not a full capture's, so
`capture` must take what the baseline needs, and a check of anything it cannot judge fails
with the reason named, unless the user waived it by name."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from perfgate.ingest import read_captures
from perfgate.ingest.gateset import looks_like_gate
from perfgate.ingest.scope import ALL, declared
from perfgate.judge.comparison import State
from perfgate.judge.policy import STATUS, Meaning
from perfgate.judge.skips import TABLE as SKIPS
from perfgate.judge.skips import WAIVABLE, Skip, parse_waivers
from perfgate.judge.states import KernelState
from tests.conftest import ROOT
from tests.ncu.test_capture import FAKE_NCU, REAL, TEXTS, perfgate

FIELD = ROOT / "tests" / "data" / "field"

if TYPE_CHECKING:
    from perfgate.baseline.model import Baseline
    from perfgate.ncu.command import CapturePlan


def _fake(csv: Path, argv: Path) -> dict[str, str]:
    return {
        "FAKE_NCU_VERSION": str(TEXTS / "ncu-version.txt"),
        "FAKE_NCU_LOG": str(TEXTS / "torch-capture.csv.log"),
        "FAKE_NCU_CSV": str(csv),
        "FAKE_NCU_ARGV_ALL": str(argv),
    }


@pytest.fixture(scope="module")
def hand_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """README step 2: a baseline recorded from three hand captures (no sidecar) of a real
    PyTorch model on an H200; CI's captures replay `perfgate capture` of the same model on
    another machine start (tests/data/h200/capture/torch-capture.csv)."""
    out = tmp_path_factory.mktemp("b") / "torch.yaml"
    runs = [a for i in (1, 2, 3) for a in ("-c", str(REAL / f"torch-flash-run{i}.csv"))]
    proc = perfgate("baseline", "record", *runs, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _slower(source: Path, dest: Path, factor: float) -> Path:
    """SYNTHETIC, derived from a real capture: every launch's gpu__time_duration.sum times
    `factor`, nothing else touched (a build that is slower and nothing more)."""
    lines = source.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    col = rows[0].index("gpu__time_duration.sum")
    for row in rows[2:]:  # after the header and the units
        if len(row) > col and row[col]:
            row[col] = f"{float(row[col].replace(',', '')) * factor:.0f}"
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    dest.write_text("".join(lines[:start]) + buffer.getvalue())
    return dest


def _ci_capture(
    baseline: Path, csv: Path, tmp_path: Path, *extra: str
) -> tuple[Path, list[list[str]]]:
    """`perfgate capture -b BASELINE` as CI runs it (README: "once baselines exist, let
    perfgate run ncu"), replaying `csv`; the capture and every ncu profile run's argv."""
    out = tmp_path / "ci.csv"
    argv = tmp_path / "argv"
    proc = perfgate("capture", "-b", str(baseline), "-o", str(out), "--ncu", FAKE_NCU, *extra,
                    "--", sys.executable, "-c", "pass", env=_fake(csv, argv))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    runs = [line.split("\x1f") for line in argv.read_text().splitlines()]
    return out, runs


def test_readme_path_judges_durations_and_fails_a_slower_build(
    hand_baseline: Path, tmp_path: Path
) -> None:
    slow = _slower(TEXTS / "torch-capture.csv", tmp_path / "slow.csv", 1.5)
    capture, runs = _ci_capture(hand_baseline, slow, tmp_path)
    # One full capture: the baseline's durations are a full capture's.
    assert len(runs) == 1
    meta = json.loads(Path(f"{capture}.meta.json").read_text())
    assert meta["phase"] == "full"
    proc = perfgate("check", "-b", str(hand_baseline), "-c", str(capture), "--json",
                    str(tmp_path / "r.json"))  # fmt: skip
    assert proc.returncode == 1, proc.stdout
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["not_judged"] == []
    durations = [
        c
        for r in result["results"]
        for k in r["kernels"]
        for c in k["comparisons"]
        if c["metric"] == "duration"
    ]
    assert durations and all(c["state"] != "skipped" for c in durations)
    assert any(c["state"] == "regressed" for c in durations)
    assert result["results"][0]["program"]["state"] == "regressed"


def test_readme_path_passes_the_unchanged_build(hand_baseline: Path, tmp_path: Path) -> None:
    capture, _ = _ci_capture(hand_baseline, TEXTS / "torch-capture.csv", tmp_path)
    proc = perfgate("check", "-b", str(hand_baseline), "-c", str(capture))
    assert proc.returncode == 0, proc.stdout
    assert "NOT JUDGED" not in proc.stdout and "not judged" not in proc.stdout


def test_a_gate_capture_against_a_hand_baseline_fails_named_even_quiet(
    hand_baseline: Path, tmp_path: Path
) -> None:
    """The old route to exit 0: a gate capture's durations against a full baseline."""
    slow = _slower(TEXTS / "torch-capture.csv", tmp_path / "slow.csv", 1.5)
    capture, _ = _ci_capture(hand_baseline, slow, tmp_path, "--phases", "gate")
    assert json.loads(Path(f"{capture}.meta.json").read_text())["phase"] == "gate"
    proc = perfgate("-q", "check", "-b", str(hand_baseline), "-c", str(capture))
    assert proc.returncode == 2, proc.stdout
    status = proc.stdout.strip().splitlines()
    assert len(status) == 1  # -q: the status line alone, and it names what was not judged
    assert "NOT JUDGED" in status[0] and "time-basis" in status[0]
    # Waived by name: the slowdown still goes unjudged, and the report says so.
    waived = perfgate("check", "-b", str(hand_baseline), "-c", str(capture), "--waive",
                      "time-basis", "--waive", "capture-type")  # fmt: skip
    assert waived.returncode == 0, waived.stdout
    assert "not gated (waived): time-basis" in waived.stdout.splitlines()[0]
    assert "not gated: time-basis (waived)" in waived.stdout


def _states(report_json: dict[str, object]) -> set[str]:
    return {k["state"] for r in report_json["results"] for k in r["kernels"]}  # type: ignore[attr-defined,index]


def test_every_writer_names_the_unjudged_state(hand_baseline: Path, tmp_path: Path) -> None:
    capture, _ = _ci_capture(
        hand_baseline, TEXTS / "torch-capture.csv", tmp_path, "--phases", "gate"
    )
    summary = tmp_path / "summary.md"
    outputs = tmp_path / "outputs"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(outputs)}  # fmt: skip
    proc = perfgate("check", "-b", str(hand_baseline), "-c", str(capture), "--json",
                    str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml"), env=env)  # fmt: skip
    assert proc.returncode == 2
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["status"] == "error"
    assert "unjudged" in _states(result)
    assert {n["reason"] for n in result["not_judged"] if n["fails"]} >= {"time-basis"}
    assert "not judged: time-basis" in summary.read_text()
    assert "unjudged=" in outputs.read_text() and "verdict=error" in outputs.read_text()
    assert 'type="unjudged"' in (tmp_path / "j.xml").read_text()
    assert "::error title=perfgate%3A not judged (time-basis)::" in proc.stdout + proc.stderr


def test_a_gzipped_gate_capture_keeps_its_sidecar(tmp_path: Path) -> None:
    """`gzip ci.csv` leaves ci.csv.meta.json beside ci.csv.gz: it is found, and the gate
    capture's durations are judged as a gate capture's (issue: exit 1 as ci.csv, exit 0 as
    ci.csv.gz)."""
    baseline = _recorded(tmp_path / "gate.yaml", FIELD / "gate" / "h100-j")
    shutil.copy(FIELD / "gate" / "h100-k" / "cnn-fp32-run1.csv.gz", tmp_path / "ci.csv.gz")
    shutil.copy(
        FIELD / "gate" / "h100-k" / "cnn-fp32-run1.csv.gz.meta.json", tmp_path / "ci.csv.meta.json"
    )
    proc = perfgate("-q", "check", "-b", str(baseline), "-c", str(tmp_path / "ci.csv.gz"))
    assert proc.returncode == 0, proc.stdout
    assert "NOT JUDGED" not in proc.stdout


def test_a_renamed_gate_capture_is_read_as_one(tmp_path: Path) -> None:
    """Without its sidecar a gate capture is told by its columns: its durations are never
    taken for a full capture's (they run 2-4% longer)."""
    with gzip.open(FIELD / "gate" / "h100-k" / "cnn-fp32-run1.csv.gz", "rb") as fh:
        (tmp_path / "renamed.csv").write_bytes(fh.read())
    capture = read_captures([str(tmp_path / "renamed.csv")])
    assert capture.gate and capture.gate_files == (str(tmp_path / "renamed.csv"),)
    assert any("read as a gate capture" in w for w in capture.warnings)


def test_gate_capture_columns_are_told_from_full_captures() -> None:
    """Every gate capture of the corpus reads as one; no full capture of it does."""
    gates = sorted((FIELD / "gate").glob("*/*.csv.gz"))
    fulls = sorted((FIELD / "h100").glob("*/*.csv.gz"))[:12] + sorted(REAL.glob("*.csv"))[:12]
    assert gates and fulls
    assert all(looks_like_gate(read_captures([str(p)]).columns) for p in gates[::6])
    assert not any(looks_like_gate(read_captures([str(p)]).columns) for p in fulls)


def test_a_check_with_another_scope_fails_unless_declared_or_waived(
    hand_baseline: Path, tmp_path: Path
) -> None:
    """`perfgate capture --nvtx-include step/` against a hand baseline: its launch counts
    are not judged (the issue: every kernel launched twice passed)."""
    capture, runs = _ci_capture(
        hand_baseline, TEXTS / "torch-capture.csv", tmp_path, "--nvtx-include", "step/"
    )
    assert "--nvtx-include" in runs[0]
    proc = perfgate("-q", "check", "-b", str(hand_baseline), "-c", str(capture))
    assert proc.returncode == 2 and "scope" in proc.stdout
    # Declared when recorded: the same capture is judged, launch counts and all.
    declared_baseline = tmp_path / "declared.yaml"
    runs_args = [a for i in (1, 2, 3) for a in ("-c", str(REAL / f"torch-flash-run{i}.csv"))]
    rec = perfgate("baseline", "record", *runs_args, "--scope", "--nvtx-include step/", "-o",
                   str(declared_baseline))  # fmt: skip
    assert rec.returncode == 0, rec.stderr
    proc = perfgate("-q", "check", "-b", str(declared_baseline), "-c", str(capture))
    assert proc.returncode == 0, proc.stdout
    # perfgate capture applies a declared scope when given no launch filter.
    _, again = _ci_capture(declared_baseline, TEXTS / "torch-capture.csv", tmp_path)
    assert again[0][again[0].index("--nvtx-include") + 1] == "step/"
    assert "--nvtx" in again[0]


def test_declared_scopes() -> None:
    assert declared("all") == ALL
    assert declared("--nvtx-include step/ --launch-count 20") == (
        "--launch-count 20 --nvtx-include step/"
    )
    assert declared("--bogus 3") is None
    assert declared("'unterminated") is None


def test_waivers_are_names_of_the_table() -> None:
    # Every reason is waived by name alone, and each has its words and its fix.
    assert set(WAIVABLE) == {s.value for s in Skip} and set(SKIPS) == set(Skip)
    assert all(SKIPS[s].what and SKIPS[s].fix for s in Skip)
    assert parse_waivers(["time-basis", " scope"]) == {Skip.TIME_BASIS, Skip.SCOPE}
    with pytest.raises(Exception, match="--waive"):
        parse_waivers(["time_basis"])
    assert STATUS[KernelState.UNJUDGED].build is Meaning.INPUT_ERROR
    # The baseline file's `waive:` takes exactly these names (its schema lists them).
    schema = json.loads((ROOT / "schemas" / "baseline.schema.json").read_text())
    assert schema["properties"]["waive"]["items"]["enum"] == list(WAIVABLE)


def test_unjudged_comparisons_make_the_kernel_unjudged_not_passed() -> None:
    from perfgate.judge.comparison import Comparison
    from perfgate.judge.policy import kernel_state

    judged = Comparison("k", "instructions", State.PASS)
    unjudged = Comparison("k", "duration", State.UNJUDGED, skip=Skip.TIME_BASIS)
    skipped = Comparison("k", "duration", State.SKIPPED, skip=Skip.TIME_BASIS)
    regressed = Comparison("k", "instructions", State.REGRESSED)
    assert kernel_state([judged, unjudged]) is KernelState.UNJUDGED
    assert kernel_state([judged, skipped]) is KernelState.PASS
    assert kernel_state([regressed, unjudged]) is KernelState.REGRESSED


def test_the_action_passes_its_waive_input_by_name() -> None:
    from tests.ci.test_workflows import _script

    action = _script("github_action")
    env = {
        "PERFGATE": "perfgate",
        "PERFGATE_BASELINE": "baselines/h100/zoo.yaml",
        "PERFGATE_CAPTURES": "tests/data/h100/zoo-good-short-run2.csv",
        "PERFGATE_WAIVE": "time-basis, scope",
    }
    runs, _ = action.commands(env)
    check = runs[-1]
    assert check[check.index("--waive") :][:4] == ["--waive", "time-basis", "--waive", "scope"]
    runs, _ = action.commands({**env, "PERFGATE_WAIVE": ""})
    assert "--waive" not in runs[-1]
    # The input is declared, empty by default (nothing is waived unless named).
    text = (ROOT / "action.yml").read_text()
    assert "  waive:\n" in text and "PERFGATE_WAIVE: ${{ inputs.waive }}" in text


def test_a_baseline_can_waive_by_name_and_only_by_known_names(
    hand_baseline: Path, tmp_path: Path
) -> None:
    capture, _ = _ci_capture(
        hand_baseline, TEXTS / "torch-capture.csv", tmp_path, "--phases", "gate"
    )
    text = hand_baseline.read_text()
    waived = tmp_path / "waived.yaml"
    waived.write_text(
        text.replace("\nkernels:\n", "\nwaive: [time-basis, capture-type]\nkernels:\n", 1)
    )
    proc = perfgate("check", "-b", str(waived), "-c", str(capture))
    assert proc.returncode == 0, proc.stdout
    assert "not gated (waived): time-basis, capture-type" in proc.stdout.splitlines()[0]
    # One name waived, the other still fails the check.
    one = tmp_path / "one.yaml"
    one.write_text(text.replace("\nkernels:\n", "\nwaive: [time-basis]\nkernels:\n", 1))
    proc = perfgate("check", "-b", str(one), "-c", str(capture))
    assert proc.returncode == 2 and "capture-type" in proc.stdout.splitlines()[0]
    # A name that is no reason is refused where the baseline is read, never ignored.
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("\nkernels:\n", "\nwaive: [time_basis]\nkernels:\n", 1))
    proc = perfgate("check", "-b", str(bad), "-c", str(capture))
    assert proc.returncode == 2 and "waive" in proc.stderr and "Traceback" not in proc.stderr
    # It survives a dump and load.
    from perfgate.baseline.dump import dump_baseline
    from perfgate.baseline.load import load_baseline, parse_baseline

    loaded = load_baseline(str(waived))
    assert loaded.waive == ("time-basis", "capture-type")
    assert parse_baseline(dump_baseline(loaded), "again.yaml").waive == loaded.waive


def test_diff_and_show_name_a_waiver(tmp_path: Path) -> None:
    text = (ROOT / "baselines" / "h100" / "zoo.yaml").read_text()
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(text)
    b.write_text(text.replace("\nkernels:\n", "\nwaive: [scope]\nkernels:\n", 1))
    diff = perfgate("baseline", "diff", str(a), str(b), "--exit-code")
    assert diff.returncode == 1 and "waive" in diff.stdout and "scope" in diff.stdout
    show = perfgate("baseline", "show", str(b))
    assert "waive: scope" in show.stdout


def test_a_hand_added_scope_no_longer_switches_off_the_launch_counts(tmp_path: Path) -> None:
    """One hand-added `scope: --launch-count 1000` line in a fingerprint: launch counts and
    the program time of every hand capture went ungated and the check passed. Now they are
    not judged, which fails, naming the scope."""
    text = (ROOT / "baselines" / "h100" / "zoo.yaml").read_text()
    edited = tmp_path / "zoo.yaml"
    edited.write_text(
        text.replace("fingerprint:\n", "fingerprint:\n  scope: --launch-count 1000\n", 1)
    )
    capture = ROOT / "tests" / "data" / "h100" / "zoo-good-short-run2.csv"
    plain = perfgate("-q", "check", "-b", str(ROOT / "baselines/h100/zoo.yaml"), "-c", str(capture))
    assert plain.returncode == 0, plain.stdout
    proc = perfgate("-q", "check", "-b", str(edited), "-c", str(capture))
    assert proc.returncode == 2, proc.stdout
    assert (
        "NOT JUDGED" in proc.stdout and "scope (" in proc.stdout and "program time" in proc.stdout
    )


def test_a_reason_is_worded_once_with_at_most_six_metrics() -> None:
    from perfgate.judge.skips import describe

    six = [f"m{i}" for i in range(6)]
    assert "m0, m1, m2, m3, m4, m5 of 2 kernels" in describe(Skip.SCOPE, True, six, 2, False)
    seven = describe(Skip.SCOPE, True, [*six, "m6"], 1, True)
    assert "m0, m1, m2, m3, m4, m5 and 1 more of 1 kernel and the program time" in seven
    assert "m6" not in seven and seven.endswith("(or let them pass unjudged: --waive scope)")
    waived = describe(Skip.TIME_BASIS, False, ["duration"], 3, False)
    assert (
        waived.startswith("time-basis (waived): ") and "not gated: duration of 3 kernels" in waived
    )
    assert describe(Skip.SCOPE, True, [], 0, True).count("the program time") == 1


@pytest.mark.parametrize(
    "filters",
    [
        [],
        ["--nvtx-include", "step/"],
        ["--launch-count", "20", "--launch-skip", "5"],
        ["--nvtx-include", "train step/", "--nvtx-exclude", "warmup/", "--range-filter", ":2:"],
        ["-c", "3", "-k", "regex:^zoo_"],
    ],
)
def test_a_scope_read_back_into_ncu_arguments_is_the_same_scope(filters: list[str]) -> None:
    """perfgate capture applies a baseline's scope from its canonical text: the arguments it
    reads back give that scope again (the kernel-name filter is perfgate capture's own)."""
    from perfgate.ingest.scope import capture_scope
    from perfgate.ncu.command import scope_arguments

    scope = capture_scope(["ncu", *filters, "./app"])
    again = capture_scope(["ncu", *scope_arguments(scope), "./app"])
    without_names = [a for a in filters if a not in ("-k", "regex:^zoo_")]
    assert again == capture_scope(["ncu", *without_names, "./app"])
    if without_names == filters:
        assert again == scope


@pytest.mark.parametrize(
    ("waived", "total_time"),
    [
        (frozenset(), (State.UNJUDGED, Skip.TIME_BASIS)),
        (frozenset({Skip.TIME_BASIS}), (State.UNJUDGED, Skip.SCOPE)),
        (frozenset({Skip.SCOPE}), (State.UNJUDGED, Skip.TIME_BASIS)),
        (frozenset({Skip.TIME_BASIS, Skip.SCOPE}), (State.SKIPPED, Skip.TIME_BASIS)),
    ],
)
def test_a_metric_with_two_reasons_passes_only_with_both_waived(
    waived: frozenset[Skip], total_time: tuple[State, Skip]
) -> None:
    """total_time and the program time depend on both the time basis and the scope: waiving
    one reason leaves it failing on the other, named."""
    from perfgate.baseline.load import load_baseline
    from perfgate.verdicts.check import CheckSettings, check

    baseline = load_baseline(str(ROOT / "baselines" / "h100" / "zoo.yaml"))
    capture = read_captures([str(ROOT / "tests" / "data" / "h100" / "zoo-good-short-run2.csv")])
    settings = CheckSettings(
        other_basis="another basis", other_scope="another scope", waived=waived
    )
    result = check(baseline, capture, settings)
    got = {
        (c.state, c.skip)
        for v in result.verdicts
        for c in v.comparisons
        if c.metric == "total_time"
    }
    assert got == {total_time}
    assert all("another basis; another scope" in c.message for v in result.verdicts
               for c in v.comparisons if c.metric == "total_time")  # fmt: skip
    duration = {c.state for v in result.verdicts for c in v.comparisons if c.metric == "duration"}
    assert duration == {State.SKIPPED if Skip.TIME_BASIS in waived else State.UNJUDGED}
    # The report counts each reason's gates exactly, and names the program time once.
    from perfgate.verdicts.model import Report

    unjudged = [c for v in result.verdicts for c in v.comparisons if c.state is State.UNJUDGED]
    said = {(n.skip, n.fails): n for n in Report((result,)).not_judged()}
    for skip in (Skip.TIME_BASIS, Skip.SCOPE):
        mine = [c for c in unjudged if c.skip is skip]
        if mine:
            n = said[(skip, True)]
            assert n.comparisons == len(mine)
            assert n.kernels == len({c.kernel for c in mine})
            assert set(n.metrics) == {c.metric for c in mine}
        else:
            assert (skip, True) not in said
    assert result.program is not None
    both = {Skip.TIME_BASIS, Skip.SCOPE} <= waived
    assert result.program.state is (KernelState.SKIPPED if both else KernelState.UNJUDGED)
    assert "another basis; another scope" in result.program.reason


def test_a_missing_metric_names_what_it_needs_and_no_more() -> None:
    """A gated metric the capture cannot give is incomplete (never skipped), and says which
    raw metrics it needs: up to four, then ", ..."."""
    from perfgate.baseline.load import load_baseline
    from perfgate.verdicts.check import check

    baseline = load_baseline(str(ROOT / "baselines" / "h100" / "zoo.yaml"))
    capture = read_captures(
        [str(ROOT / "tests" / "corpus" / "captures" / "missing-gated-metric.csv")]
    )
    result = check(baseline, capture)
    durations = [c for v in result.verdicts for c in v.comparisons if c.metric == "duration"]
    assert durations and {c.state for c in durations} == {State.MISSING_METRIC}
    assert all(c.skip is None for c in durations)  # missing, which no waiver lets pass
    for c in durations:
        assert "(needs gpu__time_duration.sum)" in c.message and ", ..." not in c.message


# --- what perfgate capture takes for a baseline: its phase, its launch filters ---------------


def _zoo(scope: str | None = None, basis: str = "full", path: str = "zoo.yaml") -> Baseline:
    from dataclasses import replace

    from perfgate.baseline.load import load_baseline

    b = load_baseline(str(ROOT / "baselines" / "h100" / "zoo.yaml"))
    return replace(b, path=path, fingerprint=replace(b.gpu, scope=scope, time_basis=basis))


def _plan(baselines: list[Baseline], **options: object) -> CapturePlan:
    from perfgate.ncu.command import CaptureOptions, build_plan

    zoo = str(ROOT / "baselines" / "h100" / "zoo.yaml")  # baseline_files() needs a file
    opts = CaptureOptions((zoo,), ("./app",), **options)  # type: ignore[arg-type]
    return build_plan(opts, "/tmp/r", "/tmp/l", baselines)


def _arg(plan: CapturePlan, option: str) -> str | None:
    argv = list(plan.profile)
    return argv[argv.index(option) + 1] if option in argv else None


def test_auto_takes_the_baselines_phase_and_an_explicit_phase_says_when_it_differs() -> None:
    full, gate = _zoo(), _zoo(basis="gate")
    assert _plan([full], phase="gate", follow_baseline=True).phase == "full"
    assert _plan([gate], phase="gate", follow_baseline=True).phase == "gate"
    assert _plan([gate, full], phase="gate", follow_baseline=True).phase == "full"
    said = [n for n in _plan([full], phase="gate").notes if "time-basis" in n]
    assert len(said) == 1 and said[0].startswith("zoo.yaml holds durations of full captures")
    assert not [n for n in _plan([full], phase="full").notes if "time-basis" in n]
    assert not [n for n in _plan([gate], phase="gate").notes if "time-basis" in n]


@pytest.mark.parametrize(
    ("options", "nvtx", "noted"),
    [
        ({"follow_baseline": True}, "step/", False),  # the baseline's own filter, applied
        ({"follow_baseline": True, "launch_count": 5}, None, True),  # the user's, said
        ({"follow_baseline": True, "launch_skip": 2}, None, True),
        ({"follow_baseline": True, "nvtx_include": ("step/",)}, "step/", False),
        ({"follow_baseline": True, "nvtx_include": ("other/",)}, "other/", True),
        ({"follow_baseline": False}, None, True),  # an explicit phase takes none of its own
    ],
)
def test_auto_applies_the_baselines_launch_filters_only_when_given_none(
    options: dict[str, object], nvtx: str | None, noted: bool
) -> None:
    plan = _plan([_zoo(scope="--nvtx-include step/")], phase="full", **options)
    assert _arg(plan, "--nvtx-include") == nvtx
    said = [n for n in plan.notes if "--waive scope" in n]
    assert bool(said) is noted, plan.notes


def test_no_filter_is_applied_from_baselines_of_several_scopes_or_none() -> None:
    two = [_zoo(scope="--nvtx-include a/"), _zoo(scope="--nvtx-include b/", path="other.yaml")]
    plan = _plan(two, phase="full", follow_baseline=True)
    assert _arg(plan, "--nvtx-include") is None
    (said,) = [n for n in plan.notes if "--waive scope" in n]
    assert "(all launches) is not that of other.yaml, zoo.yaml" in said
    plain = _plan([_zoo()], phase="full", follow_baseline=True)
    assert _arg(plain, "--nvtx-include") is None and not plain.notes


def test_scopes_differ_only_where_counts_cannot_compare() -> None:
    from perfgate.ingest.scope import differ

    assert differ(None, None) is False
    assert differ(None, ALL) is False and differ(ALL, None) is False
    assert differ(None, "--launch-count 3") is True and differ("--launch-count 3", None) is True
    assert differ("--nvtx-include a/", "--nvtx-include b/") is True
    assert differ("--nvtx-include a/", "--nvtx-include a/") is False
    assert differ(ALL, ALL) is False


def _recorded(out: Path, start: Path, workload: str = "cnn-fp32") -> Path:
    """A baseline recorded from a workload's three runs on one machine start."""
    runs = [a for i in (1, 2, 3) for a in ("-c", str(start / f"{workload}-run{i}.csv.gz"))]
    proc = perfgate("baseline", "record", *runs, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_captures_of_both_bases_in_one_check_compare_with_no_baseline(tmp_path: Path) -> None:
    """A gate capture (here one that lost its sidecar: told by its columns) and a full capture
    checked together: their durations are of no one basis, so they are not judged against a
    baseline of either; record refuses them together."""
    with gzip.open(FIELD / "gate" / "h100-k" / "cnn-fp32-run1.csv.gz", "rb") as fh:
        (tmp_path / "renamed.csv").write_bytes(fh.read())
    full = FIELD / "h100" / "h100-a" / "cnn-fp32-run1.csv.gz"
    gate_base = _recorded(tmp_path / "gate.yaml", FIELD / "gate" / "h100-j")
    # The renamed gate capture alone: its durations are judged against the gate baseline.
    alone = perfgate("-q", "check", "-b", str(gate_base), "-c", str(tmp_path / "renamed.csv"),
                     "--waive", "scope")  # fmt: skip
    assert alone.returncode == 0 and "time-basis" not in alone.stdout, alone.stdout
    mixed = perfgate("-q", "check", "-b", str(gate_base), "-c", str(tmp_path / "renamed.csv"),
                     "-c", str(full), "--waive", "scope")  # fmt: skip
    assert mixed.returncode == 2 and "time-basis" in mixed.stdout, mixed.stdout
    # Nor against a baseline of full captures: mixed is neither basis.
    full_base = _recorded(tmp_path / "full.yaml", FIELD / "h100" / "h100-a")
    on_full = perfgate("-q", "check", "-b", str(full_base), "-c", str(tmp_path / "renamed.csv"),
                       "-c", str(full), "--waive", "scope", "--waive", "capture-type")  # fmt: skip
    assert on_full.returncode == 2 and "time-basis" in on_full.stdout, on_full.stdout
    refused = perfgate("baseline", "record", "-c", str(tmp_path / "renamed.csv"), "-c", str(full),
                       "-o", str(tmp_path / "x.yaml"))  # fmt: skip
    assert refused.returncode == 2 and "in one record" in refused.stderr, refused.stderr


def test_the_not_judged_list_names_gates_only_and_failing_reasons_first(
    hand_baseline: Path, tmp_path: Path
) -> None:
    """A gate capture against a hand baseline, one reason waived: the list names the failing
    reason before the waived one, and neither lists an evidence metric (no gate: a note of
    its kernel), though evidence metrics were not judged either."""
    from perfgate.metrics.catalog import Role, role_of

    capture, _ = _ci_capture(
        hand_baseline, TEXTS / "torch-capture.csv", tmp_path, "--phases", "gate"
    )
    out = tmp_path / "r.json"
    proc = perfgate("check", "-b", str(hand_baseline), "-c", str(capture), "--waive",
                    "time-basis", "--json", str(out))  # fmt: skip
    assert proc.returncode == 2
    listed = json.loads(out.read_text())["not_judged"]
    assert [(n["reason"], n["fails"]) for n in listed] == [
        ("capture-type", True),
        ("time-basis", False),
    ]
    for n in listed:
        assert n["metrics"] and all(role_of(m) is Role.PRIMARY for m in n["metrics"]), n
    kernels = json.loads(out.read_text())["results"][0]["kernels"]
    evidence = [
        c for k in kernels for c in k["comparisons"]
        if c["skip"] == "capture-type" and role_of(c["metric"]) is Role.EVIDENCE
    ]  # fmt: skip
    assert evidence and {c["state"] for c in evidence} == {"skipped"}
