from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

from perfgate.baseline import load_baseline
from perfgate.compare import CheckResult, Comparison, State, check
from perfgate.ingest import read_capture
from perfgate.reports import junit, markdown, text
from tests.conftest import ROOT, data

HOSTILE = "void at::reduce_kernel<512, 1, at::ReduceOp<float, a|b & c>>(*T3, `x`, _y_)\x07"


def _result(comparisons: list[Comparison]) -> CheckResult:
    return CheckResult("b.yaml", ("c.csv",), tuple(comparisons))


def _cells(row: str) -> list[str]:
    # GFM splits a table row at every '|' that is not escaped.
    return [c for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def test_markdown_keeps_hostile_kernel_names_intact_in_one_cell() -> None:
    c = Comparison(
        HOSTILE,
        HOSTILE,
        "registers_per_thread",
        State.REGRESSED,
        32.0,
        40.0,
        "register/thread",
        8.0,
        0.25,
        "+0 (exact)",
    )
    out = markdown.render(_result([c]))
    row = next(line for line in out.splitlines() if line.startswith("| <code>"))
    assert len(_cells(row)) == 7
    kernel_cell = _cells(row)[0]
    assert "<" not in kernel_cell.replace("<code>", "").replace("</code>", "").replace(
        "<br>", ""
    ).replace("<sub>", "").replace("</sub>", "")
    # Undoing the entities gives the name back, the control character replaced.
    inner = re.search(r"<code>(.*?)</code>", kernel_cell)
    assert inner is not None and html.unescape(inner.group(1)) == HOSTILE.replace("\x07", "�")


def test_markdown_of_a_real_pytorch_check_has_well_formed_rows() -> None:
    result = check(
        load_baseline(ROOT / "baselines/h100/torch.yaml"),
        read_capture(data("torch-short-run2.csv")),
    )
    out = markdown.render(result)
    rows = [line for line in out.splitlines() if line.startswith("| <code>")]
    assert len(rows) == len(result.comparisons) == 280
    assert all(len(_cells(r)) == 7 for r in rows)
    assert "void at::reduce_kernel<128, 4, at::ReduceOp<float" in html.unescape(out)
    assert "reduce&#95;kernel&#60;128" in out  # markdown and HTML syntax written as entities


def test_junit_is_well_formed_whatever_the_names_hold() -> None:
    c = Comparison(HOSTILE, HOSTILE, "duration", State.REGRESSED, 1.0, 2.0, "ns", 1.0, 1.0, "+15%")
    missing = Comparison(
        HOSTILE,
        HOSTILE,
        "dominant_stall",
        State.MISSING_METRIC,
        "wait",
        None,
        message="needs <x> & y",
    )
    xml = junit.render(_result([c, missing]))
    root = ET.fromstring(xml.encode())
    cases = list(root.iter("testcase"))
    assert [case.get("name") for case in cases] == ["duration", "dominant_stall"]
    assert cases[0].get("classname", "").startswith("void at::reduce_kernel<512")
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "needs <x> & y"


def test_text_report_lists_problems_and_hides_passes() -> None:
    ok = Comparison("k", "k", "duration", State.PASS, 1.0, 1.0, "ns", 0.0, 0.0, "+15%")
    bad = Comparison(
        "k",
        "k",
        "registers_per_thread",
        State.REGRESSED,
        32.0,
        40.0,
        "register/thread",
        8.0,
        0.25,
        "+0 (exact)",
    )
    out = text.render(_result([ok, bad]))
    assert (
        out.splitlines()[0] == "perfgate check FAILED: 1 regressed, 1 passed (1 baselined kernels)"
    )
    assert "duration" not in out
    assert "duration" in text.render(_result([ok, bad]), verbose=True)
