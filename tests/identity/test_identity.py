"""Kernel identity on real names: what makes two launches the same kernel across builds."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from perfgate.identity.grouping import KernelKey, group_launches, nvtx_range, readable_ids
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Launch
from perfgate.ingest.names import normalise, short_name
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check
from tests.conftest import data

GELU = (
    "void at::vectorized_elementwise_kernel<8, at::GeluCUDAKernelImpl(at::TensorIteratorBase &, "
    "at::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::"
    "operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, 2>>(int, T2, T3)"
)


def test_normalise_neutralises_only_what_changes_without_the_kernel_changing() -> None:
    assert normalise(GELU) == normalise(GELU.replace("(instance 4)", "(instance 5)"))
    assert normalise("triton_poi_fused_add_mul_relu_1") == normalise(
        "triton_poi_fused_add_mul_relu_0"
    )
    assert normalise("void a::(anonymous namespace)::k<int>()") == normalise(
        "void a::<unnamed>::k<int>()"
    )
    # Template arguments and parameter types are the instantiation: never neutralised.
    assert normalise(GELU) != normalise(GELU.replace("BFloat16", "Half"))
    assert normalise(GELU) != normalise(GELU.replace("<8,", "<4,"))
    assert normalise("triton_poi_fused_add_1") != normalise("triton_poi_fused_mul_1")
    assert normalise("zoo_kernel_1(int)") == "zoo_kernel_1(int)"  # only Inductor's index


def test_short_names_say_what_the_kernel_is() -> None:
    assert (
        short_name(GELU)
        == "vectorized_elementwise_kernel<8, GeluCUDAKernelImpl(BFloat16), array<char *, 2>>"
    )
    assert short_name("zoo_coalescing(const float *, float *, int)") == "zoo_coalescing"
    assert (
        short_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")
        == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    )


def _launch(
    index: int, name: str, grid: tuple[int, int, int], inst: float, source: str = "a.csv"
) -> Launch:
    return Launch(
        index, name, name, (128, 1, 1), grid, {"smsp__inst_executed.sum": inst}, source=source
    )


def test_one_name_at_several_shapes_and_works_is_several_kernels_with_readable_ids() -> None:
    # Synthetic launches (names from a real capture): a persistent GEMM serving two problems at
    # one grid, and an elementwise kernel at two grids.
    gemm = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    add = GELU
    launches = [
        _launch(0, gemm, (132, 1, 1), 1.0e6), _launch(1, gemm, (132, 1, 1), 4.1e6),
        _launch(2, add, (64, 1, 1), 1e4), _launch(3, add, (256, 1, 1), 4e4),
        _launch(4, gemm, (132, 1, 1), 1.001e6), _launch(5, gemm, (132, 1, 1), 4.1e6),
    ]  # fmt: skip
    groups = group_launches(launches)
    assert [len(g.launches) for g in groups] == [2, 2, 1, 1]
    assert [g.key.work for g in groups] == [1, 2, None, None]
    ids = readable_ids([g.key for g in groups])
    assert sorted(ids.values()) == sorted([
        f"{gemm} #work1", f"{gemm} #work2",
        f"{short_name(add)} [grid 64x1x1]", f"{short_name(add)} [grid 256x1x1]",
    ])  # fmt: skip
    assert len(set(ids.values())) == 4 and not any(
        "#" in v and "work" not in v for v in ids.values()
    )


def test_nvtx_range_path_from_ncus_columns() -> None:
    cap = read_capture(data("torch-short-run1.csv"))
    assert {nvtx_range(la) for la in cap.launches} == {"perfgate"}
    key = KernelKey("k", None, None, "perfgate/attn")
    assert readable_ids([key, KernelKey("k", None, None, "perfgate/mlp")]) == {
        key: "k @perfgate/attn",
        KernelKey("k", None, None, "perfgate/mlp"): "k @perfgate/mlp",
    }


def test_recorded_ids_are_readable_and_stable_across_re_recording() -> None:
    runs = [data(f"torch-short-run{i}.csv") for i in (1, 2, 3)]
    a = record(read_capture(runs[0]), RecordSettings()).baseline
    b = record(read_capture(runs[1]), RecordSettings()).baseline
    assert [k.id for k in a.kernels] == [k.id for k in b.kernels]
    assert all("#" not in k.id for k in a.kernels)  # no hash ids
    assert "vectorized_elementwise_kernel<8, GeluCUDAKernelImpl(BFloat16), array<char *, 2>>" in [
        k.id for k in a.kernels
    ]
    for k in a.kernels:  # the exact name and the launch shape are the identity
        assert k.match.name is not None and k.match.grid is not None and k.match.block is not None


def test_a_renumbered_lambda_is_the_same_kernel(tmp_path: Path) -> None:
    # Derived from a real capture: the GELU lambda renumbered as an unrelated lambda added
    # above it would renumber it ("(instance 1)" -> "(instance 2)").
    baseline = record(read_capture(data("torch-short-run1.csv")), RecordSettings()).baseline
    text = data("torch-short-run2.csv").read_text()
    assert "[lambda(c10::BFloat16) (instance 1)]" in text
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(
        text.replace("[lambda(c10::BFloat16) (instance 1)]", "[lambda(c10::BFloat16) (instance 2)]")
    )
    result = check(baseline, read_capture(renamed))
    gelu = next(v for v in result.verdicts if "GeluCUDAKernelImpl" in v.kernel)
    assert gelu.state is KernelState.PASS
    assert gelu.matched_by == "renamed"
    assert not [v for v in result.verdicts if v.state in (KernelState.MISSING, KernelState.NEW)]


def test_a_missing_kernel_is_one_finding_naming_what_replaced_it(tmp_path: Path) -> None:
    # Derived from a real capture: cuDNN's attention kernel renamed to another engine, as when
    # cuDNN picks another knob.
    baseline = record(read_capture(data("torch-short-run1.csv")), RecordSettings()).baseline
    text = data("torch-short-run2.csv").read_text()
    old = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
    assert old in text
    swapped = tmp_path / "swapped.csv"
    swapped.write_text(text.replace(old, old.replace("knob_7_64x128x64", "knob_3_128x128x64")))
    result = check(baseline, read_capture(swapped))
    missing = [v for v in result.verdicts if v.state is KernelState.MISSING]
    new = [v for v in result.verdicts if v.state is KernelState.NEW]
    assert len(missing) == 1 and len(new) == 1
    assert missing[0].related == (new[0].kernel,) and new[0].related == (missing[0].kernel,)
    assert missing[0].causes[0].title.startswith("cuDNN picked a different")
    assert missing[0].comparisons == ()  # one finding, not one row per metric


def test_a_capture_of_another_program_is_said_once(tmp_path: Path) -> None:
    baseline = record(read_capture(data("torch-short-run1.csv")), RecordSettings()).baseline
    result = check(baseline, read_capture(data("zoo-good-short-run1.csv")))
    assert result.notice.startswith(f"none of the {len(baseline.kernels)} baselined kernels is in")
    assert "zoo_atomics" in result.notice


@pytest.mark.parametrize("name", ["zoo-good-short-run1.csv", "session1/zoo-good-short-run1.csv.gz"])
def test_grouping_keeps_every_launch(name: str) -> None:
    cap = read_capture(data(name))
    groups = group_launches(cap.launches)
    assert sum(len(g.launches) for g in groups) == len(cap.launches)
    raw = data(name).read_bytes()
    text = gzip.decompress(raw).decode() if name.endswith(".gz") else raw.decode()
    assert len({g.key.name for g in groups}) == len({la.name for la in cap.launches}) > 5
    assert "Kernel Name" in text
