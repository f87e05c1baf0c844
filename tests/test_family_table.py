"""docs/explain.md's table of the seven families' real changes is what the check says now
(tests/family_table.py makes it), and each row says what its change is: every real change
fails and leads with one finding, the benign ones pass."""

from __future__ import annotations

from tests import family_table

BENIGN = {"train-step-logging", "nvrtc-reordered"}


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
        assert 1 <= len(family_table.findings(got)) <= 2, (change, family_table.findings(got))
