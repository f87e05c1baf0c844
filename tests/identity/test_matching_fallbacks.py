"""Every fallback of perfgate.identity.matching with TWO candidates: a fallback that took any
candidate (the first, the last) instead of the one its rule names would merge two real
kernels. The launches are synthetic (kernel names of the kinds seen in real captures: Inductor
kernels, cuBLAS's nvjet tiles, user kernels); the expected pairings follow the module's
docstring and docs/identity.md, in order of trust:

1. the exact name and launch shape (and, of one name and shape split by work, the class the
   entry recorded);
2. the normalised name at the same shape, only where exactly one entry and one group are left;
3. the same normalised name at another shape, only where exactly one of each is left;
4. for each kernel still missing, what replaced it: the same name, else the same library
   family, else what now runs between its matched neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.baseline.load import parse_baseline
from perfgate.identity.grouping import KernelGroup, group_launches
from perfgate.identity.matching import Matching, match
from perfgate.ingest.launches import Launch

SHAPE = (256, 1, 1)
OTHER = (1024, 1, 1)
ANOTHER = (64, 1, 1)


def _launch(index: int, name: str, grid: tuple[int, int, int] = SHAPE, inst: float = 1e6) -> Launch:
    return Launch(
        index, name, name, (128, 1, 1), grid, {"smsp__inst_executed.sum": inst}, source="a.csv"
    )


def _entry(kid: str, name: str, grid: tuple[int, int, int] = SHAPE, extra: str = "") -> str:
    return (
        f"- id: {kid}\n"
        f"  match: {{name: '{name}', grid: {list(grid)}, block: [128, 1, 1]{extra}}}\n"
        f"  metrics:\n    duration: {{value: 1000}}\n"
    )


def _match(
    entries: Sequence[str], launches: Sequence[Launch]
) -> tuple[Matching, list[KernelGroup]]:
    baseline = parse_baseline("format_version: 2\nkernels:\n" + "".join(entries), "b.yaml")
    groups = group_launches(launches)
    return match(baseline, groups), groups


def _taken(matching: Matching, kid: str) -> list[tuple[str, tuple[int, int, int] | None]]:
    return [(g.key.name, g.key.grid) for g in matching.groups.get(kid, [])]


def _names(groups: Sequence[KernelGroup]) -> list[tuple[str, tuple[int, int, int] | None]]:
    return sorted((g.key.name, g.key.grid) for g in groups)


# ------------------------------------------------------------------ 1. exact name and shape


def test_the_exact_shape_is_taken_of_two_groups_of_one_name() -> None:
    # The other shape comes first in the capture: taking the first group would take it.
    m, _ = _match(
        [_entry("k", "zoo_add(float *)", OTHER)],
        [_launch(0, "zoo_add(float *)", SHAPE), _launch(1, "zoo_add(float *)", OTHER)],
    )
    assert _taken(m, "k") == [("zoo_add(float *)", OTHER)]
    assert m.how["k"] == "name"
    assert _names(m.unclaimed) == [("zoo_add(float *)", SHAPE)]


def test_two_entries_of_one_name_each_take_their_own_shape() -> None:
    m, _ = _match(
        [_entry("b", "zoo_add(float *)", OTHER), _entry("a", "zoo_add(float *)", SHAPE)],
        [_launch(0, "zoo_add(float *)", SHAPE), _launch(1, "zoo_add(float *)", OTHER)],
    )
    assert _taken(m, "a") == [("zoo_add(float *)", SHAPE)]
    assert _taken(m, "b") == [("zoo_add(float *)", OTHER)]
    assert m.unclaimed == []


def test_of_one_name_and_shape_split_by_work_the_recorded_class_is_taken() -> None:
    gemm = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    launches = [_launch(0, gemm, inst=1e6), _launch(1, gemm, inst=4e6)]
    m, _ = _match([_entry("k", gemm, extra=", work: 2")], launches)
    (group,) = m.groups["k"]
    assert group.key.work == 2 and group.instructions == 4e6


def test_without_a_recorded_class_every_work_class_is_the_entrys() -> None:
    gemm = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    launches = [_launch(0, gemm, inst=1e6), _launch(1, gemm, inst=4e6), _launch(2, gemm, inst=16e6)]
    entry = (
        f"- id: k\n  match: {{name: '{gemm}', grid: {list(SHAPE)}, block: [128, 1, 1]}}\n"
        "  metrics:\n    instructions_executed: {value: 3900000.0}\n"
    )
    m, _ = _match([entry], launches)
    # Every class stays the entry's, judged against it (verdicts.check): none is "new".
    assert [g.instructions for g in m.groups["k"]] == [1e6, 4e6, 16e6]
    assert m.how["k"].startswith("split") and m.unclaimed == []


# ------------------------------------------------------------ 2. renamed: same shape, one-to-one


def test_a_renumbered_kernel_is_taken_at_its_shape_only() -> None:
    # Two candidates of the normalised name: one at another shape (first), one at the same.
    m, _ = _match(
        [_entry("k", "triton_poi_fused_add_0")],
        [_launch(0, "triton_poi_fused_add_1", OTHER), _launch(1, "triton_poi_fused_add_2", SHAPE)],
    )
    assert _taken(m, "k") == [("triton_poi_fused_add_2", SHAPE)]
    assert m.how["k"] == "renamed: was triton_poi_fused_add_0"


def test_a_renumbered_kernel_is_taken_by_its_normalised_name_only() -> None:
    # Another Inductor kernel at the same shape comes first: the rename must not take it.
    m, _ = _match(
        [_entry("k", "triton_poi_fused_add_0")],
        [_launch(0, "triton_poi_fused_mul_1", SHAPE), _launch(1, "triton_poi_fused_add_1", SHAPE)],
    )
    assert _taken(m, "k") == [("triton_poi_fused_add_1", SHAPE)]


def test_two_renumbered_candidates_at_the_shape_are_never_guessed() -> None:
    m, _ = _match(
        [_entry("k", "triton_poi_fused_add_0")],
        [_launch(0, "triton_poi_fused_add_1", SHAPE), _launch(1, "triton_poi_fused_add_2", SHAPE)],
    )
    assert "k" not in m.groups
    assert len(m.unclaimed) == 2
    # Still named as what replaced it: both, as the same kernel at another launch shape.
    groups, why = m.replaced_by["k"]
    assert _names(groups) == _names(m.unclaimed)
    assert why == "the same kernel at another launch shape"


def test_two_entries_for_one_renumbered_group_are_never_guessed() -> None:
    m, _ = _match(
        [_entry("a", "triton_poi_fused_add_0"), _entry("b", "triton_poi_fused_add_3")],
        [_launch(0, "triton_poi_fused_add_1", SHAPE)],
    )
    assert "a" not in m.groups and "b" not in m.groups
    assert _names(m.unclaimed) == [("triton_poi_fused_add_1", SHAPE)]


# ------------------------------------------------------------- 3. reshaped: one-to-one only


def test_a_reshaped_kernel_is_taken_when_it_is_the_only_one_of_its_name() -> None:
    m, _ = _match(
        [_entry("k", "zoo_add(float *)", SHAPE)],
        [_launch(0, "zoo_mul(float *)", OTHER), _launch(1, "zoo_add(float *)", OTHER)],
    )
    assert _taken(m, "k") == [("zoo_add(float *)", OTHER)]
    assert m.how["k"] == (
        "reshaped: grid (256, 1, 1) block (128, 1, 1) -> grid (1024, 1, 1) block (128, 1, 1)"
    )
    assert _names(m.unclaimed) == [("zoo_mul(float *)", OTHER)]


def test_two_reshaped_candidates_are_never_guessed() -> None:
    m, _ = _match(
        [_entry("k", "zoo_add(float *)", SHAPE)],
        [_launch(0, "zoo_add(float *)", OTHER), _launch(1, "zoo_add(float *)", ANOTHER)],
    )
    assert "k" not in m.groups
    groups, why = m.replaced_by["k"]
    assert _names(groups) == _names(m.unclaimed) and len(groups) == 2
    assert why == "the same kernel at another launch shape"


def test_two_reshaped_entries_for_one_group_are_never_guessed() -> None:
    m, _ = _match(
        [_entry("a", "zoo_add(float *)", SHAPE), _entry("b", "zoo_add(float *)", ANOTHER)],
        [_launch(0, "zoo_add(float *)", OTHER)],
    )
    assert m.groups == {}
    assert _names(m.unclaimed) == [("zoo_add(float *)", OTHER)]


# ------------------------------------------------------------- 4. what replaced a missing one


def test_a_missing_library_kernel_is_paired_with_its_familys_kernel_only() -> None:
    old = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    new = "nvjet_sm90_tst_128x128_64x4_2x1_v_bz_coopB_NNT"
    m, _ = _match(
        [_entry("gemm", old)],
        [_launch(0, "zoo_user_kernel(float *)", OTHER), _launch(1, new, ANOTHER)],
    )
    groups, why = m.replaced_by["gemm"]
    assert _names(groups) == [(new, ANOTHER)]
    assert why == "another cuBLAS kernel"


def test_a_missing_kernel_is_paired_with_what_runs_between_its_neighbours_only() -> None:
    # Baseline order: before, gone, after. Two new kernels: one launched between the
    # neighbours (where `gone` ran), one after `after`.
    m, _ = _match(
        [_entry("before", "zoo_a(float *)"), _entry("gone", "zoo_b(float *)"),
         _entry("after", "zoo_c(float *)")],
        [_launch(0, "zoo_a(float *)"), _launch(1, "zoo_x(float *)"), _launch(2, "zoo_c(float *)"),
         _launch(3, "zoo_y(float *)")],
    )  # fmt: skip
    assert sorted(m.groups) == ["after", "before"]
    groups, why = m.replaced_by["gone"]
    assert _names(groups) == [("zoo_x(float *)", SHAPE)]
    assert why == "launched where it used to run"


def test_a_missing_first_kernel_is_paired_with_what_runs_before_its_successor_only() -> None:
    m, _ = _match(
        [_entry("gone", "zoo_b(float *)"), _entry("after", "zoo_c(float *)")],
        [_launch(0, "zoo_x(float *)"), _launch(1, "zoo_c(float *)"), _launch(2, "zoo_y(float *)")],
    )
    groups, _ = m.replaced_by["gone"]
    assert _names(groups) == [("zoo_x(float *)", SHAPE)]


def test_a_missing_last_kernel_is_paired_with_what_runs_after_its_predecessor_only() -> None:
    m, _ = _match(
        [_entry("before", "zoo_a(float *)"), _entry("gone", "zoo_b(float *)")],
        [_launch(0, "zoo_x(float *)"), _launch(1, "zoo_a(float *)"), _launch(2, "zoo_y(float *)")],
    )
    groups, _ = m.replaced_by["gone"]
    assert _names(groups) == [("zoo_y(float *)", SHAPE)]


def test_with_no_matched_neighbour_nothing_is_named_as_the_replacement() -> None:
    m, _ = _match(
        [_entry("gone", "zoo_b(float *)")],
        [_launch(0, "zoo_x(float *)"), _launch(1, "zoo_y(float *)")],
    )
    assert "gone" not in m.replaced_by
    assert len(m.unclaimed) == 2


def test_the_exact_block_is_taken_of_two_groups_of_one_name_and_grid() -> None:
    name = "zoo_add(float *)"
    wide = Launch(0, name, name, (512, 1, 1), SHAPE, {}, source="a.csv")
    m, _ = _match([_entry("k", name)], [wide, _launch(1, name)])
    (group,) = m.groups["k"]
    assert group.key.block == (128, 1, 1) and m.how["k"] == "name"


def test_a_kernel_launched_several_times_is_placed_by_its_first_launch() -> None:
    # Launch order: a, x, c, a, y, x. `gone` ran between a and c (their first launches);
    # x first ran there too, y only after c.
    m, _ = _match(
        [_entry("before", "zoo_a(float *)"), _entry("gone", "zoo_b(float *)"),
         _entry("after", "zoo_c(float *)")],
        [_launch(0, "zoo_a(float *)"), _launch(1, "zoo_x(float *)"), _launch(2, "zoo_c(float *)"),
         _launch(3, "zoo_a(float *)"), _launch(4, "zoo_y(float *)"), _launch(5, "zoo_x(float *)")],
    )  # fmt: skip
    groups, _ = m.replaced_by["gone"]
    assert _names(groups) == [("zoo_x(float *)", SHAPE)]


def test_a_missing_last_kernel_after_the_first_launch_still_has_its_replacement_named() -> None:
    # Its predecessor is launch 0 of the file: a position like any other.
    m, _ = _match(
        [_entry("before", "zoo_a(float *)"), _entry("gone", "zoo_b(float *)")],
        [_launch(0, "zoo_a(float *)"), _launch(1, "zoo_y(float *)")],
    )
    groups, why = m.replaced_by["gone"]
    assert _names(groups) == [("zoo_y(float *)", SHAPE)]
    assert why == "launched where it used to run"
