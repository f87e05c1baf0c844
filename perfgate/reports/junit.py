"""JUnit XML: a testsuite per baseline (one per GPU), a testcase per kernel.

CI servers (GitLab, Jenkins, GitHub test reporters) show classname and name, so a failed test
reads "perfgate.zoo / zoo_coalescing", and its message leads with the root cause and the lever;
the metric comparisons follow in the failure text. A missing kernel is one failed testcase
that names what replaced it; input problems and comparisons that could not be made are
<error>s; kernels new to the baseline and kernels the architecture cannot measure are
<skipped>.

junit-xml writes a `disabled` attribute on <testsuites> and <testsuite> that the strict JUnit
schema (Jenkins xUnit's junit-10.xsd) does not allow; perfgate removes it, so the file
validates against that schema and still reads in junitparser, GitLab and Jenkins.

Each testcase of a baselined kernel carries `file` (the baseline file, repository-relative)
and `line` (its entry's line): GitLab, dorny/test-reporter, mikepenz/action-junit-report and
EnricoMi/publish-unit-test-result-action annotate there instead of guessing a path from the
classname (perfgate/zoo.py, which does not exist). junit-10.xsd has no such attributes:
`locations=False` leaves them out for a consumer that validates strictly against it; the
location is in the failure text either way.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from junit_xml import TestCase, TestSuite, to_xml_report_string

from perfgate.common.escape import one_line
from perfgate.judge.policy import Meaning, meaning
from perfgate.judge.states import KernelState
from perfgate.reports.format import headline, kernel_lines, location
from perfgate.reports.summary import program_text
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict, Report


def _case(v: KernelVerdict, classname: str, file: str, locations: bool) -> TestCase:
    line = v.line if file else None
    case = TestCase(
        name=one_line(v.kernel),
        classname=classname,
        file=file if locations and line is not None else None,
        line=line if locations else None,
    )
    where = [f"baseline entry: {file}:{line}"] if line is not None else []
    # Each line shown escaped (common.escape): a kernel name's newline, bidi override or
    # zero-width character reaches no CI page raw.
    lines = [v.name, *(text.strip() for text in kernel_lines(v, verbose=True)), *where]
    detail = "\n".join(one_line(text) for text in lines)
    message = one_line(headline(v))
    means = meaning(v.state)  # what the state means for the build: judge.policy's table
    if means is Meaning.FAILS:
        case.add_failure_info(message=message, output=detail, failure_type=v.state.value)
    elif means is Meaning.INPUT_ERROR:
        case.add_error_info(message=message, output=detail, error_type=v.state.value)
    elif v.state is KernelState.NEW:
        case.add_skipped_info(message=f"new kernel: {message}", output=one_line(v.name))
    elif v.state is KernelState.SKIPPED:
        case.add_skipped_info(message=message or "skipped", output=detail)
    else:  # passes: pass, improved
        case.stdout = detail
    return case


def _program_case(program: ProgramVerdict, classname: str) -> TestCase:
    """One testcase for the whole program's GPU time, failing as a regressed kernel does."""
    case = TestCase(name="program GPU time", classname=classname)
    message = one_line(program_text(program))
    if meaning(program.state) is Meaning.FAILS:
        case.add_failure_info(message=message, output=message, failure_type=program.state.value)
    elif meaning(program.state) is Meaning.INPUT_ERROR:
        case.add_error_info(message=message, output=message, error_type=program.state.value)
    elif program.state is KernelState.SKIPPED:
        case.add_skipped_info(message=message, output=message)
    else:
        case.stdout = message
    return case


def _suite(result: CheckResult, files: Mapping[str, str] | None, locations: bool) -> TestSuite:
    gpu = f" ({result.baseline_gpu})" if result.baseline_gpu else ""
    properties = {
        "baseline": one_line(result.baseline_path),
        "captures": one_line(" ".join(result.capture_paths)),
    }
    if result.baseline_gpu:
        properties["gpu"] = one_line(result.baseline_gpu)
    classname = one_line(f"perfgate.{Path(result.baseline_path).stem}")
    cases = [
        _case(v, classname, location(result, v, files)[0], locations) for v in result.ordered()
    ]
    # Judged, or skipped for want of times in the captures; a baseline recorded before
    # program time keeps its testcases as they were (the text report notes it).
    if result.program is not None and result.program.baseline is not None:
        cases.append(_program_case(result.program, classname))
    name = one_line(f"perfgate {result.baseline_path}{gpu}")
    return TestSuite(name, cases, properties=properties)


def render(report: Report, files: Mapping[str, str] | None = None, locations: bool = True) -> str:
    suites = [_suite(r, files, locations) for r in report.results]
    if report.problems:
        cases = []
        for problem in report.problems:
            case = TestCase(name="input", classname="perfgate")
            case.add_error_info(message=one_line(problem), error_type="input error")
            cases.append(case)
        suites.append(TestSuite("perfgate input", cases))
    xml = to_xml_report_string(suites, encoding="utf-8")
    root = ET.fromstring(xml.encode("utf-8"))  # noqa: S314 (our own output, not input)
    for element in root.iter():
        element.attrib.pop("disabled", None)
    text: str = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n"
