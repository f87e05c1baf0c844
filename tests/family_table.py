"""The table of docs/explain.md's "Real changes of seven more kinds of code", made from the
captures so the page cannot rot: tests/real/test_family_table.py checks that the page holds it as
made now.

    python -m tests.family_table --write   # rewrite the section of docs/explain.md
"""

from __future__ import annotations

import functools
import sys

from perfgate.baseline.model import Baseline
from perfgate.ingest import read_capture
from perfgate.ingest.launches import merge
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.reports import text
from perfgate.reports.markup import cell
from perfgate.verdicts.check import check
from perfgate.verdicts.model import CheckResult, Report
from tests.conftest import ROOT

FAMILIES = ROOT / "tests" / "data" / "field" / "families"
DOC = ROOT / "docs" / "explain.md"
BEGIN = "<!-- family-table: made by `python -m tests.family_table --write` -->"
END = "<!-- end of family-table -->"

# (baseline family, change capture on fam-b, the edit a user made)
CHANGES: tuple[tuple[str, str, str], ...] = (
    ("moe", "moe-topk4", "Mixtral MoE block: top-k 2 -> 4"),
    ("moe-init", "moe-init-topk4", "the same block with its weights initialised: top-k 2 -> 4"),
    ("train-step", "train-step-forloop", "AdamW fused=True -> for-loop"),
    ("train-step", "train-step-logging", "host-only logging each step (benign)"),
    ("cub", "cub-int64", "torch.sort keys int32 -> int64"),
    ("nvrtc", "nvrtc-bank-conflicts", "the transpose's shared tile loses its padding"),
    ("nvrtc", "nvrtc-uncoalesced", "the copy reads with a 32-way stride"),
    ("nvrtc", "nvrtc-spills", "built with --maxrregcount=32"),
    ("nvrtc", "nvrtc-reordered", "the three kernels launched in another order (benign)"),
    ("vit", "vit-fp32", "timm ViT fp16 -> fp32"),
    ("jax-train", "jax-remat", "jax.checkpoint on each hidden layer"),
    ("triton-sizes", "triton-sizes-fp32-out", "a Triton softmax writes fp32 instead of bf16"),
)


# (baseline start, change start) per family: fam-a and fam-b, but the MoE with its weights
# initialised, captured later with its baseline and its change on one start of its own.
STARTS: dict[str, tuple[str, str]] = {"moe-init": ("fam-f", "fam-f")}


def starts(family: str) -> tuple[str, str]:
    return STARTS.get(family, ("fam-a", "fam-b"))


@functools.cache
def baseline(family: str) -> Baseline:
    runs = [
        read_capture(FAMILIES / starts(family)[0] / f"{family}-run{i}.csv.gz") for i in (1, 2, 3)
    ]
    return record(merge(runs), RecordSettings()).baseline


@functools.cache
def result(family: str, change: str) -> CheckResult:
    """The check of fam-b's capture `change` (the unchanged build when it is the family's
    name) against fam-a's baseline of `family` (or the starts STARTS names)."""
    path = FAMILIES / starts(family)[1] / f"{change}-run1.csv.gz"
    return check(baseline(family), read_capture(path))


def first_finding(got: CheckResult) -> tuple[str, str]:
    """(title, lever) of the report's first finding: a change finding, else the first failing
    kernel's headline; ("passes", "") when the check passes."""
    if got.changes:
        return got.changes[0].title, got.changes[0].lever
    for v in got.verdicts:
        if v.headline is not None and int(v.exit_code) != 0:
            return f"{v.kernel}: {v.headline.title}", v.headline.lever
    return "passes", ""


def findings(got: CheckResult) -> list[str]:
    """The findings the console report prints: a change finding or a kernel's headline."""
    starts = ("  CHANGE ", "  REGRESSED ", "  MISSING ", "  UNJUDGED ")
    report = text.render(Report(results=(got,)))
    return [line for line in report.splitlines() if line.startswith(starts)]


def render_section() -> str:
    out = [BEGIN, "", "| edit | exit | findings | first finding | lever |", "|---|---|---|---|---|"]
    for family, change, edit in CHANGES:
        got = result(family, change)
        title, lever = first_finding(got)
        out.append(
            f"| `{change}`: {cell(edit)} | {int(got.exit_code)} | {len(findings(got))} | "
            f"{cell(title)} | {cell(lever)} |"
        )
    out += ["", END]
    return "\n".join(out)


def write() -> None:
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} section to rewrite")
    head, rest = doc.split(BEGIN, 1)
    DOC.write_text(head + render_section() + rest.split(END, 1)[1], encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(render_section())
