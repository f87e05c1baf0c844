"""What a CI engineer meets wiring perfgate into a GPU fleet (issue 32, item 6): the pre-merge
run ships with perfgate (`perfgate pre-merge`, not a script of the repository), arguments in
the wrong place are named, help is whole, and the reports' words read right.

`perfgate pre-merge` runs end to end as a user would on a GPU machine: `perfgate capture`
through the stand-in ncu (tests/fake_ncu.py, replaying a real H200 capture), then `perfgate
check` with every report written."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from perfgate.causes import substitution_cause
from perfgate.causes.model import Side
from perfgate.cli import main
from perfgate.reports import markdown
from tests.conftest import ROOT, data, run_args
from tests.judge.test_fail_closed import _slower
from tests.ncu.test_capture import FAKE_NCU, TEXTS, perfgate

ZOO = str(ROOT / "baselines" / "h100" / "zoo.yaml")


@pytest.fixture(scope="module")
def torch_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baseline recorded from three hand captures of a real PyTorch model on an H200."""
    out = tmp_path_factory.mktemp("b") / "torch.yaml"
    proc = perfgate("baseline", "record", *run_args("torch-flash"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _replaying(csv: Path) -> dict[str, str]:
    return {
        "FAKE_NCU_VERSION": str(TEXTS / "ncu-version.txt"),
        "FAKE_NCU_LOG": str(TEXTS / "torch-capture.csv.log"),
        "FAKE_NCU_CSV": str(csv),
    }


def test_pre_merge_captures_then_gates_and_leaves_ci_reports(
    torch_baseline: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    proc = perfgate(
        "pre-merge", "-b", str(torch_baseline), "--out", str(out), "--ncu", FAKE_NCU,
        "--", sys.executable, "-c", "pass", env=_replaying(TEXTS / "torch-capture.csv"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # stdout is the check's report; what the capture wrote is said on stderr.
    assert proc.stdout.startswith("perfgate check PASSED"), proc.stdout
    assert f"wrote {out / 'capture.csv'}" in proc.stderr
    assert f"pre-merge: reports in {out}" in proc.stderr
    names = {p.name for p in out.iterdir()}
    assert {"capture.csv", "capture.csv.meta.json", "summary.md", "junit.xml"} <= names
    assert json.loads((out / "result.json").read_text())["exit_code"] == 0
    ET.parse(out / "junit.xml")


def test_pre_merge_fails_a_slower_build_as_check_does(torch_baseline: Path, tmp_path: Path) -> None:
    slow = _slower(TEXTS / "torch-capture.csv", tmp_path / "slow.csv", 1.5)
    args = ["-b", str(torch_baseline), "--out", str(tmp_path / "r"), "--ncu", FAKE_NCU]
    program = ["--", sys.executable, "-c", "pass"]
    proc = perfgate("pre-merge", *args, *program, env=_replaying(slow))
    assert proc.returncode == 1 and proc.stdout.startswith("perfgate check FAILED"), proc.stdout
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert result["exit_code"] == 1 and result["results"][0]["program"]["state"] == "regressed"
    warn = perfgate("pre-merge", *args, "--warn-only", *program, env=_replaying(slow))
    assert warn.returncode == 0 and warn.stdout.startswith("perfgate check FAILED")
    assert "exit 0 (--fail-on never)" in warn.stderr


def test_pre_merge_gates_a_capture_already_made(tmp_path: Path) -> None:
    proc = perfgate(
        "pre-merge", "--baseline", ZOO, "--capture", str(data("zoo-bad-short-run1.csv")),
        "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout.startswith("perfgate check FAILED")
    assert {p.name for p in tmp_path.iterdir()} >= {"junit.xml", "summary.md", "result.json"}
    nothing = perfgate("pre-merge", "-b", ZOO, "--out", str(tmp_path / "n"))
    assert nothing.returncode == 2 and "give a program to capture after --" in nothing.stderr
    both = perfgate("pre-merge", "-b", ZOO, "-c", str(data("zoo-bad-short-run1.csv")), "--", "x")
    assert both.returncode == 2 and "not both" in both.stderr


def test_pre_merge_ships_in_the_package_and_the_docs_name_it() -> None:
    assert isinstance(main.commands.get("pre-merge"), click.Command)
    premerge = ROOT / "perfgate" / "usecases" / "premerge.py"
    assert premerge.exists()  # in the wheel: packages = ["perfgate"]
    ci = (ROOT / "docs" / "ci.md").read_text()
    assert "perfgate pre-merge" in ci and "scripts/pre-merge.sh" not in ci
    # The script a clone may still call forwards to it.
    script = (ROOT / "scripts" / "pre-merge.sh").read_text()
    assert 'exec "${perfgate[@]}" pre-merge "$@"' in script


# ------------------------------------------------------------------- misplaced and swapped


@pytest.mark.parametrize(
    ("baseline", "kind"),
    [
        (data("zoo-bad-short-run1.csv"), "an ncu CSV capture"),
        (data("zoo-good-full-run1.csv.gz"), "gzip data"),
        (data("zoo-good-short.ncu-rep"), "an ncu .ncu-rep report"),
    ],
)
def test_a_capture_given_as_the_baseline_names_the_swap(baseline: Path, kind: str) -> None:
    proc = perfgate("check", "-b", str(baseline), "-c", ZOO)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"perfgate: error: {baseline}: given as a baseline, but it is {kind}")
    assert "did you swap --baseline and --capture?" in line
    # A machine format says it too, in its error document.
    doc = json.loads(perfgate("check", "-b", str(baseline), "-c", ZOO, "--format", "json").stdout)
    assert doc["status"] == "error" and "did you swap" in doc["problems"][0]


def test_a_baseline_given_as_the_capture_names_the_swap() -> None:
    proc = perfgate("check", "-b", ZOO, "-c", ZOO)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"perfgate: error: {ZOO}: given as a capture, but it is a perfgate baseline: did you "
        "swap --baseline and --capture? (perfgate check -b BASELINE.yaml -c CAPTURE.csv)\n"
    )
    # A capture that is merely broken is not called a baseline.
    broken = perfgate("check", "-b", ZOO, "-c", str(TEXTS / "ncu-version.txt"))
    assert broken.returncode == 2 and "swap" not in broken.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["capture", "--", "./app", "-b", "x.yaml"],
        ["capture", "./app", "--baseline=x.yaml", "-o", "c.csv"],
        ["pre-merge", "--", "./app", "-b", "x.yaml"],
    ],
)
def test_a_perfgate_option_after_the_program_is_named(argv: list[str]) -> None:
    proc = perfgate(*argv)
    assert proc.returncode == 2
    assert "Missing option '--baseline'" in proc.stderr
    given = next(a for a in argv if a.startswith(("-b", "--baseline=")))
    shown = "-b x.yaml" if given == "-b" else given
    assert f"{shown} comes after the program (./app)" in proc.stderr
    assert "give perfgate's options before the program" in proc.stderr
    # Without it anywhere, the plain message: nothing to name.
    plain = perfgate(argv[0], "--", "./app")
    assert plain.returncode == 2 and "comes after the program" not in plain.stderr


# ----------------------------------------------------------------------------- help, words


def _groups(group: click.Group, prefix: list[str]) -> list[list[str]]:
    found = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += _groups(command, [*prefix, name])
    return found


@pytest.mark.parametrize("width", [80, 200])
def test_every_command_listing_is_whole(width: int) -> None:
    for argv in _groups(main, []):
        out = CliRunner().invoke(main, [*argv, "--help"], terminal_width=width).output
        listed = out.split("Commands:", 1)[1]
        assert "..." not in listed, (argv, listed)


def test_the_markdown_metric_table_names_its_columns_and_keeps_values_whole() -> None:
    header = markdown.METRIC_HEADER.splitlines()[0]
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "Metric", "Baseline → current", "Change", "Bound", "State",
    ]  # fmt: skip
    proc = perfgate("check", "-b", ZOO, "-c", str(data("zoo-bad-short-run1.csv")), "--format",
                    "markdown")  # fmt: skip
    # "0.005 -> 2.550" broke after the hyphen; an arrow between no-break spaces does not.
    assert "-&#62;" not in proc.stdout
    assert "(0.005\xa0→\xa02.550 per instructions&#95;executed)" in proc.stdout


def test_counts_agree_with_their_nouns() -> None:
    one = perfgate("explain", "-c", str(data("zoo-bad-short-run1.csv")), "-k", "zoo_atomics")
    assert one.stdout.startswith("perfgate explain: 1 kernel in ") and "1 kernels" not in one.stdout
    md = perfgate("explain", "-c", str(data("zoo-bad-short-run1.csv")), "-k", "zoo_atomics",
                  "--format", "markdown")  # fmt: skip
    assert md.stdout.startswith("### perfgate explain: 1 kernel\n")
    aten = substitution_cause(
        Side("void at::native::cat_kernel<2>(int)", {}),
        [Side("void at::native::cat_kernel<4>(int)", {})],
        "ATen",
    )
    assert aten.title == "ATen picked a different kernel"
    for family in ("ATen", "CUTLASS", "cuBLAS", "cuDNN", "Inductor"):
        title = substitution_cause(Side("a_kernel", {}), [Side("b_kernel", {})], family).title
        assert "kernel kernel" not in title, title
