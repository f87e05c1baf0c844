"""The diagnosis rules on the real zoo: each regressed kernel gets the finding that names its
regression, the good build does not."""

from __future__ import annotations

import pytest

from perfgate.causes.without_baseline import diagnose, quadrant
from perfgate.identity.grouping import group_launches
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture
from tests.conftest import data
from tests.zoo.expectations import EXPECTED_MECHANISMS

EXPECTED = EXPECTED_MECHANISMS


def _rules(capture: Capture) -> dict[str, set[str]]:
    out = {}
    for group in group_launches(capture.launches):
        d = diagnose(group.launches[0].function, list(group.launches), capture.columns)
        out[d.kernel] = {f.rule for f in d.findings}
    return out


@pytest.mark.parametrize("form", ["short-run1.csv", "short-run3.csv", "full-run2.csv.gz"])
def test_each_regression_gets_its_finding_and_the_good_build_does_not(form: str) -> None:
    bad = _rules(read_capture(data(f"zoo-bad-{form}")))
    good = _rules(read_capture(data(f"zoo-good-{form}")))
    for kernel, rule in EXPECTED.items():
        assert rule in bad[kernel], (kernel, bad[kernel])
        assert rule not in good[kernel], (kernel, good[kernel])


def test_every_finding_cites_counters_and_a_lever() -> None:
    capture = read_capture(data("zoo-bad-full-run1.csv.gz"))
    for group in group_launches(capture.launches):
        for finding in diagnose(
            group.launches[0].function, list(group.launches), capture.columns
        ).findings:
            assert finding.lever and finding.evidence
            assert all(
                "__" in e.source or "launch__" in e.source or "shares of" in e.source
                for e in finding.evidence
            )


def test_quadrants_follow_the_seed_table() -> None:
    assert quadrant(90, 30) == "compute-bound"
    assert quadrant(30, 90) == "memory-bound"
    assert quadrant(85, 85) == "balanced (near both limits)"
    assert quadrant(20, 20) == "under-utilised (latency or launch bound)"
    assert quadrant(65, 55) == "between quadrants"
