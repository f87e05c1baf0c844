"""Evidence-metric noise is never "improved", and the ratchet is suggested only for what it
would take (issue 33, item 5).

Seen by a new user on real captures of unchanged code from separate machine starts: passing
checks printed `improved` for evidence metrics (achieved occupancy, stall cycles per
instruction, store sectors: shown to explain a finding, not gated) and told them to lock the
noise in with `perfgate baseline update --ratchet`, which then tightened it into the baseline.

Real captures only: tests/data/field/h100 (baselines from h100-a's three runs; checks of the
tuning starts h100-b and h100-c, never the held-back ones), tests/data/field/families (a
baseline from fam-a's run 1 with its run 2 checked, and from its three runs with the fresh
start fam-b checked; never the held-back fam-c), the H200 PyTorch model of
tests/data/h200/real (a build that launches an add twice, then once: a real improvement), and
one real change capture. The short-kernel cases scale one kernel's time in a real capture, as
tests/judge/test_evidence.py does.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from perfgate.baseline.model import Baseline
from perfgate.cli import main
from perfgate.identity.grouping import group_launches
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture, Launch, merge
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.catalog import SHORT_KERNEL_NS, SHORT_KERNEL_SLACK_NS, Role, lookup, role_of
from perfgate.metrics.thresholds import Direction
from perfgate.verdicts.check import check
from perfgate.verdicts.model import CheckResult
from tests.conftest import H200_REAL, ROOT

FIELD = ROOT / "tests" / "data" / "field"
H100 = FIELD / "h100"
FAM = FIELD / "families" / "fam-a"

# (baseline runs, checked capture): unchanged code, the check from another machine start
# (h100) or another ncu process of the same start (fam-a). Each is a pair where the old
# behaviour printed "improved" for an evidence metric.
Case = tuple[tuple[Path, ...], Path]


def _h100(workload: str, start: str, run: int) -> Case:
    base = tuple(H100 / "h100-a" / f"{workload}-run{i}.csv.gz" for i in (1, 2, 3))
    return base, H100 / start / f"{workload}-run{run}.csv.gz"


def _fam(workload: str) -> Case:
    return (FAM / f"{workload}-run1.csv.gz",), FAM / f"{workload}-run2.csv.gz"


def _fam_b(workload: str) -> Case:
    base = tuple(FAM / f"{workload}-run{i}.csv.gz" for i in (1, 2, 3))
    return base, FAM.parent / "fam-b" / f"{workload}-run1.csv.gz"


NOISE: dict[str, Case] = {
    "cnn-tf32 h100-b 2": _h100("cnn-tf32", "h100-b", 2),
    "cnn-fp32 h100-b 2": _h100("cnn-fp32", "h100-b", 2),
    "hf-decoder h100-b 1": _h100("hf-decoder", "h100-b", 1),
    "hf-encoder h100-c 1": _h100("hf-encoder", "h100-c", 1),
    "reductions h100-c 2": _h100("reductions", "h100-c", 2),
    "fam-a moe": _fam("moe"),
    "fam-a vit": _fam("vit"),
    "fam-a jax-train": _fam("jax-train"),
    # fam-a's three runs against fam-b, a fresh machine start: both checks fail on a kernel
    # of their own, and printed evidence beside it as improved.
    "fam-b train-step": _fam_b("train-step"),
    "fam-b cub": _fam_b("cub"),
}
# Checks where something gated moved, for the ratchet's suggestion: fam-a's cub run (two
# kernels' load sectors and instructions below their exact bounds, beside a regressed one),
# the H200 add launched once instead of twice, and a real change whose program time fell
# while kernels went missing (the ratchet takes nothing beside a missing kernel).
REDUNDANT = tuple(H200_REAL / f"torch-redundant-run{i}.csv" for i in (1, 2, 3))
FLASH = tuple(H200_REAL / f"torch-flash-run{i}.csv" for i in (1, 2, 3))
GATED: dict[str, tuple[tuple[Path, ...], tuple[Path, ...]]] = {
    "fam-a cub": ((FAM / "cub-run1.csv.gz",), (FAM / "cub-run2.csv.gz",)),
    "h200 add once": (REDUNDANT, FLASH),
    "cnn-fp32 -> cnn-tf32": (
        tuple(H100 / "h100-a" / f"cnn-fp32-run{i}.csv.gz" for i in (1, 2, 3)),
        (H100 / "h100-a" / "cnn-tf32-run1.csv.gz",),
    ),
}


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _captures(paths: tuple[Path, ...]) -> list[str]:
    return [a for p in paths for a in ("-c", str(p))]


@cache
def _baseline(runs: tuple[Path, ...]) -> Baseline:
    return record(merge([read_capture(p) for p in runs]), RecordSettings()).baseline


@cache
def _result(case: str) -> CheckResult:
    runs, capture = NOISE[case]
    return check(_baseline(runs), read_capture(capture))


def _better(c: Comparison) -> bool:
    """Moved the better way under the catalog's direction (none for a label)."""
    if c.change is None:
        return False
    direction = lookup(c.metric).direction
    if direction is Direction.HIGHER_IS_WORSE:
        return c.change < 0
    return direction is Direction.LOWER_IS_WORSE and c.change > 0


def _evidence_moves(result: CheckResult) -> list[Comparison]:
    """Evidence metrics beyond their bound the better way: judged IMPROVED or NOTED, the
    two states such a move has had."""
    return [
        c
        for v in result.verdicts
        for c in v.comparisons
        if role_of(c.metric) is Role.EVIDENCE
        and c.state in (State.IMPROVED, State.NOTED)
        and _better(c)
    ]


@pytest.mark.parametrize("case", list(NOISE))
def test_evidence_noise_is_noted_never_improved(case: str) -> None:
    result = _result(case)
    moves = _evidence_moves(result)
    assert moves, "premise: an evidence metric moved beyond its bound the better way"
    assert [(c.kernel, c.metric, c.state) for c in moves if c.state is not State.NOTED] == []
    # A kernel is improved only by a gated metric: one that improved beside noted evidence
    # has a primary comparison that did.
    for v in result.verdicts:
        if v.state is KernelState.IMPROVED:
            assert any(
                c.state is State.IMPROVED and role_of(c.metric) is not Role.EVIDENCE
                for c in v.comparisons
            ), v.kernel


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each case's baseline, recorded to a file by `perfgate baseline record`."""
    folder = tmp_path_factory.mktemp("evidence-noise")
    out = {}
    cases = {**{k: v[0] for k, v in NOISE.items()}, **{k: v[0] for k, v in GATED.items()}}
    for i, (case, runs) in enumerate(cases.items()):
        path = folder / f"b{i}.yaml"
        code, output = _cli("baseline", "record", *_captures(runs), "-o", str(path))
        assert code == 0, output
        out[case] = path
    return out


def _checked(case: str) -> tuple[Path, ...]:
    return (NOISE[case][1],) if case in NOISE else GATED[case][1]


def test_no_report_counts_evidence_noise_as_an_improvement(
    recorded: dict[str, Path], tmp_path: Path
) -> None:
    # h100-b's cnn-tf32 run: its only moves beyond bound the better way are evidence (a
    # layout kernel's store sectors, an add's stall cycles), and the program time held.
    case = "cnn-tf32 h100-b 2"
    assert _evidence_moves(_result(case))
    files = {f: tmp_path / f"report.{f}" for f in ("json", "junit", "markdown")}
    code, out = _cli(
        "check", "-b", str(recorded[case]), *_captures(_checked(case)), "--no-github",
        *(a for f, p in files.items() for a in (f"--{f}", str(p))),
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(files["json"].read_text())
    comparisons = [c for r in doc["results"] for k in r["kernels"] for c in k["comparisons"]]
    primary = [c for c in comparisons if role_of(c["metric"]) is Role.PRIMARY]
    assert not any(c["state"] == "improved" for c in primary), "premise: nothing gated improved"
    assert doc["counts"]["improved"] == 0
    assert not any(c["state"] == "improved" for c in comparisons)
    assert doc["noted"] >= len(_evidence_moves(_result(case)))
    for name, text in (
        ("text", out),
        ("junit", files["junit"].read_text()),
        ("markdown", files["markdown"].read_text()),
    ):
        assert not re.search(r"\bimproved\b", text), name
        assert "--ratchet" not in text, name


def _baseline_values(path: Path) -> tuple[dict[tuple[str, str], object], object]:
    """Each metric entry's value, range and bound by (kernel id, metric), and the program
    time's value."""
    doc = yaml.safe_load(path.read_text())
    values: dict[tuple[str, str], object] = {
        (k["id"], name): (m.get("value"), m.get("min"), m.get("max"), m.get("threshold"))
        for k in doc["kernels"]
        for name, m in k["metrics"].items()
    }
    program = doc.get("program", {}).get("gpu_time", {}).get("value")
    return values, program


def _ratcheted(baseline: Path, captures: tuple[Path, ...], tmp_path: Path) -> set[str]:
    """What `perfgate baseline update --ratchet` changes in a copy of `baseline`: 'METRIC of
    KERNEL' per metric entry it rewrote, and 'the program GPU time'."""
    copy = tmp_path / "ratcheted.yaml"
    shutil.copy(baseline, copy)
    code, out = _cli("baseline", "update", "--ratchet", "-b", str(copy), *_captures(captures))
    assert code == 0, out
    (before, program), (after, program_after) = _baseline_values(baseline), _baseline_values(copy)
    assert set(before) == set(after)
    taken = {
        f"{metric} of {kernel}"
        for (kernel, metric), v in before.items()
        if after[(kernel, metric)] != v
    }
    return taken | ({"the program GPU time"} if program_after != program else set())


def _suggested(out: str) -> set[str] | None:
    """What the check's ratchet line says the ratchet tightens ('METRIC of KERNEL' each, and
    'the program GPU time'); None when it suggests no ratchet."""
    lines = [line for line in out.splitlines() if "--ratchet" in line]
    if not lines:
        return None
    (line,) = lines
    _, listed = line.split(": it tightens ", 1)
    named: set[str] = set()
    for entry in listed.split("; "):
        assert not re.fullmatch(r"\d+ more kernels?", entry), "every case names its kernels"
        if entry == "the program GPU time":
            named.add(entry)
            continue
        metrics, kernel = entry.split(" of ", 1)
        named |= {f"{m} of {kernel}" for m in metrics.split(", ")}
    return named


@pytest.mark.parametrize("case", [*NOISE, *GATED])
def test_the_check_suggests_the_ratchet_only_for_what_it_takes(
    case: str, recorded: dict[str, Path], tmp_path: Path
) -> None:
    baseline, captures = recorded[case], _checked(case)
    taken = _ratcheted(baseline, captures, tmp_path)
    # The ratchet never takes noise: no evidence metric is tightened.
    assert not {
        t
        for t in taken
        if t != "the program GPU time" and role_of(t.split(" of ")[0]) is Role.EVIDENCE
    }
    _, out = _cli("check", "-b", str(baseline), *_captures(captures), "--no-github")
    suggested = _suggested(out)
    if not taken:
        assert suggested is None, out
    else:
        assert suggested == taken, out
        # The command it prints is the one that takes it: this baseline, these captures.
        (line,) = [line for line in out.splitlines() if "--ratchet" in line]
        assert f"-b {baseline}" in line and all(f"-c {p}" in line for p in captures)


def test_the_gated_cases_cover_both_answers(recorded: dict[str, Path], tmp_path: Path) -> None:
    # The premise of the test above: the ratchet takes something in some gated case (so a
    # suggestion is checked against it) and nothing in another (so its absence is).
    took = {case: bool(_ratcheted(recorded[case], GATED[case][1], tmp_path)) for case in GATED}
    assert took["h200 add once"] and took["fam-a cub"]
    assert not took["cnn-fp32 -> cnn-tf32"]


def test_a_bound_given_for_one_run_does_not_change_what_the_ratchet_is_said_to_take(
    recorded: dict[str, Path], tmp_path: Path
) -> None:
    # --threshold total_time=90% lets the add's total time pass in this check; the ratchet
    # judges by the file's own bounds, and the suggestion says what it takes.
    case = "h200 add once"
    baseline, captures = recorded[case], GATED[case][1]
    taken = _ratcheted(baseline, captures, tmp_path)
    assert any(t.startswith("total_time of ") for t in taken)
    _, out = _cli(
        "check", "-b", str(baseline), *_captures(captures), "--no-github",
        "--threshold", "total_time=90%",
    )  # fmt: skip
    assert _suggested(out) == taken, out


# ------------------------------------------------------------------- a short kernel's time

SHORT = "compile-default"


@pytest.fixture(scope="module")
def short_kernel() -> tuple[Baseline, Capture, str, float]:
    """h100-a's compile-default run 1 against the baseline of its own start, with its
    shortest kernel under SHORT_KERNEL_NS: its id there and its recorded duration."""
    base = _baseline(tuple(H100 / "h100-a" / f"{SHORT}-run{i}.csv.gz" for i in (1, 2, 3)))
    capture = read_capture(H100 / "h100-a" / f"{SHORT}-run1.csv.gz")
    durations = {k.id: k.value("duration") for k in base.kernels}
    short = {k: float(d) for k, d in durations.items() if isinstance(d, float | int)}
    kid = min(short, key=lambda k: short[k])
    assert short[kid] < SHORT_KERNEL_NS
    untouched = next(v for v in check(base, capture).verdicts if v.kernel == kid)
    assert untouched.state is KernelState.PASS
    return base, capture, kid, short[kid]


def _faster(capture: Capture, base: Baseline, kid: str, by_ns: float) -> Capture:
    """SYNTHETIC: the kernel `kid`'s launches in `capture`, each `by_ns` shorter."""
    entry = next(k for k in base.kernels if k.id == kid)
    (group,) = [
        g
        for g in group_launches(capture.launches)
        if (g.key.name, g.key.grid) == (entry.match.name, entry.match.grid)
    ]
    ours = {la.index for la in group.launches}

    def shorter(la: Launch) -> Launch:
        time = la.metrics["gpu__time_duration.sum"]
        if la.index not in ours or not isinstance(time, float):
            return la
        return replace(la, metrics={**la.metrics, "gpu__time_duration.sum": time - by_ns})

    return replace(capture, launches=tuple(shorter(la) for la in capture.launches))


def _duration(result: CheckResult, kid: str) -> tuple[KernelState, State]:
    verdict = next(v for v in result.verdicts if v.kernel == kid)
    return verdict.state, next(c.state for c in verdict.comparisons if c.metric == "duration")


def test_a_short_kernel_faster_within_the_slack_is_noted(
    short_kernel: tuple[Baseline, Capture, str, float],
) -> None:
    base, capture, kid, recorded_ns = short_kernel
    by = SHORT_KERNEL_SLACK_NS * 0.8
    entry = next(k for k in base.kernels if k.id == kid)
    bound = next(m.threshold for m in entry.metrics if m.name == "duration")
    relative = bound.relative if bound is not None else None
    assert relative is not None and by > 2 * relative * recorded_ns, "premise: beyond it"
    state, duration = _duration(check(base, _faster(capture, base, kid, by)), kid)
    assert (state, duration) == (KernelState.PASS, State.NOTED)


def test_a_short_kernel_faster_beyond_the_slack_improved(
    short_kernel: tuple[Baseline, Capture, str, float],
) -> None:
    # As a short kernel slower by more than the slack regresses on its own, one faster by
    # more than it gained for real.
    base, capture, kid, recorded_ns = short_kernel
    by = min(SHORT_KERNEL_SLACK_NS * 1.5, recorded_ns * 0.5)
    assert by > SHORT_KERNEL_SLACK_NS
    state, duration = _duration(check(base, _faster(capture, base, kid, by)), kid)
    assert (state, duration) == (KernelState.IMPROVED, State.IMPROVED)
