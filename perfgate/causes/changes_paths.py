"""Change rules of the code path a flag or the compiler selects: the memory format (NCHW <->
NHWC), the attention backend, the torch.compile mode or graph, the optimizer's
implementation. Each rule reads the names of the missing and new kernels and claims the
ones its change explains (the registry: perfgate.causes.changes.RULES)."""

from __future__ import annotations

import re

from perfgate.causes.changes_model import MISSING, NEW, ChangeKernel, Claim, Kernels
from perfgate.causes.changes_names import CONVERSION, math_mode

_NHWC = re.compile(r"nhwc|channels_last", re.IGNORECASE)
_NCHW = re.compile(r"nchw", re.IGNORECASE)
_ATTENTION = re.compile(r"flash|fmha|sdpa|efficient_attention|attention", re.IGNORECASE)
_INDUCTOR = re.compile(r"^triton_(poi|red|per|tem|for|mm|bmm)_")
_GRAPH_COPY = re.compile(r"multi_tensor_apply_kernel.*Copy<")


def layout_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The memory format changed: the operator kernels (pooling, norms) run in another layout
    (NCHW <-> NHWC), or only the layout conversions around the library came or went."""

    def operator(k: ChangeKernel) -> bool:
        return not math_mode(k.name) and not CONVERSION.search(k.name)

    nhwc_new = [k for k in new if operator(k) and _NHWC.search(k.name)]
    nchw_gone = [k for k in missing if operator(k) and _NCHW.search(k.name)]
    nhwc_gone = [k for k in missing if operator(k) and _NHWC.search(k.name)]
    nchw_new = [k for k in new if operator(k) and _NCHW.search(k.name)]
    conversions = [k for k in list(missing) + list(new) if CONVERSION.search(k.name)]
    if nhwc_new and nchw_gone:
        title, operators = "memory format: NCHW -> NHWC (channels_last)", nchw_gone + nhwc_new
    elif nhwc_gone and nchw_new:
        title, operators = "memory format: NHWC (channels_last) -> NCHW", nhwc_gone + nchw_new
    elif conversions:
        came = sum(1 for k in conversions if k.side == NEW)
        title = f"memory format: layout conversion kernels {'appeared' if came else 'vanished'}"
        operators = []
    else:
        return None
    lever = (
        "the memory format: model.to(memory_format=torch.channels_last) and the same for its "
        "inputs (a layer or input left in NCHW adds conversions around each convolution)"
    )
    return "layout", title, lever, operators + conversions


def attention_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """Another attention implementation: an SDPA backend (flash, memory-efficient, cuDNN, math)
    or the model's eager attention (softmax and batched GEMMs with mask-building launches)."""
    gone = [k for k in missing if _ATTENTION.search(k.name)]
    came = [k for k in new if _ATTENTION.search(k.name)]
    if not gone and not came:
        return None
    claimed: list[ChangeKernel] = gone + came
    eager_new = [k for k in new if k.family in ("ATen", "cuBLAS")]
    eager_gone = [k for k in missing if k.family in ("ATen", "cuBLAS")]
    if (gone and not came and not eager_new) or (came and not gone and not eager_gone):
        return None  # nothing in its place: a kernel gone, no backend switch to name
    if gone and not came:
        # The eager path: its softmax, batched GEMMs and mask arithmetic are what replaced it.
        claimed += eager_new
        after = "the eager/math path (softmax and GEMMs)"
    else:
        after = _backend(came)
    if came and not gone:
        claimed += eager_gone
        before = "the eager/math path (softmax and GEMMs)"
    else:
        before = _backend(gone)
    title = f"attention backend: {before} -> {after}"
    lever = (
        "the attention implementation: torch.nn.attention.sdpa_kernel(SDPBackend...) around the "
        'call, or the model\'s attn_implementation ("sdpa", "flash_attention_2", "eager")'
    )
    return "attention", title, lever, claimed


def _backend(kernels: Kernels) -> str:
    names = " ".join(k.name.lower() for k in kernels)
    if "cudnn" in names:
        return "cuDNN attention"
    if "efficient" in names or "fmha" in names:
        return "memory-efficient attention"
    if "flash" in names:
        return "FlashAttention"
    return "another attention kernel"


def compile_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """Another torch.compile mode or graph: Inductor's kernels came or went, its GEMM
    templates (max-autotune) took the place of cuBLAS, CUDA graphs added their input copies."""
    inductor = [k for k in list(missing) + list(new) if _INDUCTOR.match(k.name)]
    if not inductor:
        return None
    templates_new = [k for k in new if k.name.startswith("triton_tem_")]
    templates_gone = [k for k in missing if k.name.startswith("triton_tem_")]
    blas = [k for k in list(missing) + list(new) if k.family == "cuBLAS"]
    copies = [k for k in new if _GRAPH_COPY.search(k.name)]
    if templates_new and not templates_gone:
        what = (
            f"{len([k for k in blas if k.side == MISSING])} cuBLAS GEMMs -> "
            f"{len(templates_new)} Inductor GEMM templates (max-autotune)"
        )
    elif templates_gone and not templates_new:
        what = (
            f"{len(templates_gone)} Inductor GEMM templates -> "
            f"{len([k for k in blas if k.side == NEW])} cuBLAS GEMMs (max-autotune off)"
        )
    else:
        gone = sum(1 for k in inductor if k.side == MISSING)
        title = (
            f"torch.compile graph: Inductor generated other kernels ({gone} gone, "
            f"{len(inductor) - gone} new): its graph, fusion or autotuned choice changed"
        )
        lever = (
            "the compiled function's code (fusion follows the graph), or the torch.compile "
            "options; max-autotune's choices can differ between machines with their own "
            "Inductor cache: accept the new kernels if the change is intended"
        )
        return "compile", title, lever, inductor + blas + copies
    if copies:
        what = what.replace(" (max-autotune)", " + CUDA graphs (max-autotune)")
    title = f"torch.compile mode: {what}"
    lever = (
        'the torch.compile mode: mode="max-autotune" benchmarks Triton GEMM templates against '
        'cuBLAS and replays CUDA graphs; mode="default" keeps cuBLAS and launches eagerly'
    )
    return "compile", title, lever, inductor + blas + copies


_MULTI_TENSOR = re.compile(r"multi_tensor_apply_kernel")
_FUSED_OPTIMIZER = re.compile(r"Fused\w*(Adam|SGD|Adagrad|Optimizer)\w*")
# What a for-loop optimizer runs per parameter: ATen's pointwise kernels of its update.
_OPTIMIZER_STEP = re.compile(r"lerp|addcmul|addcdiv|sqrt_kernel|_foreach")


def _optimizer(kernels: Kernels) -> str | None:
    """fused (one FusedAdam-style multi-tensor kernel), foreach (multi-tensor kernels of
    pointwise functors) or for-loop (the update's pointwise kernels one parameter at a time)."""
    tensors = [
        k for k in kernels if _MULTI_TENSOR.search(k.name) and not _GRAPH_COPY.search(k.name)
    ]
    if any(_FUSED_OPTIMIZER.search(k.name) for k in tensors):
        return "fused"
    if tensors:
        return "foreach"
    if sum(1 for k in kernels if k.family == "ATen" and _OPTIMIZER_STEP.search(k.name)) >= 2:
        return "for-loop"
    return None


def optimizer_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """Another optimizer implementation: torch.optim's fused=True runs one kernel for all the
    parameters, foreach=True a few multi-tensor kernels, the for-loop a chain of pointwise
    kernels per parameter (AdamW: lerp, mul, addcmul, sqrt, div, add)."""
    before, after = _optimizer(missing), _optimizer(new)
    if before is None or after is None or before == after:
        return None
    claimed = [
        k
        for k in list(missing) + list(new)
        if (_MULTI_TENSOR.search(k.name) and not _GRAPH_COPY.search(k.name))
        # The for-loop side: every ATen pointwise kernel that came or went with it.
        or (k.family == "ATen" and "elementwise" in k.name and _optimizer([k]) is None)
    ]
    title = f"optimizer implementation: {before} -> {after}"
    lever = (
        "the optimizer's implementation: torch.optim.AdamW(..., fused=True) (or foreach=True), "
        "one multi-tensor kernel for all parameters in place of a chain of pointwise kernels "
        "per parameter"
    )
    return "optimizer", title, lever, claimed
