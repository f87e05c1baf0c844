"""Families of kernels by who wrote them: NVIDIA's libraries, compilers, frameworks.

A library picks its kernel at run time (cuBLAS chooses an nvjet tile by shape, cuDNN a
generated engine, SDPA a backend), so a kernel of a library replaced by another of the same
library is a substitution inside one family, not a missing kernel plus a stranger. And the
levers differ: a user cannot edit cuBLAS, they choose shapes, dtypes, layouts and flags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str  # "cuBLAS"
    pattern: re.Pattern[str]
    library: bool  # True: closed code the user controls only through its caller
    task: str  # what its kernels do, for a substitution message: "GEMM", "attention"


def _f(name: str, pattern: str, library: bool, task: str) -> Family:
    return Family(name, re.compile(pattern), library, task)


# Order matters: the first match wins (cuDNN's generated SDPA kernels say "flash" too).
FAMILIES: tuple[Family, ...] = (
    # cuDNN names its kernels itself: the `_cudnn` suffix of its generated xmma and CUTLASS
    # engines (`..._execute_kernel__5x_cudnn`, `cutlass__5x_cudnn::`), the `cudnn::` namespace,
    # its precompiled engines and helpers (layout conversions, padding, the legacy
    # implicit-GEMM convolution). Its xmma engines say "gemm" too: it comes before cuBLAS.
    _f("cuDNN", r"^cudnn|cudnn_generated|\bcudnn::|_cudnn(?:\b|::|$)|engines_precompiled::"
       r"|\bimplicit_convolve_sgemm<|\bnhwcAddPaddingKernel<", True, "cuDNN engine"),
    _f("FlashAttention", r"\bflash_(fwd|bwd)|pytorch_flash::|\bfmha|flash_attn", True,
       "attention"),
    _f("cuBLAS", r"^nvjet_|\bsm\d+_xmma_gemm|^(ampere|sm\d+|volta|turing)_.*gemm|cublas"
       r"|\bgemmSN_\w+_kernel<|\bgemv2?[NT]_kernel", True, "GEMM"),
    # CUTLASS's grouped GEMM (MoE experts in one launch: `GemmGrouped`, 3.x's
    # `GroupProblemShape` and pointer-array kernels): CUTLASS, named by its task.
    _f("CUTLASS", r"\bcutlass\w*::.*(?:Grouped|GroupProblemShape|PtrArray)", True,
       "CUTLASS grouped GEMM"),
    _f("CUTLASS", r"\bcutlass\b|cutlass::", True, "CUTLASS GEMM/conv"),
    _f("NCCL", r"^ncclDevKernel|^ncclKernel|\bnccl", True, "collective"),
    _f("Inductor", r"^triton_(poi|red|per|tem|for|mm|bmm)_", False, "generated Triton"),
    # XLA's generated kernels are bare identifiers: fusions by kind and ops
    # (`loop_add_fusion_5`, `input_reduce_fusion_2`, `gemm_fusion_dot_general_12`: Triton GEMM
    # fusions) and ops wrapped for an emitter (`wrapped_transpose`); perfgate.ingest.names.
    _f("XLA", r"^(?:(?:[a-z]\w*_)?fusion(?:_\w+)?|wrapped_[a-z]\w*)$", False, "generated fusion"),
    # CUB (and Thrust, which runs on it) by its dispatch kernels, `Device<algorithm>...Kernel`,
    # named as the function however ncu spelled the namespace (`radix_sort::`,
    # `cub::CUB_200200_900_NS::`), and Thrust's own agents. Before ATen: PyTorch's nonzero runs
    # DeviceSelectSweepKernel with an `at::<unnamed>::NonZeroOp` template argument.
    _f("CUB", r"^(?:void )?(?:[\w:]*::)?Device(?:Segmented)?(?:RadixSort|Select|Reduce|Scan"
       r"|Compact|Histogram|Partition|Merge|AdjacentDifference|RunLengthEncode|Unique|For"
       r"|Transform)\w*Kernel\b|^(?:void )?(?:cub|thrust)::", True, "CUB algorithm"),
    # ATen: `at::` and `native::` (ncu prints at::native's kernels either way), its anonymous
    # namespaces (`at::<unnamed>::`, the persistent softmax's `<unnamed>::softmax_warp_*`, the
    # index kernels of arange) and the histogram of `cuda::`.
    _f("ATen", r"\bat::native::|\bat::(?!cuda::)(?:<unnamed>::)?[A-Za-z_]+<"
       r"|^(?:void )?(?:at|native)::"
       r"|^(?:void )?<unnamed>::(?:softmax_warp|elementwise_kernel_with_index)"
       r"|at::arange|^(?:void )?cuda::kernelHistogram", False, "PyTorch operator"),
)  # fmt: skip


def family_of(name: str) -> Family | None:
    """The family of a kernel name as ncu printed it, or None for user code."""
    for family in FAMILIES:
        if family.pattern.search(name):
            return family
    return None
