"""Reports as their readers see them: GitHub's markdown, CI servers' JUnit, machines' JSON."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import jsonschema
import junitparser
import pytest
import xmlschema

from perfgate.baseline import load_baseline
from perfgate.compare import CheckResult, Comparison, Report, State, check
from perfgate.ingest import read_capture
from perfgate.reports import github, json_report, junit, markdown, text
from perfgate.schemas import load_schema
from tests.conftest import ROOT, data

HOSTILE = "void at::reduce_kernel<512, 1, at::ReduceOp<float, a|b & c>>(*T3, `x`, _y_)\x07"
XSD = ROOT / "tests" / "data" / "junit-10.xsd"  # Jenkins xUnit's schema (MIT; see its header)
BASELINES = ROOT / "baselines" / "h100"


def _report(comparisons: list[Comparison], **kw: object) -> Report:
    return Report((CheckResult("b.yaml", ("c.csv",), tuple(comparisons), **kw),))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def zoo_report() -> Report:
    baseline = load_baseline(BASELINES / "zoo.yaml")
    return Report((check(baseline, read_capture(data("zoo-bad-short-run1.csv"))),))


def _plain(text: str) -> str:
    """What a reader sees: entities decoded, <wbr> break points gone."""
    return html.unescape(text.replace("<wbr>", ""))


def _cells(row: str) -> list[str]:
    # GFM splits a table row at every '|' that is not escaped.
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


# ------------------------------------------------------------------------------------ markdown


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
    out = markdown.render(_report([c]))
    row = next(line for line in out.splitlines() if line.startswith("| <code>"))
    assert len(_cells(row)) == 7
    kernel_cell = _cells(row)[0]
    tags = re.sub(r"</?(code|br|sub|wbr)>", "", kernel_cell)
    assert "<" not in tags and ">" not in tags
    inner = re.search(r"<code>(.*?)</code>", kernel_cell)
    assert inner is not None and _plain(inner.group(1)) == HOSTILE.replace("\x07", "\ufffd")


def test_markdown_of_a_real_pytorch_check_has_well_formed_rows() -> None:
    result = check(
        load_baseline(BASELINES / "torch.yaml"), read_capture(data("torch-short-run2.csv"))
    )
    # Ids with a hash, as record gives a function with several instantiations: then the table
    # shows the full C++ signature under the id.
    hashed = [replace(c, kernel=c.kernel + "#3fa2c1") for c in result.comparisons]
    result = replace(result, comparisons=tuple(hashed))
    out = markdown.render(Report((result,)))
    rows = [line for line in out.splitlines() if line.startswith("| <code>")]
    assert len(rows) == len(result.comparisons)
    assert all(len(_cells(r)) == 7 for r in rows)
    assert "void at::reduce_kernel<128, 4, at::ReduceOp<float" in _plain(out)
    assert "reduce&#95;<wbr>kernel&#60;128" in out  # syntax as entities, break points after '_'


def test_markdown_status_line_first_and_regressions_first(zoo_report: Report) -> None:
    out = markdown.render(zoo_report)
    assert out.startswith("### ❌ perfgate: FAILED: ")
    verdicts = [_cells(line)[6] for line in out.splitlines() if line.startswith("| <code>")]
    first_pass = next(i for i, v in enumerate(verdicts) if "pass" in v)
    assert all(
        "pass" in v for v in verdicts[first_pass:]
    )  # nothing after the first pass but passes
    assert "regressed" in verdicts[0]


def test_markdown_explains_each_regressed_kernel(zoo_report: Report) -> None:
    out = markdown.render(zoo_report)
    block = out[out.index("<details><summary>❌ <code>zoo&#95;atomics</code>") :]
    block = block[: block.index("</details>")]
    assert "Atomic contention" in block  # the diagnosis headline
    stall = next(
        c
        for c in zoo_report.comparisons
        if c.kernel == "zoo_atomics" and c.metric == "dominant_stall"
    )
    assert stall.baseline_shares and stall.current_shares
    before, after = stall.baseline_shares["drain"], stall.current_shares["drain"]
    assert before < 1 and after > 40
    assert (
        f"| drain | {before:.1f}% | {after:.1f}% |" in block
    )  # the stall breakdown before and after
    assert "```mermaid\nxychart-beta" in block  # a picture GitHub draws
    assert "*Try*: reduce hierarchically" in block
    assert "lts__t_requests_srcunit_tex_op_red.sum" in _plain(block)  # the counters it rests on
    registers = out[out.index("<details><summary>❌ <code>zoo&#95;registers</code>") :]
    assert "**Occupancy**: limiter registers+warps → registers; theoretical 100% → 75%" in registers


def test_markdown_file_references_svg_pictures_written_beside_it(
    tmp_path: Path, zoo_report: Report
) -> None:
    from perfgate.gate import ReportOutputs, write_reports

    target = tmp_path / "summary.md"
    write_reports(zoo_report, ReportOutputs(markdown=str(target)))
    text_ = target.read_text()
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+\.svg)\)", text_)
    assert len(pictures) >= 3 and "```mermaid" not in text_
    for name in pictures:
        svg = ET.parse(tmp_path / name).getroot()  # well-formed
        assert (
            svg.tag.endswith("svg") and svg.find(".//{http://www.w3.org/2000/svg}rect") is not None
        )


def _many(kernels: int, metrics: int) -> Report:
    comps = []
    for k in range(kernels):
        name = f"void ns::kernel_{k}<float, {k}>(const float *, float *)"
        for m in range(metrics):
            state = State.REGRESSED if (k + m) % 7 == 0 else State.PASS
            comps.append(
                Comparison(
                    f"kernel_{k}",
                    name,
                    f"metric_{m}",
                    state,
                    1.0,
                    2.0,
                    "ns",
                    1.0,
                    1.0,
                    "+15% and +2000 ns",
                )
            )
    return _report(comps)


def test_step_summary_stays_under_one_mebibyte_with_thousands_of_kernels() -> None:
    report = _many(3000, 30)
    full = markdown.render(report)
    assert len(full.encode()) > 2 * 1024 * 1024  # the whole thing would not fit
    cut = markdown.render(
        report, budget=markdown.STEP_SUMMARY_BUDGET, full_report="perfgate-summary.md"
    )
    assert len(cut.encode()) <= 1024 * 1024
    assert cut.startswith("### ❌ perfgate: FAILED")
    assert "the full report is <code>perfgate-summary.md</code>" in cut
    rows = [line for line in cut.splitlines() if line.startswith("| <code>")]
    assert rows and all("regressed" in _cells(r)[6] for r in rows)  # regressions kept first


def test_pr_comment_has_a_stable_marker_and_fits_a_comment() -> None:
    cut = markdown.render(
        _many(500, 20), budget=markdown.PR_COMMENT_BUDGET, marker=markdown.PR_COMMENT_MARKER
    )
    assert cut.startswith("<!-- perfgate:pr-comment -->\n")
    assert len(cut) <= 65536


# --------------------------------------------------------------------------------------- JUnit


def test_junit_validates_against_the_strict_schema_and_counts_add_up(
    zoo_report: Report, tmp_path: Path
) -> None:
    xml = junit.render(zoo_report)
    assert "disabled=" not in xml
    xmlschema.XMLSchema(str(XSD)).validate(xml)
    path = tmp_path / "junit.xml"
    path.write_text(xml)
    suites = list(junitparser.JUnitXml.fromfile(str(path)))
    assert len(suites) == 1
    suite = suites[0]
    cases = list(suite)
    counts = zoo_report.counts()
    failing = counts[State.REGRESSED] + counts[State.MISSING_KERNEL] + counts[State.MISSING_METRIC]
    assert suite.tests == len(cases) == len(zoo_report.comparisons)
    assert suite.failures == failing and suite.errors == counts[State.ERROR]
    assert suite.skipped == counts[State.NEW_KERNEL] + counts[State.SKIPPED]
    failed = {
        (c.classname, c.name): c.result[0]
        for c in cases
        if c.result and isinstance(c.result[0], junitparser.Failure)
    }
    f = failed[("zoo_registers", "registers_per_thread")]
    assert (
        f.message == "baseline 32 -> current 40 (+25.0%), bound +0 (exact)"
        and f.type == "regressed"
    )


def test_junit_one_suite_per_baseline_and_input_problems_as_errors(tmp_path: Path) -> None:
    zoo = check(
        load_baseline(BASELINES / "zoo.yaml"), read_capture(data("zoo-good-short-run1.csv"))
    )
    torch = check(
        load_baseline(BASELINES / "torch.yaml"), read_capture(data("torch-short-run1.csv"))
    )
    xml = junit.render(Report((zoo, torch)))
    xmlschema.XMLSchema(str(XSD)).validate(xml)
    names = [s.get("name") for s in ET.fromstring(xml).iter("testsuite")]
    assert names == [
        f"perfgate {zoo.baseline_path} (NVIDIA H100 80GB HBM3)",
        f"perfgate {torch.baseline_path} (NVIDIA H100 80GB HBM3)",
    ]
    problem = junit.render(Report(problems=("capture.csv: the file is empty",)))
    xmlschema.XMLSchema(str(XSD)).validate(problem)
    error = ET.fromstring(problem).find(".//testcase/error")
    assert error is not None and error.get("message") == "capture.csv: the file is empty"


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
    skipped = Comparison(
        HOSTILE,
        HOSTILE,
        "dram_bytes",
        State.SKIPPED,
        1.0,
        None,
        message="not measured on compute capability 12.1",
    )
    xml = junit.render(_report([c, missing, skipped]))
    xmlschema.XMLSchema(str(XSD)).validate(xml)
    cases = list(ET.fromstring(xml.encode()).iter("testcase"))
    assert [case.get("name") for case in cases] == ["duration", "dominant_stall", "dram_bytes"]
    assert cases[0].get("classname", "").startswith("void at::reduce_kernel<512")
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "needs <x> & y"
    assert cases[2].find("skipped") is not None


# ---------------------------------------------------------------------------- GitHub and text


def test_annotations_ten_worst_first_then_one_notice(zoo_report: Report) -> None:
    lines = github.render(zoo_report).splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == 10
    failing = sum(1 for c in zoo_report.comparisons if c.state is State.REGRESSED)
    assert (
        lines[-1]
        == f"::notice title=perfgate::{failing - 10} more failing comparisons; see the step summary or the JUnit report"
    )
    # Worst first: the largest relative change leads (shared-memory bank conflicts, x536).
    regressed = [
        c
        for c in zoo_report.comparisons
        if c.state is State.REGRESSED and c.relative_change is not None
    ]
    worst = max(regressed, key=lambda c: abs(c.relative_change or 0.0))
    assert f"{worst.kernel} {worst.metric} regressed::" in errors[0]
    assert errors[0].startswith(
        "::error title=perfgate%3A zoo_bank_conflicts shared_bank_conflicts"
    )


def test_annotation_escaping_matches_githubs_toolkit() -> None:
    assert github.escape_data("50% of a\r\nb") == "50%25 of a%0D%0Ab"
    assert github.escape_property("k<1, 2>: x") == "k<1%2C 2>%3A x"
    c = Comparison("k, v", "k", "m:x", State.MISSING_METRIC, 1.0, None, message="line1\nline2 100%")
    line = github.render(_report([c])).strip()
    assert line == "::error title=perfgate%3A k%2C v m%3Ax missing metric::line1%0Aline2 100%25"


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
    out = text.render(_report([ok, bad]))
    assert (
        out.splitlines()[0] == "perfgate check FAILED: 1 regressed, 1 passed (1 baselined kernels)"
    )
    assert "duration" not in out
    assert "duration" in text.render(_report([ok, bad]), verbose=True)


# ---------------------------------------------------------------------------------------- JSON


def test_json_validates_against_its_schema(zoo_report: Report) -> None:
    doc = json.loads(json_report.render(zoo_report))
    jsonschema.Draft202012Validator(load_schema("result.schema.json")).validate(doc)
    assert doc["status"] == "failed" and doc["exit_code"] == 1
    assert doc["counts"]["regressed"] == sum(
        1 for c in zoo_report.comparisons if c.state is State.REGRESSED
    )
    findings = doc["results"][0]["diagnoses"]["zoo_atomics"]["findings"]
    assert findings[0]["rule"] == "atomic-contention"
    problems = json.loads(json_report.render(Report(problems=("x.csv: the file is empty",))))
    jsonschema.Draft202012Validator(load_schema("result.schema.json")).validate(problems)
    assert problems["status"] == "error" and problems["results"] == []
