"""JUnit XML: one testcase per (kernel, metric), classname = kernel, name = metric.

CI servers (GitLab, Jenkins, GitHub test reporters) show classname and name, so a failed test
reads "zoo_coalescing / sectors_per_request_ld". Regressions and missing kernels or metrics are
<failure>s whose message gives baseline -> current, the change and the bound; comparisons
that could not be made are <error>s; kernels not in the baseline are <skipped>.
"""

from __future__ import annotations

from junit_xml import TestCase, TestSuite, to_xml_report_string

from perfgate.compare import CheckResult, Comparison, State
from perfgate.reports.format import transition


def _case(c: Comparison) -> TestCase:
    name = c.metric or "kernel"
    case = TestCase(name=name, classname=c.kernel, file=None)
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
        case.add_error_info(message=c.message, error_type="error")
    elif c.state is State.NEW_KERNEL:
        case.add_skipped_info(message=f"new kernel: {c.message}", output=c.kernel_name)
    else:
        case.stdout = transition(c) + (f", bound {c.bound}" if c.bound else "")
    return case


def render(result: CheckResult) -> str:
    name = f"perfgate {result.baseline_path}"
    suite = TestSuite(
        name,
        [_case(c) for c in result.ordered()],
        properties={
            "baseline": result.baseline_path,
            "captures": " ".join(result.capture_paths),
        },
    )
    xml: str = to_xml_report_string([suite], encoding="utf-8")
    return xml
