"""Change findings: the kernels gone from a capture and the kernels new to it, grouped by the
one change that explains them (issue 22).

A flag flipped at the caller's level (TF32 off, another SDPA backend, channels_last removed,
another torch.compile mode) swaps a whole set of library kernels at once; reported kernel by
kernel it reads as a dozen unrelated substitutions. Each rule below reads only the names of the
missing and new kernels (what each library writes in them: `tf32`, `ffma`, `bf16`,
`tensor16x8x8`, `nhwc`, `flash`, `triton_tem_`) and claims the kernels its change explains; one
registry runs them in order, each on what the rules before it left. A finding says what was
replaced by what, the GPU time of those kernels before and after, and the lever.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from perfgate.identity.families import FAMILIES
from perfgate.ingest.names import short_name
from perfgate.judge.comparison import Comparison

MISSING = "missing"
NEW = "new"
RECOUNTED = "recounted"  # a kernel still there, launched more or less often
RECONFIGURED = "reconfigured"  # a user kernel at a launch configuration never recorded, slower
SCALED = "scaled"  # a kernel still there that regressed: its work counters, for the program rules
SHOWN = 3  # kernels named per side of a finding, heaviest first


@dataclass(frozen=True)
class ChangeKernel:
    """One kernel gone from the capture or new to it, as the grouping sees it."""

    id: str  # the baseline's id (missing) or the check's readable id (new)
    name: str  # as ncu printed it
    family: str | None
    side: str  # MISSING, NEW, RECOUNTED or RECONFIGURED
    time_ns: float  # GPU time a run: as recorded (missing), in the capture (new, reconfigured)
    launches: float  # a run
    recorded_ns: float = 0.0  # a reconfigured or scaled kernel's GPU time a run as recorded
    # SCALED: after / before of each work measure (WORK_MEASURES) known on both sides, and the
    # mechanisms of its regression and trade-off causes.
    work: tuple[tuple[str, float], ...] = ()
    mechanisms: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChangeFinding:
    """One change at the caller's level and the kernels it explains."""

    kind: str  # "precision", "dtype", "attention", "layout", "compile", "heuristic",
    # "user-code", "configuration"
    title: str
    replaced: tuple[tuple[str, float], ...]  # (name, launches a run), heaviest first, capped
    by: tuple[tuple[str, float], ...]
    replaced_kernels: int  # all of them, beyond the names shown
    by_kernels: int
    before_ns: float  # GPU time a run of the kernels replaced, as recorded
    after_ns: float  # of the kernels that replaced them
    lever: str
    members: tuple[str, ...]  # kernel ids: the missing, the new, then the recounted
    # Kernels still there but launched more or less often along with the change (the eager
    # attention path's mask arithmetic): its consequences, by name.
    recounted: tuple[str, ...] = ()
    # Kernels still there whose own findings follow from this change (a problem grown, the
    # forward recomputed): their ids, not listed one by one again, and their names.
    folded: tuple[str, ...] = ()
    scaled: tuple[tuple[str, float], ...] = ()
    scaled_kernels: int = 0


# -- what a kernel name says -------------------------------------------------------------------

_MATH = re.compile(
    r"gemm|conv|fprop|dgrad|wgrad|nvjet_|xmma|cutlass|triton_tem_|\bmm_|matmul", re.IGNORECASE
)
_CONV = re.compile(r"conv|fprop|dgrad|wgrad", re.IGNORECASE)
_TENSOR = re.compile(
    r"tensor\d+x\d+x\d+|tensorop|wgmma|hmma|imma|s1688|s16816|warpgroupsize|nvjet_|tf32"
    r"|bf16|f16|triton_tem_",
    re.IGNORECASE,
)
_SCALAR = re.compile(r"ffma|simt|sgemm|dgemm", re.IGNORECASE)
_CONVERSION = re.compile(r"nchwToNhwc|nhwcToNchw|nhwcAddPadding|\bnchw2nhwc|\bnhwc2nchw")
_NHWC = re.compile(r"nhwc|channels_last", re.IGNORECASE)
_NCHW = re.compile(r"nchw", re.IGNORECASE)
_ATTENTION = re.compile(r"flash|fmha|sdpa|efficient_attention|attention", re.IGNORECASE)
_INDUCTOR = re.compile(r"^triton_(poi|red|per|tem|for|mm|bmm)_")
_GRAPH_COPY = re.compile(r"multi_tensor_apply_kernel.*Copy<")


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


# -- the rules -----------------------------------------------------------------------------------

Kernels = Sequence[ChangeKernel]
Claim = tuple[str, str, str, Sequence[ChangeKernel]]  # kind, title, lever, the kernels claimed
# A rule reads the missing kernels, the new ones, and the kernels still there that regressed
# (SCALED, for the rules of the whole program: a problem grown, a forward recomputed).
Rule = Callable[[Kernels, Kernels, Kernels], Claim | None]


def _time(kernels: Kernels) -> float:
    return sum(k.time_ns for k in kernels)


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
        if k.family == "cuDNN" and _CONVERSION.search(k.name) and k not in gone + came
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


def layout_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The memory format changed: the operator kernels (pooling, norms) run in another layout
    (NCHW <-> NHWC), or only the layout conversions around the library came or went."""

    def operator(k: ChangeKernel) -> bool:
        return not math_mode(k.name) and not _CONVERSION.search(k.name)

    nhwc_new = [k for k in new if operator(k) and _NHWC.search(k.name)]
    nchw_gone = [k for k in missing if operator(k) and _NCHW.search(k.name)]
    nhwc_gone = [k for k in missing if operator(k) and _NHWC.search(k.name)]
    nchw_new = [k for k in new if operator(k) and _NCHW.search(k.name)]
    conversions = [k for k in list(missing) + list(new) if _CONVERSION.search(k.name)]
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


def heuristic_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """A library picked another kernel for the same work (another tile, another engine) at the
    same math mode: its heuristic, fed by shapes, alignment and workspace."""
    families = [
        f
        for f in ("cuBLAS", "cuDNN", "CUTLASS", "FlashAttention", "NCCL")
        if any(k.family == f for k in missing) and any(k.family == f for k in new)
    ]
    if not families:
        return None
    family = families[0]
    claimed = [k for k in list(missing) + list(new) if k.family == family]
    title = f"library heuristic: {family} picked other kernels for the same work"
    lever = {
        "cuDNN": "the convolution's shapes and layout, torch.backends.cudnn.benchmark (picks by "
        "timing); or accept the new engines",
        "cuBLAS": "the GEMM's shapes and alignment (multiples of 8/16), the cuBLAS workspace; "
        "or accept the new kernels",
    }.get(family, f"the shapes and options of the {family} call; or accept the new kernels")
    return "heuristic", title, lever, claimed


def user_code_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """A kernel of the program's own code gone and another of its own in its place."""
    gone = [k for k in missing if k.family is None]
    came = [k for k in new if k.family is None]
    if not gone or not came:
        return None
    title = "a user kernel's code changed: its kernels were replaced by others of the program"
    lever = "the kernels' source: the diff of the code that launches them"
    return "user-code", title, lever, gone + came


# -- a library call's element type ---------------------------------------------------------------

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


# -- the optimizer -------------------------------------------------------------------------------

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


# -- the work of the kernels still there ---------------------------------------------------------

# The work measures of a kernel that a larger problem scales: launches, and per launch the
# instructions and the global sectors. DRAM and L2 bytes are left out: the cache's share of a
# larger working set moves them by other factors.
WORK_MEASURES = (
    "launches",
    "instructions_executed",
    "global_load_sectors",
    "global_store_sectors",
)
# Causes that say only "it does more": the finding of the whole program explains them.
_WORK_ONLY = frozenset({"more-work", "launch-count"})


def work_ratios(comparisons: Sequence[Comparison]) -> tuple[tuple[str, float], ...]:
    """after / before of each work measure a kernel's comparisons hold on both sides."""
    out = []
    for c in comparisons:
        b, a = c.baseline, c.current
        known = isinstance(b, float | int) and isinstance(a, float | int)
        if c.metric in WORK_MEASURES and known and float(b) > 0:  # type: ignore[arg-type]
            out.append((c.metric, float(a) / float(b)))  # type: ignore[arg-type]
    return tuple(out)


_MOVED = 1.15  # a work measure moved: beyond any ratio two starts of one build showed
_SAME = 0.06  # within this of the common factor
_FEW = 3  # kernels at one factor before it is the program's


def _moved(k: ChangeKernel) -> list[float]:
    return [r for _, r in k.work if r >= _MOVED or r <= 1 / _MOVED]


def _grew(k: ChangeKernel) -> float | None:
    """A regressed kernel whose only change is more of the same work: its largest work ratio;
    None for a kernel with another mechanism, or whose work fell anywhere."""
    moved = _moved(k)
    if not moved or min(moved) < 1 or not set(k.mechanisms) <= _WORK_ONLY:
        return None
    return max(moved)


def _common_factor(kernels: Kernels) -> tuple[float, list[ChangeKernel]] | None:
    """The factor most of the kernels' work grew by (each kernel's largest work ratio within
    _SAME of it), and those kernels; None under _FEW."""
    grown = [(k, g) for k in kernels if (g := _grew(k)) is not None]
    best: list[ChangeKernel] = []
    for _, center in grown:
        at = [k for k, g in grown if abs(g / center - 1) <= _SAME]
        if len(at) > len(best):
            best = at
    if len(best) < _FEW or 2 * len(best) < len(grown):
        return None
    factors = sorted(g for k, g in grown if k in best)
    return factors[len(factors) // 2], best


def scaled_work_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The problem grew: the work of many kernels (launches, instructions, sectors) scaled by
    one factor together. Per kernel it reads as a dozen "More work" and "Launched more often"
    findings; it is one change at the caller's level (batch, sequence length, MoE top-k)."""
    common = _common_factor(still)
    if common is None:
        return None
    factor, at = common
    # Kernels whose work grew by less with it (a compaction's launches 3 -> 5): the same cause.
    less = [k for k in still if k not in at and (g := _grew(k)) is not None and g < factor]
    title = (
        f"More work: x{factor:.2f} across {len(at)} kernels: launches, instructions and sectors "
        "scaled together" + (f" ({len(less)} more grew less)" if less else "")
    )
    lever = (
        "the problem size grew (batch, sequence length, MoE top-k / tokens per expert): if "
        "intended, re-record the baseline (perfgate baseline record, or baseline accept)"
    )
    return "scaled-work", title, lever, at + less


_LIBRARIES = frozenset(f.name for f in FAMILIES if f.library)
_GEMM = re.compile(r"gemm|matmul|\bdot\b|_dot_|dot_general|nvjet_|xmma|cutlass|\bmm_", re.I)


def _repeated_gemm(k: ChangeKernel) -> bool:
    """A GEMM launched a whole number of times as often at the same work a launch."""
    ratios = dict(k.work)
    times = ratios.get("launches")
    if times is None or times < 1.5 or abs(times - round(times)) > 0.05:
        return False
    per_launch = [r for m, r in k.work if m != "launches"]
    return (
        bool(_GEMM.search(k.name))
        and set(k.mechanisms) <= _WORK_ONLY
        and all(abs(r - 1) <= _SAME for r in per_launch)
    )


def recomputation_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The forward runs again in the backward (rematerialization, activation checkpointing):
    some GEMMs launch twice at the same shape while elementwise fusions do more work, and the
    compiler's graph changed (XLA renumbers its fusions). A larger problem scales every
    kernel, the scaled-work rule's; here most kernels are unchanged."""
    repeated = [k for k in still if _repeated_gemm(k)]
    more = [k for k in still if k not in repeated and _grew(k) is not None]
    if not repeated or not (more or new):
        return None
    # The program's own kernels gone and new, the compiler's fusions of the changed graph
    # among them (a generated family such as XLA's or Inductor's is no library).
    graph = [k for k in list(missing) + list(new) if k.family is None or k.family not in _LIBRARIES]
    # The GEMMs launched again and the fusions doing more are listed under it ("in ...").
    title = (
        "recomputation: forward work runs again in the backward (rematerialization / "
        "activation checkpointing)"
    )
    lever = (
        "the remat/checkpoint policy: jax.checkpoint(f, policy=jax.checkpoint_policies."
        "dots_saveable) or torch.utils.checkpoint only where activation memory needs it; "
        "recomputing trades GPU time for memory: if intended, re-record the baseline"
    )
    return "recomputation", title, lever, repeated + more + graph


# Earlier rules claim first: the attention backend before the math mode (its kernels say
# bf16 too), the memory format before the dtype (channels_last kernels carry a dtype), the
# library's own heuristic and user code last. The flag: the rule needs some kernel of the
# program unchanged (a library's other pick, a user kernel's new code are changes of one
# program; with nothing left in common the capture may be another program's).
RULES: tuple[tuple[Rule, bool], ...] = (
    # The whole model's dtype first: everything else that moved with it (its SDPA call falling
    # to the math path in fp32, its GEMMs) is a consequence (hf-decoder bf16 -> fp32).
    (dtype_rule, False),
    (attention_rule, False),
    (compile_rule, False),
    (precision_rule, False),
    (layout_rule, False),
    (optimizer_rule, True),
    (element_type_rule, True),
    # The kernels still there (a problem grown, a forward recomputed) before the user-code
    # rule, which would take the recomputed graph's renumbered fusions for a code change.
    (scaled_work_rule, True),
    (recomputation_rule, True),
    (heuristic_rule, True),
    (user_code_rule, True),
)


def _named(kernels: Kernels) -> tuple[tuple[str, float], ...]:
    """Each label once, with its launches a run, heaviest first."""
    time: dict[str, float] = {}
    launches: dict[str, float] = {}
    for k in kernels:
        name = label(k.name)
        time[name] = time.get(name, 0.0) + k.time_ns
        launches[name] = launches.get(name, 0.0) + k.launches
    order = sorted(time, key=lambda n: (-time[n], n))
    return tuple((n, launches[n]) for n in order[:SHOWN])


def _claim(
    rule: Rule, left: list[ChangeKernel]
) -> tuple[ChangeFinding, set[tuple[str, str]]] | None:
    """One finding of a rule on the kernels no rule has claimed yet, with the (id, side) of
    the kernels it took; None when the rule finds nothing."""
    missing = [k for k in left if k.side == MISSING]
    new = [k for k in left if k.side == NEW]
    regressed = [k for k in left if k.side == SCALED]
    claim = rule(missing, new, regressed) if missing or new or regressed else None
    if claim is None:
        return None
    kind, title, lever, claimed = claim
    ids = {(k.id, k.side) for k in claimed}
    gone = [k for k in missing if (k.id, k.side) in ids]
    came = [k for k in new if (k.id, k.side) in ids]
    kept = [k for k in regressed if (k.id, k.side) in ids]
    if not gone and not came and not kept:
        return None
    finding = ChangeFinding(
        kind=kind,
        title=title,
        replaced=_named(gone),
        by=_named(came),
        replaced_kernels=len(gone),
        by_kernels=len(came),
        before_ns=_time(gone) + sum(k.recorded_ns for k in kept),
        after_ns=_time(came) + _time(kept),
        lever=lever,
        members=tuple(k.id for k in gone + came + kept),
        folded=tuple(k.id for k in kept),
        scaled=_named(kept),
        scaled_kernels=len(kept),
    )
    return finding, {(k.id, k.side) for k in gone + came + kept}


def find_changes(
    kernels: Sequence[ChangeKernel], unchanged: bool = True
) -> tuple[ChangeFinding, ...]:
    """The change findings of one check, the largest (GPU time before and after) first.
    `unchanged`: some baselined kernel is still in the capture."""
    left = [k for k in kernels if k.side in (MISSING, NEW, SCALED)]
    found: list[ChangeFinding] = []
    for rule, needs_unchanged in RULES:
        if needs_unchanged and not unchanged:
            continue
        if any(f.kind in _PATH_KINDS for f in found):
            # A change of the whole path explains what its kernels do (fp32 moves twice the
            # bytes): the kernels still there are not a grown problem's.
            left = [k for k in left if k.side != SCALED]
        # A rule may find several changes of its kind (two libraries' other picks): each
        # claim takes kernels, so this ends.
        while (claimed := _claim(rule, left)) is not None:
            finding, taken = claimed
            found.append(finding)
            left = [k for k in left if (k.id, k.side) not in taken]
    reconfigured = [k for k in kernels if k.side == RECONFIGURED]
    if reconfigured:
        found.append(_configuration(reconfigured))
    found.sort(key=lambda f: -(f.before_ns + f.after_ns))
    return _with_recounted(found, [k for k in kernels if k.side == RECOUNTED])


def _configuration(kernels: Sequence[ChangeKernel]) -> ChangeFinding:
    """The program's own kernels (Triton's or CUDA's) slower at a launch configuration the
    baseline never recorded: an autotune config list or launch parameters changed."""
    named = _named(kernels)
    return ChangeFinding(
        kind="configuration",
        title=(
            f"kernel configuration: {', '.join(n for n, _ in named)} "
            "slower at a launch configuration the baseline never recorded"
        ),
        replaced=named,
        by=named,
        replaced_kernels=len(kernels),
        by_kernels=len(kernels),
        before_ns=sum(k.recorded_ns for k in kernels),
        after_ns=_time(kernels),
        lever=(
            "the kernel's configurations: a Triton @triton.autotune config list (BLOCK sizes, "
            "num_warps, num_stages) or the launch parameters; `perfgate baseline accept` if "
            "intended"
        ),
        members=tuple(k.id for k in kernels),
    )


# A change of the whole path (another attention implementation, compile mode, dtype, layout)
# changes how often the kernels around it run; a library's other tile or a user kernel's new
# code does not explain another kernel's launch count.
_PATH_KINDS = ("attention", "compile", "dtype", "layout", "precision")


def _with_recounted(
    found: list[ChangeFinding], recounted: Sequence[ChangeKernel]
) -> tuple[ChangeFinding, ...]:
    """The kernels launched more or less often, under the largest change of the path."""
    target = next((i for i, f in enumerate(found) if f.kind in _PATH_KINDS), None)
    if target is None or not recounted:
        return tuple(found)
    f = found[target]
    names = tuple(dict.fromkeys(label(k.name) for k in recounted))
    found[target] = replace(
        f, members=f.members + tuple(k.id for k in recounted), recounted=names[:SHOWN]
    )
    return tuple(found)
