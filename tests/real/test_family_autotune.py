"""An autotuner's other choice in an unchanged build (Triton's softmax at two sizes, fam-b) is
told as the autotuner's finding, first, and nothing the configuration alone decides is told
beside it as the program's work."""

from __future__ import annotations

from perfgate.judge.states import KernelState
from tests import family_table


def test_the_slower_choice_leads_and_no_more_work_is_claimed_from_the_tile() -> None:
    got = family_table.result("triton-sizes", "triton-sizes")
    failing = [v for v in got.verdicts if v.state is KernelState.REGRESSED]
    assert failing, "the unchanged build's autotuner chose a slower configuration on fam-b"
    for v in failing:
        assert v.headline is not None and v.headline.mechanism == "autotuned-configuration"
        # 16 warps against the recorded median of 4 run x2.11 the instructions for the same
        # rows: the configuration's doing, not more work.
        assert "more-work" not in [c.mechanism for c in v.causes], [c.title for c in v.causes]


def test_traffic_more_work_still_stands_beside_a_choice() -> None:
    # The fp32 output: the store bytes doubled whatever the configuration; that finding leads.
    got = family_table.result("triton-sizes", "triton-sizes-fp32-out")
    heads = [v.headline.mechanism for v in got.verdicts if v.headline and int(v.exit_code)]
    assert heads and all(h == "wider-stores" for h in heads), heads
