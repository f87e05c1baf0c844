"""What a kernel's name says to the change rules: the arithmetic of a GEMM or convolution
(TF32, BF16, FP16, FP32 FFMA), tensor cores or not, an operator's element type, cuDNN's
layout conversions, and the short label a finding shows for a kernel."""

from __future__ import annotations

import re

from perfgate.ingest.names import short_name

_MATH = re.compile(
    r"gemm|conv|fprop|dgrad|wgrad|nvjet_|xmma|cutlass|triton_tem_|\bmm_|matmul", re.IGNORECASE
)
_TENSOR = re.compile(
    r"tensor\d+x\d+x\d+|tensorop|wgmma|hmma|imma|s1688|s16816|warpgroupsize|nvjet_|tf32"
    r"|bf16|f16|triton_tem_",
    re.IGNORECASE,
)
_SCALAR = re.compile(r"ffma|simt|sgemm|dgemm", re.IGNORECASE)
CONVERSION = re.compile(r"nchwToNhwc|nhwcToNchw|nhwcAddPadding|\bnchw2nhwc|\bnhwc2nchw")


def math_mode(name: str) -> str | None:
    """The arithmetic of a GEMM or convolution kernel from its name: TF32, BF16, FP16 or FP32
    (FFMA); None for a kernel that is no GEMM or convolution, or says nothing."""
    if not _MATH.search(name):
        return None
    low = name.lower()
    if "tf32" in low:
        return "TF32"
    if "bf16" in low or "bfloat16" in low or re.search(r"nvjet_sm\d+_tst_", low):
        return "BF16"
    if re.search(r"(?<!b)f16|half|nvjet_sm\d+_hsh_", low):
        return "FP16"
    if _SCALAR.search(name) or "f32f32_f32f32" in low or "<float" in low:
        return "FP32"
    return None


def uses_tensor_cores(name: str) -> bool:
    return bool(_TENSOR.search(name)) and not _SCALAR.search(name)


def element_type(name: str) -> str | None:
    """The data type of an operator kernel from its template arguments."""
    if re.search(r"BFloat16|bfloat16|bf16", name):
        return "BF16"
    if re.search(r"c10::Half|__half\b|half_t|\bHalf\b", name):
        return "FP16"
    if re.search(r"<float\b|\bfloat>|\(float\)|<float,", name):
        return "FP32"
    return None


_XMMA = re.compile(
    r"^(sm\d+)_xmma_(fprop|dgrad|wgrad|gemm)_(?:implicit_gemm_)?(?:indexed_wo_smem_)?"
    r"([a-z0-9]+_[a-z0-9]+_[a-z0-9]+)_.*?tilesize(\d+x\d+x\d+)"
)


def label(name: str) -> str:
    """A short name for a kernel in a finding: cuDNN's and cuBLAS's xmma engines by their
    architecture, operation, types and tile ('sm80_xmma_fprop tf32f32_tf32f32_f32 128x64x32')."""
    short = short_name(name)
    cutlass = re.search(r"\bKernel2?<(cutlass_\w+)>", name)
    if cutlass:  # CUTLASS's kernels say what they are in their one template argument
        short = re.sub(r"_optimized|_align\d+$", "", cutlass.group(1))
    xmma = _XMMA.match(short)
    if xmma:
        sm, op, types, tile = xmma.groups()
        short = f"{sm}_xmma_{op} {types} {tile}"
    return short if len(short) <= 56 else short[:55] + "…"
