from __future__ import annotations

import pytest

from perfgate.ingest.names import function_name
from tests.conftest import raw_rows


@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("zoo_coalescing(const float *, float *, int)", "zoo_coalescing"),
        ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
        ("void <unnamed>::softmax_warp_forward<float, float, float, 11, 0, 0>(T2 *, const T1 *, int, int, int, const bool *, int, bool)",
         "<unnamed>::softmax_warp_forward"),
        ("void at::native::(anonymous namespace)::foo<int>(int)", "at::native::(anonymous namespace)::foo"),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, 0, 0, half_t, ...>>(Flash_fwd_params)", "flash_fwd_kernel"),
        ("void f<(bool)1>(int) const", "f"),
        ("_Z14zoo_coalescingPKfPfi", "_Z14zoo_coalescingPKfPfi"),  # mangled names stay whole
    ],
)  # fmt: skip
def test_function_name(name: str, function: str) -> None:
    assert function_name(name) == function


def test_real_pytorch_names_reduce_to_their_qualified_function() -> None:
    header, _, rows = raw_rows("torch-short-run1.csv")
    names = {r[header.index("Kernel Name")] for r in rows}
    functions = {function_name(n) for n in names}
    assert {"at::reduce_kernel", "at::vectorized_elementwise_kernel", "at::unrolled_elementwise_kernel",
            "<unnamed>::softmax_warp_forward", "at::<unnamed>::vectorized_layer_norm_kernel",
            "perfgate_triton_scale_kernel"} <= functions  # fmt: skip
    for f in functions:  # no template arguments or parameters leak into a function name
        assert "(" not in f.replace("(anonymous namespace)", "") and "<" not in f.replace(
            "<unnamed>", ""
        )
