"""JUnit XML: a testsuite per baseline (one per GPU), a testcase per (kernel, metric).

CI servers (GitLab, Jenkins, GitHub test reporters) show classname and name, so a failed test
reads "zoo_coalescing / sectors_per_request_ld". Regressions and missing kernels or metrics
are <failure>s whose message gives baseline -> current, the change and the bound; input
problems and comparisons that could not be made are <error>s; metrics the architecture does
not have, and kernels that are not in the baseline, are <skipped>.

junit-xml writes a `disabled` attribute on <testsuites> and <testsuite> that the strict JUnit
schema (Jenkins xUnit's junit-10.xsd) does not allow; perfgate removes it, so the file
validates against that schema and still reads in junitparser, GitLab and Jenkins, none of
which use the attribute.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from junit_xml import TestCase, TestSuite, to_xml_report_string

from perfgate.compare import CheckResult, Comparison, Report, State
from perfgate.reports.format import transition


def _case(c: Comparison) -> TestCase:
    case = TestCase(name=c.metric or "kernel", classname=c.kernel)
    if c.state is State.REGRESSED:
        message = transition(c) + (f", bound {c.bound}" if c.bound else "")
        if c.message:
            message += f"; {c.message}"
        case.add_failure_info(
            message=message, output=f"{c.kernel_name}\n{message}", failure_type="regressed"
        )
    elif c.state in (State.MISSING_KERNEL, State.MISSING_METRIC):
        case.add_failure_info(message=c.message, output=c.kernel_name, failure_type=c.state.value)
    elif c.state is State.ERROR:
        case.add_error_info(message=c.message, output=c.kernel_name, error_type="error")
    elif c.state is State.NEW_KERNEL:
        case.add_skipped_info(message=f"new kernel: {c.message}", output=c.kernel_name)
    elif c.state is State.SKIPPED:
        case.add_skipped_info(message=c.message, output=c.kernel_name)
    else:  # pass, improved
        case.stdout = (
            transition(c)
            + (f", bound {c.bound}" if c.bound else "")
            + ("; improved" if c.state is State.IMPROVED else "")
        )
    return case


def _suite(result: CheckResult) -> TestSuite:
    gpu = f" ({result.baseline_gpu})" if result.baseline_gpu else ""
    properties = {"baseline": result.baseline_path, "captures": " ".join(result.capture_paths)}
    if result.baseline_gpu:
        properties["gpu"] = result.baseline_gpu
    return TestSuite(
        f"perfgate {result.baseline_path}{gpu}",
        [_case(c) for c in result.ordered()],
        properties=properties,
    )


def render(report: Report) -> str:
    suites = [_suite(r) for r in report.results]
    if report.problems:
        cases = []
        for problem in report.problems:
            case = TestCase(name="input", classname="perfgate")
            case.add_error_info(message=problem, error_type="input error")
            cases.append(case)
        suites.append(TestSuite("perfgate input", cases))
    xml = to_xml_report_string(suites, encoding="utf-8")
    root = ET.fromstring(xml.encode("utf-8"))  # noqa: S314 (our own output, not input)
    for element in root.iter():
        element.attrib.pop("disabled", None)
    text: str = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n"
