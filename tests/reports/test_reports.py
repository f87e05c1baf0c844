"""Reports as their readers see them: GitHub's markdown, CI servers' JUnit, machines' JSON.

A check ends in one verdict per kernel; every reporter renders those verdicts, one row, one
testcase, one annotation per kernel."""

from __future__ import annotations

import html
import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import jsonschema
import junitparser
import pytest
import xmlschema
import yaml

from perfgate.baseline.load import load_baseline
from perfgate.causes.model import CauseKind, Evidence, RootCause
from perfgate.common.schemas import load_schema
from perfgate.ingest import read_capture
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.policy import kernel_state
from perfgate.judge.states import KernelState
from perfgate.reports import github, json_report, junit, markdown, text
from perfgate.reports.format import headline
from perfgate.verdicts.check import check
from perfgate.verdicts.model import CheckResult, KernelVerdict, LaunchCount, Report
from tests.conftest import ROOT, data

HOSTILE = "void at::reduce_kernel<512, 1, at::ReduceOp<float, a|b & c>>(*T3, `x`, _y_)\x07"
XSD = ROOT / "tests" / "data" / "junit-10.xsd"  # Jenkins xUnit's schema (MIT; see its header)
BASELINES = ROOT / "baselines" / "h100"
# What the zoo's bad build breaks (tests/zoo): every kernel but the two initialisers.
ZOO_BROKEN = {
    "zoo_coalescing",
    "zoo_atomics",
    "zoo_registers",
    "zoo_bank_conflicts",
    "zoo_divergence",
    "zoo_local_memory",
    "zoo_tensor_cores",
    "zoo_shared_occupancy",
}
ZOO_INTACT = {"init_random", "init_half"}


def _registers(kernel: str = "k") -> Comparison:
    return Comparison(
        kernel=kernel,
        metric="registers_per_thread",
        state=State.REGRESSED,
        baseline=32.0,
        current=40.0,
        unit="register/thread",
        change=8.0,
        relative_change=0.25,
        bound="+0 (exact)",
    )


def _duration(kernel: str = "k", state: State = State.PASS) -> Comparison:
    return Comparison(
        kernel=kernel,
        metric="duration",
        state=state,
        baseline=1000.0,
        current=1000.0 if state is State.PASS else 2000.0,
        unit="ns",
        change=0.0 if state is State.PASS else 1000.0,
        relative_change=0.0 if state is State.PASS else 1.0,
        bound="+15% and +2000 ns",
    )


def _verdict(
    kernel: str,
    comparisons: list[Comparison] | tuple[Comparison, ...] = (),
    state: KernelState | None = None,
    name: str | None = None,
    **kw: object,
) -> KernelVerdict:
    comps = tuple(replace(c, kernel=kernel) for c in comparisons)
    return KernelVerdict(
        kernel=kernel,
        name=name or kernel,
        state=state or kernel_state(comps),
        comparisons=comps,
        captures=("c.csv",),
        **kw,  # type: ignore[arg-type]
    )


def _report(verdicts: list[KernelVerdict], **kw: object) -> Report:
    return Report((CheckResult("b.yaml", ("c.csv",), tuple(verdicts), **kw),))  # type: ignore[arg-type]


CAUSE = RootCause(
    mechanism="register-pressure",
    kind=CauseKind.REGRESSION,
    title="Register pressure | cut occupancy",
    detail="registers per thread 32 -> 40; theoretical occupancy 100% -> 75%",
    lever="fewer live values per thread, or __launch_bounds__",
    evidence=(Evidence("registers_per_thread", 32.0, 40.0, "register/thread", ("launch__x",)),),
    explains=("registers_per_thread",),
    score=1.0,
)


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


def _kernel_rows(out: str) -> list[str]:
    """Rows of the kernel tables (three columns), not of the per-kernel metric tables."""
    return [
        line for line in out.splitlines() if line.startswith("| <code>") and len(_cells(line)) == 3
    ]


def test_the_zoo_check_judges_what_the_bad_build_broke(zoo_report: Report) -> None:
    """The oracle the report tests below lean on: one verdict per baselined kernel."""
    states = {v.kernel: v.state for v in zoo_report.verdicts}
    assert states == {
        **dict.fromkeys(ZOO_BROKEN, KernelState.REGRESSED),
        **dict.fromkeys(ZOO_INTACT, KernelState.PASS),
    }
    registers = next(v for v in zoo_report.verdicts if v.kernel == "zoo_registers")
    c = next(c for c in registers.comparisons if c.metric == "registers_per_thread")
    assert (c.state, c.baseline, c.current) == (State.REGRESSED, 32, 40)


# ------------------------------------------------------------------------------------ markdown


def test_markdown_keeps_hostile_kernel_names_intact_in_one_cell() -> None:
    v = _verdict(HOSTILE, [_registers()], causes=(CAUSE,))
    out = markdown.render(_report([v]))
    rows = _kernel_rows(out)
    assert len(rows) == 1
    kernel_cell, verdict_cell, what = _cells(rows[0])
    tags = re.sub(r"</?(code|br|sub|wbr)>", "", kernel_cell)
    assert "<" not in tags and ">" not in tags
    inner = re.search(r"<code>(.*?)</code>", kernel_cell)
    assert inner is not None and _plain(inner.group(1)) == HOSTILE.replace("\x07", "\\x07")
    assert "regressed" in verdict_cell
    # The cause's '|' is an entity, not a column break; the lever is there to read.
    assert (
        _plain(what).strip().startswith("Register pressure | cut occupancy: registers per thread")
    )
    assert "try: fewer live values per thread, or __launch_bounds__" in _plain(what)
    # The details block names the kernel intact too.
    summary = next(line for line in out.splitlines() if line.startswith("<details><summary>❌"))
    name = re.search(r"<code>(.*?)</code>", summary)
    assert name is not None and _plain(name.group(1)) == HOSTILE.replace("\x07", "\\x07")


def test_markdown_of_a_real_pytorch_check_has_well_formed_rows(tmp_path: Path) -> None:
    # The baseline as an older build recorded it, with 8 registers per thread fewer: every
    # kernel of the real PyTorch capture regresses, and each gets a details block.
    doc = yaml.safe_load((BASELINES / "torch.yaml").read_text())
    for kernel in doc["kernels"]:
        m = kernel["metrics"]["registers_per_thread"]
        m["value"] = m["min"] = m["max"] = m["value"] - 8
    older = tmp_path / "torch.yaml"
    older.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = check(load_baseline(older), read_capture(data("torch-short-run2.csv")))
    assert {v.state for v in result.verdicts} == {KernelState.REGRESSED}
    assert len(result.verdicts) == len(doc["kernels"]) == 8
    # Ids with a hash, as record gives a function with several instantiations: the details
    # show the full C++ signature under the id.
    hashed = tuple(replace(v, kernel=v.kernel + "#3fa2c1") for v in result.verdicts)
    out = markdown.render(Report((replace(result, verdicts=hashed),)))
    rows = _kernel_rows(out)
    assert len(rows) == len(hashed)
    ids = [_plain(re.sub(r"</?code>", "", _cells(r)[0])).strip() for r in rows]
    assert sorted(ids) == sorted(v.kernel for v in hashed)
    assert all(i.endswith("#3fa2c1") for i in ids)
    assert out.count("<details><summary>❌") == 8
    assert "void at::reduce_kernel<128, 4, at::ReduceOp<float" in _plain(out)
    assert "reduce&#95;<wbr>kernel&#60;128" in out  # syntax as entities, break points after '_'


def test_markdown_status_line_first_and_regressions_first(zoo_report: Report) -> None:
    out = markdown.render(zoo_report)
    assert re.match(
        r"### ❌ perfgate: FAILED: 8 regressed with \d+ root causes?, 2 passed "
        # The whole program's time follows the kernel counts (the bad build is far slower).
        r"\(10 baselined kernels\); program GPU time [^\n]*: regressed; [^\n]*\n",
        out,
    )
    verdicts = [_cells(line)[1] for line in _kernel_rows(out)]
    assert len(verdicts) == 10  # one row per kernel, not per metric
    first_pass = next(i for i, v in enumerate(verdicts) if "pass" in v)
    assert first_pass == 8 and all("regressed" in v for v in verdicts[:first_pass])
    assert all("pass" in v for v in verdicts[first_pass:])
    # Passing kernels are folded away below the ones that need attention.
    assert out.index("2 kernels passed, new or skipped") > out.index("❌ regressed")


def _details(out: str, kernel: str) -> str:
    block = out[out.index(f"<details><summary>❌ <code>{kernel}</code>") :]
    return block[: block.index("</details>")]


def test_markdown_explains_each_regressed_kernel(zoo_report: Report) -> None:
    out = markdown.render(zoo_report)
    assert out.count("<details><summary>❌") == len(ZOO_BROKEN)
    block = _details(out, "zoo&#95;atomics")
    atomics = next(v for v in zoo_report.verdicts if v.kernel == "zoo_atomics")
    stall = next(c for c in atomics.comparisons if c.metric == "dominant_stall")
    assert stall.baseline_shares and stall.current_shares
    before, after = stall.baseline_shares["drain"], stall.current_shares["drain"]
    assert before < 1 and after > 40
    assert f"| drain | {before:.1f}% | {after:.1f}% |" in block  # the stall breakdown
    assert "```mermaid\n%%{init: " in block and "\nxychart-beta horizontal\n" in block
    # The metric table: the regressed counter with both values, change and bound.
    assert re.search(
        r"\| <code>l2&#95;atomic&#95;requests</code> \| 131,072\xa0→\xa04,194,304 \| x32\.0 \| "
        r"\+0 \(exact\) \| regressed \|",
        block,
    )
    capture = markdown.code(str(data("zoo-bad-short-run1.csv")))
    assert f"launches per capture; captured in {capture}" in block
    registers = _details(out, "zoo&#95;registers")
    assert "**Occupancy**: limiter registers+warps → registers; theoretical 100% → 75%" in registers
    # Root causes, where the diagnosis found them, lead the block with their lever.
    for v in zoo_report.verdicts:
        if v.state is KernelState.REGRESSED and v.headline is not None:
            kernel_block = _details(out, markdown.cell(v.kernel))
            assert f"**Root cause: {markdown.cell(v.headline.title)}**" in kernel_block
            assert kernel_block.index("Root cause") < kernel_block.index("| Metric |")


def test_markdown_renders_a_cause_with_its_lever_evidence_and_consequences() -> None:
    v = _verdict("k", [_registers(), _duration()], causes=(CAUSE,))
    out = markdown.render(_report([v]))
    block = _details(out, "k")
    assert (
        "- **Root cause: Register pressure &#124; cut occupancy**: registers per thread 32\xa0→\xa0"
        "40; theoretical occupancy 100%\xa0→\xa075%. *Try*: fewer live values per thread, or "
        "&#95;&#95;launch&#95;bounds&#95;&#95;.<br><sub>registers&#95;per&#95;thread 32\xa0→\xa040"
        "</sub>\n  - follows from it: <code>registers&#95;per&#95;thread</code>\n"
    ) in block
    # The metric table shows what did not pass, not the passing duration.
    assert (
        "<code>registers&#95;per&#95;thread</code> | 32\xa0→\xa040 | +25.0% | +0 (exact)" in block
    )
    assert "<code>duration</code>" not in block


def test_markdown_file_references_svg_pictures_written_beside_it(
    tmp_path: Path, zoo_report: Report
) -> None:
    from perfgate.usecases.outputs import ReportOutputs, write_reports

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
    verdicts = []
    for k in range(kernels):
        name = f"void ns::kernel_{k}<float, {k}>(const float *, float *)"
        comps = []
        for m in range(metrics):
            state = State.REGRESSED if k % 3 == 0 else State.PASS
            comps.append(
                Comparison(
                    f"kernel_{k}",
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
        verdicts.append(_verdict(f"kernel_{k}", comps, name=name))
    return _report(verdicts)


def test_step_summary_stays_under_one_mebibyte_with_thousands_of_kernels() -> None:
    report = _many(3000, 30)
    assert report.counts()[KernelState.REGRESSED] == 1000
    full = markdown.render(report)
    assert len(full.encode()) > 2 * 1024 * 1024  # the whole thing would not fit
    assert len(_kernel_rows(full)) == 3000
    cut = markdown.render(
        report, budget=markdown.STEP_SUMMARY_BUDGET, full_report="perfgate-summary.md"
    )
    assert len(cut.encode()) <= 1024 * 1024
    assert cut.startswith(
        "### ❌ perfgate: FAILED: 1000 regressed, 2000 passed (3000 baselined kernels)\n"
    )
    assert "the full report is <code>perfgate-summary.md</code>" in cut
    rows = _kernel_rows(cut)
    assert rows and all("regressed" in _cells(r)[1] for r in rows)  # regressions kept first


def test_pr_comment_has_a_stable_marker_and_fits_a_comment() -> None:
    cut = markdown.render(
        _many(500, 20), budget=markdown.PR_COMMENT_BUDGET, marker=markdown.PR_COMMENT_MARKER
    )
    assert cut.startswith("<!-- perfgate:pr-comment -->\n### ❌ perfgate: FAILED")
    assert len(cut) <= 65536
    assert "cut to fit GitHub's size limit" in cut


# --------------------------------------------------------------------------------------- JUnit


def test_junit_validates_against_the_strict_schema_and_counts_add_up(
    zoo_report: Report, tmp_path: Path
) -> None:
    xml = junit.render(zoo_report, locations=False)
    assert "disabled=" not in xml
    xmlschema.XMLSchema(str(XSD)).validate(xml)
    path = tmp_path / "junit.xml"
    path.write_text(xml)
    suites = list(junitparser.JUnitXml.fromfile(str(path)))
    assert len(suites) == 1
    suite = suites[0]
    cases = list(suite)
    # One testcase per kernel, named by the kernel, grouped under the baseline, and one for
    # the whole program's GPU time.
    assert suite.tests == len(cases) == len(zoo_report.verdicts) + 1 == 11
    assert {c.name for c in cases} == ZOO_BROKEN | ZOO_INTACT | {"program GPU time"}
    assert {c.classname for c in cases} == {"perfgate.zoo"}
    assert suite.failures == len(ZOO_BROKEN) + 1 and suite.errors == 0 and suite.skipped == 0
    failed = {
        c.name: c.result[0]
        for c in cases
        if c.result and isinstance(c.result[0], junitparser.Failure)
    }
    assert set(failed) == ZOO_BROKEN | {"program GPU time"}
    f = failed["zoo_registers"]
    assert f.type == "regressed"
    # The message is the kernel's headline, the same sentence the console prints.
    console = text.render(zoo_report)
    assert f"  REGRESSED   zoo_registers: {f.message}\n" in console
    # The failure text carries the evidence: the registers before and after.
    assert re.search(r"registers_per_thread:? (baseline )?32 -> (current )?40", f.text)
    passed = next(c for c in cases if c.name == "init_random")
    assert passed.is_passed


def test_junit_one_suite_per_baseline_and_input_problems_as_errors(tmp_path: Path) -> None:
    zoo = check(
        load_baseline(BASELINES / "zoo.yaml"), read_capture(data("zoo-good-short-run1.csv"))
    )
    torch = check(
        load_baseline(BASELINES / "torch.yaml"), read_capture(data("torch-short-run1.csv"))
    )
    xml = junit.render(Report((zoo, torch)), locations=False)
    xmlschema.XMLSchema(str(XSD)).validate(xml)
    suites = list(ET.fromstring(xml).iter("testsuite"))
    assert [s.get("name") for s in suites] == [
        f"perfgate {zoo.baseline_path} (NVIDIA H100 80GB HBM3)",
        f"perfgate {torch.baseline_path} (NVIDIA H100 80GB HBM3)",
    ]
    assert [{c.get("classname") for c in s.iter("testcase")} for s in suites] == [
        {"perfgate.zoo"},
        {"perfgate.torch"},
    ]
    # Each baseline's kernels and its program time.
    assert [len(list(s.iter("testcase"))) for s in suites] == [11, 9]
    problem = junit.render(Report(problems=("capture.csv: the file is empty",)))
    xmlschema.XMLSchema(str(XSD)).validate(problem)
    error = ET.fromstring(problem).find(".//testcase/error")
    assert error is not None and error.get("message") == "capture.csv: the file is empty"


def test_junit_is_well_formed_whatever_the_names_hold() -> None:
    incomplete = Comparison(
        HOSTILE, "dominant_stall", State.MISSING_METRIC, "wait", None, message="needs <x> & y"
    )
    skipped = Comparison(
        HOSTILE,
        "dram_bytes",
        State.SKIPPED,
        1.0,
        None,
        message="not measured on compute capability 12.1",
    )
    error = Comparison(
        HOSTILE,
        "occupancy_limiter",
        State.ERROR,
        "registers",
        4.0,
        message="cannot compare 'registers' with 4.0: one is a number, the other a label",
    )
    verdicts = [
        _verdict(HOSTILE + "#1", [_duration(state=State.REGRESSED)], name=HOSTILE),
        _verdict(HOSTILE + "#2", [incomplete], name=HOSTILE),
        _verdict(HOSTILE + "#3", [skipped], name=HOSTILE),
        _verdict(HOSTILE + "#4", [error], name=HOSTILE),
        _verdict(
            HOSTILE + "#5",
            state=KernelState.MISSING,
            name=HOSTILE,
            message="this kernel is not in the capture (no launch matches <&>)",
            launches=LaunchCount(3.0, (0,)),
        ),
        _verdict(
            HOSTILE + "#6",
            state=KernelState.NEW,
            name=HOSTILE,
            message="not in the baseline; record it to gate it",
        ),
    ]
    assert [v.state for v in verdicts] == [
        KernelState.REGRESSED,
        KernelState.INCOMPLETE,
        KernelState.SKIPPED,
        KernelState.ERROR,
        KernelState.MISSING,
        KernelState.NEW,
    ]
    xml = junit.render(_report(verdicts))
    xmlschema.XMLSchema(str(XSD)).validate(xml)
    cases = {case.get("name"): case for case in ET.fromstring(xml.encode()).iter("testcase")}
    # XML 1.0 cannot hold a BEL: it is shown escaped (common.escape); the rest stays intact.
    clean = HOSTILE.replace("\x07", "\\x07")
    assert set(cases) == {f"{clean}#{i}" for i in range(1, 7)}
    assert {case.get("classname") for case in cases.values()} == {"perfgate.b"}

    def case(i: int) -> ET.Element:
        return next(c for n, c in cases.items() if n.endswith(f"#{i}"))

    regressed = case(1).find("failure")
    assert regressed is not None and regressed.get("type") == "regressed"
    assert regressed.get("message", "").startswith("duration: baseline 1 us -> current 2 us")
    failure = case(2).find("failure")
    assert failure is not None and failure.get("message") == "dominant_stall: needs <x> & y"
    assert failure.get("type") == "incomplete"
    assert case(3).find("skipped") is not None
    err = case(4).find("error")
    assert err is not None and "one is a number, the other a label" in err.get("message", "")
    missing = case(5).find("failure")
    assert missing is not None and missing.get("type") == "missing"
    assert missing.get("message") == "this kernel is not in the capture (no launch matches <&>)"
    new = case(6).find("skipped")
    assert new is not None and new.get("message", "").startswith("new kernel: ")


# ---------------------------------------------------------------------------- GitHub and text


def test_annotations_ten_worst_first_then_one_notice() -> None:
    regressed = [
        _verdict(f"r{n}", [_duration(state=State.REGRESSED), *[_registers()] * n]) for n in range(8)
    ]
    missing = [
        _verdict(f"m{n}", state=KernelState.MISSING, message="not in the capture") for n in range(3)
    ]
    incomplete = _verdict(
        "i", [Comparison("i", "duration", State.MISSING_METRIC, 1.0, None, message="needs x")]
    )
    error = _verdict(
        "e", [Comparison("e", "occupancy_limiter", State.ERROR, "warps", 1.0, message="label")]
    )
    fine = [_verdict(f"p{n}", [_duration()]) for n in range(5)]
    report = _report([*fine, *missing, incomplete, *regressed, error])
    lines = github.render(report).splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == 10 and len(lines) == 11
    assert lines[-1] == (
        "::notice title=perfgate::3 more failing kernels; see the step summary or the JUnit report"
    )
    titles = [
        re.match(r"::error file=b.yaml,title=perfgate%3A (\S+) (\w+)::", e).groups() for e in errors
    ]  # type: ignore[union-attr]
    # Worst first: an error (the gate could not judge), then regressions by how much failed,
    # then missing kernels; what is left over is counted in the notice.
    assert titles == [
        ("e", "error"),
        *[(f"r{n}", "regressed") for n in range(7, -1, -1)],
        ("m0", "missing"),
    ]
    assert not any(t[0].startswith("p") for t in titles)


def test_annotations_of_a_real_check_one_per_failing_kernel(zoo_report: Report) -> None:
    lines = github.render(zoo_report).splitlines()
    program = [line for line in lines if "title=perfgate%3A program GPU time regressed" in line]
    assert len(program) == 1  # the bad build's whole program is slower too
    lines = [line for line in lines if line not in program]
    assert len(lines) == len(ZOO_BROKEN)  # fewer than ten: no notice
    kernels = [
        re.match(r"::error file=\S+/zoo.yaml,line=\d+,title=perfgate%3A (\w+) regressed::", e)
        for e in lines
    ]
    assert all(kernels) and {m.group(1) for m in kernels if m} == ZOO_BROKEN
    # Worst first: the kernel that broke the most metrics leads, and so on down.
    failing = {v.kernel: len(v.failing) for v in zoo_report.verdicts}
    order = [failing[m.group(1)] for m in kernels if m]
    assert order == sorted(order, reverse=True) and order[0] == max(failing.values())
    assert min(order) > 0


def test_annotation_escaping_matches_githubs_toolkit() -> None:
    assert github.escape_data("50% of a\r\nb") == "50%25 of a%0D%0Ab"
    assert github.escape_property("k<1, 2>: x") == "k<1%2C 2>%3A x"
    c = Comparison("k, v", "m:x", State.MISSING_METRIC, 1.0, None, message="line1\nline2 100%")
    line = github.render(_report([_verdict("k, v", [c])])).strip()
    assert line == (
        "::error file=b.yaml,title=perfgate%3A k%2C v incomplete::m:x: line1%0Aline2 100%25"
    )
    problem = github.render(Report(problems=("a.csv: 100%\nbroken",))).strip()
    assert problem == "::error title=perfgate%3A input::a.csv: 100%25%0Abroken"


def test_text_report_lists_problems_and_hides_passes() -> None:
    ok = _verdict("fine", [_duration()])
    bad = _verdict("k", [_duration(), _registers()])
    out = text.render(_report([ok, bad]))
    lines = out.splitlines()
    assert lines[0] == "perfgate check FAILED: 1 regressed, 1 passed (2 baselined kernels)"
    assert lines[1] == (
        "  REGRESSED   k: registers_per_thread: baseline 32 -> current 40 (+25.0%), bound +0 (exact)"
    )
    assert "fine" not in out and "duration" not in out
    verbose = text.render(_report([ok, bad]), verbose=True)
    assert "  pass        fine" in verbose


def test_text_report_leads_with_the_cause_and_its_evidence() -> None:
    v = _verdict("k", [_registers(), _duration(state=State.REGRESSED)], causes=(CAUSE,))
    lines = text.render(_report([v])).splitlines()
    assert lines[0] == "perfgate check FAILED: 1 regressed with 1 root cause (1 baselined kernel)"
    assert lines[1] == (
        "  REGRESSED   k: Register pressure | cut occupancy: registers per thread 32 -> 40; "
        "theoretical occupancy 100% -> 75%; try: fewer live values per thread, or "
        "__launch_bounds__"
    )
    rest = "\n".join(lines[2:])
    assert "evidence: registers_per_thread 32 -> 40" in rest
    assert "follows from it: registers_per_thread" in rest
    # What the cause does not explain is shown on its own, in full.
    assert (
        "              duration: baseline 1 us -> current 2 us (+100.0%), bound +15% and +2000 ns"
        in lines
    )


def test_a_missing_kernel_is_one_line_not_one_per_metric() -> None:
    result = check(
        load_baseline(BASELINES / "zoo.yaml"), read_capture(data("torch-short-run1.csv"))
    )
    report = Report((result,))
    counts = report.counts()
    assert counts[KernelState.MISSING] == 10 and counts[KernelState.NEW] == 8
    out = text.render(report)
    status = out.splitlines()[0]
    assert status.startswith("perfgate check FAILED: 10 missing, 8 new (10 baselined kernels); ")
    # Another program's capture: its time is all new kernels', the zoo's all missing ones'.
    assert re.search(r"improved; new kernels 301\.5 us, missing 1,5\d\d\.\d us\)$", status)
    missing = [line for line in out.splitlines() if line.startswith("  MISSING ")]
    assert len(missing) == 10
    assert len({line.split(":")[0] for line in missing}) == 10
    assert all("is not in the capture" in line for line in missing)
    assert "(8 new kernels not in the baseline; -v lists every kernel)" in out
    assert result.notice.startswith("none of the 10 baselined kernels is in")


# ---------------------------------------------------------------------------------------- JSON


def test_json_validates_against_its_schema(zoo_report: Report) -> None:
    validator = jsonschema.Draft202012Validator(load_schema("result.schema.json"))
    doc = json.loads(json_report.render(zoo_report))
    validator.validate(doc)
    assert doc["status"] == "failed" and doc["exit_code"] == 1
    assert doc["counts"]["regressed"] == len(ZOO_BROKEN) and doc["counts"]["pass"] == 2
    kernels = doc["results"][0]["kernels"]
    assert len(kernels) == 10
    assert [k["state"] for k in kernels] == ["regressed"] * 8 + ["pass"] * 2  # worst first
    registers = next(k for k in kernels if k["kernel"] == "zoo_registers")
    c = next(c for c in registers["comparisons"] if c["metric"] == "registers_per_thread")
    assert (c["state"], c["baseline"], c["current"], c["bound"]) == (
        "regressed",
        32,
        40,
        "+0 (exact)",
    )
    assert registers["captures"] == [str(data("zoo-bad-short-run1.csv"))]
    assert (
        doc["root_causes"]
        == zoo_report.cause_count
        == sum(1 for k in kernels for cause in k["causes"] if cause["kind"] == "regression")
    )
    problems = json.loads(json_report.render(Report(problems=("x.csv: the file is empty",))))
    validator.validate(problems)
    assert problems["status"] == "error" and problems["exit_code"] == 2
    assert problems["results"] == [] and problems["problems"] == ["x.csv: the file is empty"]


def test_json_holds_causes_and_no_nan() -> None:
    nan = replace(_duration(state=State.REGRESSED), current=math.nan, change=math.inf)
    v = _verdict("k", [_registers(), nan], causes=(CAUSE,), launches=LaunchCount(2.0, (2, 3)))
    missing = _verdict(
        "gone",
        state=KernelState.MISSING,
        message="replaced by 1 new kernel",
        related=("k2",),
        launches=LaunchCount(None, (0,)),
    )
    text_ = json_report.render(_report([v, missing]))
    assert "NaN" not in text_ and "Infinity" not in text_
    doc = json.loads(text_)
    jsonschema.Draft202012Validator(load_schema("result.schema.json")).validate(doc)
    assert doc["root_causes"] == 1
    assert doc["counts"] == {**{s.value: 0 for s in KernelState}, "regressed": 1, "missing": 1}
    k = next(k for k in doc["results"][0]["kernels"] if k["kernel"] == "k")
    assert k["launches"] == {"baseline": 2.0, "current": [2, 3]}
    (cause,) = k["causes"]
    assert cause["mechanism"] == "register-pressure" and cause["kind"] == "regression"
    assert cause["explains"] == ["registers_per_thread"]
    assert cause["evidence"] == [
        {
            "metric": "registers_per_thread",
            "before": 32.0,
            "after": 40.0,
            "unit": "register/thread",
            "raw": ["launch__x"],
        }
    ]
    duration = next(c for c in k["comparisons"] if c["metric"] == "duration")
    assert duration["current"] is None and duration["change"] is None
    gone = next(k for k in doc["results"][0]["kernels"] if k["kernel"] == "gone")
    assert gone["state"] == "missing" and gone["related"] == ["k2"] and gone["comparisons"] == []


def test_headline_is_what_every_reporter_leads_with() -> None:
    v = _verdict("k", [_registers()], causes=(CAUSE,))
    report = _report([v])
    sentence = headline(v)
    assert sentence.startswith("Register pressure | cut occupancy: ")
    assert f"k: {sentence}" in text.render(report)
    assert github.escape_data(sentence) in github.render(report)
    failure = ET.fromstring(junit.render(report)).find(".//testcase/failure")
    assert failure is not None and failure.get("message") == sentence
    assert markdown.cell(sentence) in markdown.render(report)


def test_stall_reasons_of_equal_share_are_ordered_by_name() -> None:
    from perfgate.reports.format import by_share

    before = {"drain": 1.8, "branch_resolving": 1.8, "long_scoreboard": 40.0}
    after = {"branch_resolving": 1.8, "drain": 1.7, "wait": 3.0}
    assert by_share(before, after) == ["long_scoreboard", "wait", "branch_resolving", "drain"]


def test_markdown_is_the_same_whatever_the_hash_seed() -> None:
    # Two stall reasons of the zoo's good build share 1.8% each: their order, and which of them
    # made the table's cut, followed the order of a set, which changes with the hash seed.
    args = [
        sys.executable,
        "-m",
        "perfgate",
        "check",
        "-b",
        "baselines/h100/zoo.yaml",
        "-c",
        "tests/data/h100/session1/zoo-good-short-run1.csv.gz",
        "--format",
        "markdown",
    ]
    outputs = {
        subprocess.run(
            args,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(outputs) == 1
