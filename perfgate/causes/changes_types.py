"""Change rules of arithmetic and data types: the same layers at another math mode (TF32 <->
FP32 FFMA, FP16/BF16 <-> FP32), the whole model at another dtype, a library call's key or
element type. Each rule reads the names of the missing and new kernels and claims the
ones its change explains (the registry: perfgate.causes.changes.RULES)."""

from __future__ import annotations

import re
from collections.abc import Callable

from perfgate.causes.changes_model import NEW, ChangeKernel, Claim, Kernels
from perfgate.causes.changes_names import (
    CONVERSION,
    element_type,
    label,
    math_mode,
    uses_tensor_cores,
)

_CONV = re.compile(r"conv|fprop|dgrad|wgrad", re.IGNORECASE)


def _dominant(kernels: Kernels, of: Callable[[str], str | None]) -> str | None:
    weight: dict[str, float] = {}
    for k in kernels:
        got = of(k.name)
        if got is not None:
            weight[got] = weight.get(got, 0.0) + k.time_ns + 1e-9
    return max(weight, key=lambda m: weight[m]) if weight else None


def _math_words(mode: str, kernels: Kernels) -> str:
    what = "convolutions" if any(_CONV.search(k.name) for k in kernels) else "GEMMs"
    tensor = any(uses_tensor_cores(k.name) for k in kernels)
    kind = {"FP32": "FP32 FFMA" if not tensor else "FP32"}.get(mode, mode)
    return f"{kind} tensor-core {what}" if tensor and mode != "FP32" else f"{kind} {what}"


_TF32_LEVER = {
    "cuDNN": "torch.backends.cudnn.allow_tf32 = True keeps cuDNN's convolutions on TF32 tensor "
    "cores (False: exact FP32 on FFMA)",
    "cuBLAS": "torch.backends.cuda.matmul.allow_tf32 / torch.set_float32_matmul_precision"
    "('high') keeps cuBLAS's FP32 GEMMs on TF32 tensor cores ('highest': FP32 FFMA)",
}


def precision_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The same layers at another math mode: TF32 <-> FP32 FFMA, FP16/BF16 <-> FP32. A whole
    model at another data type (its operator kernels moved too) is the dtype rule's."""
    gone = [k for k in missing if math_mode(k.name)]
    came = [k for k in new if math_mode(k.name)]
    before, after = _dominant(gone, math_mode), _dominant(came, math_mode)
    if not gone or not came or before is None or after is None or before == after:
        return None
    if {before, after} <= {"BF16", "FP16", "FP32"} and _operator_dtype(missing, new):
        return None  # the whole model changed type: dtype_rule
    libraries = [lib for lib in _TF32_LEVER if any(k.family == lib for k in gone + came)]
    title = f"precision/math mode: {_math_words(before, gone)} -> {_math_words(after, came)}"
    lost = any(uses_tensor_cores(k.name) for k in gone) and not any(
        uses_tensor_cores(k.name) for k in came
    )
    gained = not any(uses_tensor_cores(k.name) for k in gone) and any(
        uses_tensor_cores(k.name) for k in came
    )
    title += " (tensor cores lost)" if lost else " (tensor cores gained)" if gained else ""
    if "TF32" in (before, after):
        lever = "; ".join(_TF32_LEVER[lib] for lib in libraries) or _TF32_LEVER["cuBLAS"]
    else:
        lever = "the dtype of these layers' inputs and weights (autocast, model.to(dtype))"
    # cuDNN's layout conversions serve its engines: they come and go with them.
    helpers = [
        k
        for k in list(missing) + list(new)
        if k.family == "cuDNN" and CONVERSION.search(k.name) and k not in gone + came
    ]
    return "precision", title, lever, gone + came + helpers


def _operator_dtype(missing: Kernels, new: Kernels) -> tuple[str, str] | None:
    """The data type of the operator (non-GEMM) kernels gone and new, when it changed."""
    before = _dominant([k for k in missing if not math_mode(k.name)], element_type)
    after = _dominant([k for k in new if not math_mode(k.name)], element_type)
    if before is None or after is None or before == after:
        return None
    return before, after


def dtype_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The whole model at another data type: its GEMMs or convolutions and its operator
    kernels (elementwise, norms, pooling) all moved from one type to another."""
    moved = _operator_dtype(missing, new)
    gone_math = [k for k in missing if math_mode(k.name)]
    came_math = [k for k in new if math_mode(k.name)]
    if moved is None or not gone_math or not came_math:
        return None
    before, after = moved
    claimed = [
        k
        for k in list(missing) + list(new)
        if math_mode(k.name)
        or element_type(k.name) in (before, after)
        or (k.family in ("ATen", "cuDNN") and k.side == NEW and "copy" in k.name.lower())
        or (k.family == "cuDNN")
        # ATen's type-erased copies (cat) say only the element's size: 2 -> 4 bytes is
        # FP16/BF16 -> FP32 (vit, hf-decoder fp32: CatArrayBatchedCopy<OpaqueType<2>> -> <4>).
        or _opaque_bytes(k.name) in (_BYTES[before], _BYTES[after])
    ]
    tensor_before = any(uses_tensor_cores(k.name) for k in gone_math)
    tensor_after = any(uses_tensor_cores(k.name) for k in came_math)
    cores = (
        " (tensor cores gained)"
        if tensor_after and not tensor_before
        else " (tensor cores lost)"
        if tensor_before and not tensor_after
        else ""
    )
    title = f"dtype of the whole model: {before} -> {after}{cores}"
    lever = (
        f"the model's dtype: model.to(torch.{_TORCH_DTYPE[after]}) or autocast; "
        f"{_TORCH_DTYPE[before]} was the recorded one"
    )
    return "dtype", title, lever, claimed


_TORCH_DTYPE = {"FP32": "float32", "BF16": "bfloat16", "FP16": "float16", "TF32": "float32"}
_BYTES = {"FP32": 4, "BF16": 2, "FP16": 2, "TF32": 4}
_OPAQUE = re.compile(r"OpaqueType<(\d+)>")


def _opaque_bytes(name: str) -> int | None:
    m = _OPAQUE.search(name)
    return int(m.group(1)) if m else None


# Scalar types in template arguments: CUB, Thrust and ATen name the key or element type there.
_TYPE = re.compile(
    r"\b(?:unsigned (?:long long|long|int|short|char)|long long|long|int|short|signed char|char"
    r"|bool|float|double|__half|__nv_bfloat16|c10::Half|c10::BFloat16|BFloat16|Half)\b"
    r"|OpaqueType<\d+>|NullType"
)
_CUB_SORT = re.compile(r"DeviceRadixSort|DeviceSegmentedRadixSort")
_ONESWEEP = re.compile(r"Onesweep|DeviceRadixSortDownsweep|SingleTile")


def _types(name: str) -> list[str]:
    return _TYPE.findall(name)


def element_type_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The same library kernels at another key or element type: each kernel gone has one new
    whose name differs only in its type arguments (CUB's radix sort on int -> long keys). The
    caller chose the type: the tensor's dtype reaches the template."""

    def bare(k: ChangeKernel) -> str:
        return _TYPE.sub("T", k.name)

    # A kernel may come back as several (CUB's onesweep at two sizes of work): by name, not 1:1.
    gone_names = {k.name for k in missing}
    came = [k for k in new if k.name not in gone_names and bare(k) in {bare(g) for g in missing}]
    gone = [k for k in missing if bare(k) in {bare(n) for n in came}]
    if not gone or not came:
        return None
    # The first type argument that differs is the key (or element) type: CUB's policy_hub<KeyT,
    # ValueT, OffsetT> puts the key first.
    g = gone[0]
    n = next(k for k in came if bare(k) == bare(g))
    before, after = next(
        ((a, b) for a, b in zip(_types(g.name), _types(n.name), strict=False) if a != b),
        ("?", "?"),
    )
    if any(_CUB_SORT.search(k.name) for k in gone):
        what = "key type of a CUB radix sort"
        passes = [k.launches for k in gone if _ONESWEEP.search(k.name)]
        passes_now = [k.launches for k in came if _ONESWEEP.search(k.name)]
        tail = (
            f" (onesweep passes x{sum(passes):g} -> x{sum(passes_now):g})"
            if passes and passes_now and sum(passes) != sum(passes_now)
            else ""
        )
        lever = (
            "the keys' dtype: int32 keys where their range fits (keys.to(torch.int32) before "
            "torch.sort / torch.unique): a radix sort makes one pass per 8 bits of key, and a "
            "64-bit key has twice the bytes to move"
        )
    else:
        what = f"element type of {label(g.name)}"
        tail = ""
        lever = "the dtype of the tensors passed to the call (a wider type moves more bytes)"
    title = f"{what}: {before} -> {after}{tail}"
    return "element-type", title, lever, gone + came
