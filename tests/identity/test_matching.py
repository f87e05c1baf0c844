"""Matching's passes, each on synthetic launches: which rule pairs a baseline entry with a
group of a later capture, and what a missing kernel is paired with."""

from __future__ import annotations

from perfgate.baseline.model import Baseline
from perfgate.identity.grouping import group_launches
from perfgate.identity.matching import Matching, match
from perfgate.ingest.launches import Capture, Launch
from perfgate.lifecycle.record import RecordSettings, record

BLOCK = (128, 1, 1)


def _launch(index: int, name: str, grid: tuple[int, int, int]) -> Launch:
    return Launch(index, name, name, BLOCK, grid, {"smsp__inst_executed.sum": 1e6}, source="a.csv")


def _run(kernels: list[tuple[str, tuple[int, int, int]]]) -> list[Launch]:
    return [_launch(i, name, grid) for i, (name, grid) in enumerate(kernels)]


def _baseline(kernels: list[tuple[str, tuple[int, int, int]]]) -> Baseline:
    launches = tuple(_run(kernels))
    columns = frozenset(k for la in launches for k in la.metrics)
    return record(Capture(("a.csv",), launches, columns), RecordSettings()).baseline


def _match(
    before: list[tuple[str, tuple[int, int, int]]], after: list[tuple[str, tuple[int, int, int]]]
) -> tuple[Baseline, Matching]:
    baseline = _baseline(before)
    return baseline, match(baseline, group_launches(_run(after)))


def _id(baseline: Baseline, name: str) -> str:
    return next(k.id for k in baseline.kernels if k.match.name == name)


def test_the_exact_name_and_shape_come_first() -> None:
    baseline, got = _match([("alpha_kernel", (64, 1, 1))], [("alpha_kernel", (64, 1, 1))])
    kernel = _id(baseline, "alpha_kernel")
    assert got.how[kernel] == "name"
    assert not got.unclaimed and not got.replaced_by


def test_a_renumbered_kernel_at_the_same_shape_is_renamed() -> None:
    baseline, got = _match(
        [("triton_poi_fused_add_1", (64, 1, 1))], [("triton_poi_fused_add_7", (64, 1, 1))]
    )
    kernel = _id(baseline, "triton_poi_fused_add_1")
    assert got.how[kernel] == "renamed: was triton_poi_fused_add_1"
    assert [g.key.name for g in got.groups[kernel]] == ["triton_poi_fused_add_7"]


def test_a_rename_is_never_guessed_between_two_entries_of_one_normalised_name() -> None:
    before = [("triton_poi_fused_add_1", (64, 1, 1)), ("triton_poi_fused_add_2", (64, 1, 1))]
    baseline, got = _match(before, [("triton_poi_fused_add_7", (64, 1, 1))])
    assert not got.groups
    assert [g.key.name for g in got.unclaimed] == ["triton_poi_fused_add_7"]
    for name, _ in before:
        groups, why = got.replaced_by[_id(baseline, name)]
        assert why == "the same kernel at another launch shape"
        assert groups == got.unclaimed


def test_one_entry_and_one_group_of_a_name_at_another_shape_are_reshaped() -> None:
    baseline, got = _match([("alpha_kernel", (64, 1, 1))], [("alpha_kernel", (256, 1, 1))])
    how = got.how[_id(baseline, "alpha_kernel")]
    assert how.startswith("reshaped: ")
    assert "(64, 1, 1)" in how and "(256, 1, 1)" in how
    assert how.index("(64, 1, 1)") < how.index("->") < how.index("(256, 1, 1)")


def test_a_missing_kernel_is_paired_with_what_now_runs_where_it_ran() -> None:
    before = [("first_kernel", (8, 1, 1)), ("middle_kernel", (8, 1, 1)), ("last_kernel", (8, 1, 1))]
    after = [("first_kernel", (8, 1, 1)), ("stranger", (8, 1, 1)), ("last_kernel", (8, 1, 1))]
    baseline, got = _match(before, after)
    groups, why = got.replaced_by[_id(baseline, "middle_kernel")]
    assert why == "launched where it used to run"
    assert [g.key.name for g in groups] == ["stranger"]


def test_a_missing_library_kernel_is_paired_with_its_family_first() -> None:
    gemm = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    other = "nvjet_sm90_tst_128x128_64x4_1x2_h_bz_coopA_NNT"
    before = [("first_kernel", (8, 1, 1)), (gemm, (132, 1, 1))]
    after = [("stranger", (8, 1, 1)), ("first_kernel", (8, 1, 1)), (other, (132, 1, 1))]
    baseline, got = _match(before, after)
    groups, why = got.replaced_by[_id(baseline, gemm)]
    assert why.startswith("another ") and why.endswith(" kernel")
    assert [g.key.name for g in groups] == [other]
