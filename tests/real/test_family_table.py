"""docs/explain.md's table of the seven families' real changes is what the check says now
(tests/family_table.py makes it), and each row says what its change is: every real change
fails and leads with one finding, the benign ones pass."""

from __future__ import annotations

from tests import family_table

BENIGN = {"train-step-logging", "nvrtc-reordered"}
# Top-k 2 -> 4 of 4 initialised experts: every expert takes every token. Besides the one
# finding of more work (x2.00, with the per-expert kernels relaunched at other grids) and
# cuBLAS's other tiles for the larger per-expert GEMMs, three kernels keep findings of their
# own for what the larger top-k does to them: top-k's tensor instructions fell 13%, CUB's
# select over twice the items meets bank conflicts, an index kernel's sectors grew x2.29.
FINDINGS = {"moe-init-topk4": 5}


def test_the_page_holds_the_table_as_made_now() -> None:
    doc = family_table.DOC.read_text(encoding="utf-8")
    assert family_table.render_section() in doc, "run: python -m tests.family_table --write"


def test_every_real_change_fails_with_a_finding_and_a_lever_and_benign_ones_pass() -> None:
    for family, change, _edit in family_table.CHANGES:
        got = family_table.result(family, change)
        title, lever = family_table.first_finding(got)
        if change in BENIGN:
            assert int(got.exit_code) == 0 and title == "passes", (change, title)
            continue
        assert int(got.exit_code) == 1, (change, int(got.exit_code))
        assert title != "passes" and lever, change
        # One change, one finding: at most the change and one mechanism of its own beside it.
        most = FINDINGS.get(change, 2)
        assert 1 <= len(family_table.findings(got)) <= most, (change, family_table.findings(got))
