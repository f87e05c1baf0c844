"""What to try first, per mechanism, and per library family.

The user-code levers are the standard CUDA tuning answers to each bottleneck (coalescing,
shared-memory padding, occupancy limits, pipelining); docs/explain.md lists them with the
evidence each rule reads. A library kernel's code is
closed: its caller controls only shapes, alignment, dtype, layout, backend flags and the
library version, so its levers say those and never __launch_bounds__ or __syncthreads().
"""

from __future__ import annotations

from collections.abc import Mapping

from perfgate.identity.families import FAMILIES

ACCEPT = (
    "the change looks intended: if the speed-up is what you wanted, accept it with "
    "`perfgate baseline accept --reason ...`"
)

LEVERS: Mapping[str, str] = {
    "uncoalesced-loads": (
        "coalesce: consecutive threads should read consecutive addresses (index with "
        "threadIdx.x in the fastest dimension, transpose through shared memory, or make the "
        "tensor contiguous); check the base address alignment"
    ),
    "uncoalesced-stores": (
        "coalesce the stores: consecutive threads should write consecutive addresses; stage a "
        "transposed tile in shared memory and write it out row by row"
    ),
    "atomic-contention": (
        "reduce hierarchically: warp shuffle (__shfl_down_sync) or a block reduction in shared "
        "memory first, then one atomic per warp or block"
    ),
    "occupancy-registers": (
        "fewer live values per thread, or __launch_bounds__(threads, min_blocks) to cap "
        "registers; check `nvcc -Xptxas -v` for spills before keeping it"
    ),
    "occupancy-shared-memory": (
        "ask for less shared memory per block: smaller tiles, or stream through shared memory "
        "instead of keeping a whole block's data"
    ),
    "occupancy-limiter": (
        "check the launch configuration (block size, blocks per SM) against the new limiter"
    ),
    "local-memory": (
        "index register arrays only with compile-time constants (unroll the loop); if ptxas "
        "reports spills, give the kernel its registers back (drop a tight __launch_bounds__ "
        "or -maxrregcount)"
    ),
    "spills-removed": ACCEPT + "; the spills are gone, more registers per thread is the price",
    "bank-conflicts": (
        "pad each shared-memory row by one element (tile[32][33]) or swizzle the layout so a "
        "warp's 32 accesses hit 32 banks"
    ),
    "divergence": (
        "make branch conditions uniform per warp: branch on the warp index, not the lane; sort "
        "or bucket work so that the threads of a warp take the same path"
    ),
    "lost-pipelining": (
        "restore software pipelining: num_stages (Triton), cp.async or TMA multi-stage "
        "buffers (CUDA/CUTLASS kStages), so loads for the next tile are in flight during the "
        "math of this one"
    ),
    "no-tensor-cores": (
        "get the tensor cores back: a tensor-core dtype (fp16/bf16/tf32/int8), WMMA/wgmma or "
        "tl.dot, K and N multiples of 16"
    ),
    "more-work": (
        "find the extra work: the kernel executes more instructions or moves more bytes at the "
        "same efficiency; look for a larger problem size, a recomputed value or a loop bound"
    ),
    "less-work": ACCEPT,
    "wider-stores": (
        "the output tensor's dtype: write the input's dtype (bf16/fp16) where the consumer "
        "allows it (Triton: tl.store(out_ptr, y.to(out_ptr.dtype.element_ty)) with a bf16 "
        "output; PyTorch: torch.empty_like(x) rather than dtype=torch.float32)"
    ),
    "launch-count": (
        "find the redundant launch: the same kernel now runs more often per captured run "
        "(a duplicated call, a lost cache or fusion)"
    ),
    "launch-shape": (
        "check the grid and block size: a changed launch configuration changes occupancy, "
        "tail effects and the work per thread"
    ),
    "vectorized-access": ACCEPT,
    "trade-off": ACCEPT,
}

# How a library's caller steers it, whatever went wrong inside.
_LIBRARY: Mapping[str, str] = {
    "cuBLAS": (
        "cuBLAS picks its kernel by shape, dtype and layout: keep M, N, K multiples of 8 "
        "(fp16/bf16; 16 for int8/fp8), 16-byte aligned pointers, a tensor-core dtype "
        "(bf16/fp16, or allow TF32: torch.backends.cuda.matmul.allow_tf32), contiguous "
        "operands; compare the cuBLAS version"
    ),
    "cuDNN": (
        "cuDNN picks its engine by shape, dtype and layout: use channels_last "
        "(memory_format=torch.channels_last), fp16/bf16, channel counts multiples of 8, "
        "torch.backends.cudnn.benchmark = True; compare the cuDNN version"
    ),
    "FlashAttention": (
        "the attention backend is chosen by PyTorch: pin it with "
        "torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION) (older: "
        "torch.backends.cuda.sdp_kernel), keep fp16/bf16, head dim a multiple of 8 (<= 256), "
        "contiguous q/k/v and a supported mask; compare the flash-attn/PyTorch version"
    ),
    "CUTLASS": (
        "choose the CUTLASS template parameters: tile shape, kStages (pipeline depth), "
        "alignment (operands 16-byte aligned, extents multiples of 8), the element types"
    ),
    "NCCL": (
        "NCCL picks algorithm and protocol by message size and topology: check message sizes "
        "(bucket sizes), NCCL_ALGO / NCCL_PROTO, and the NCCL version"
    ),
    "CUB": (
        "CUB picks its kernels by key and value types and the item count (its policy hub): "
        "check the dtypes reaching the sort, select or scan (int32 keys, no values where none "
        "are needed), the number of items, and the CUB/CCCL version"
    ),
}

# The part of a mechanism a library's caller can still act on.
_LIBRARY_HINT: Mapping[str, str] = {
    "uncoalesced-loads": "a strided or transposed operand: make it contiguous",
    "uncoalesced-stores": "a strided or transposed output: make it contiguous",
    "no-tensor-cores": "an fp32 operand without TF32, or a shape off multiples of 8",
    "lost-pipelining": "a shape or alignment change that made the library pick a shallower kernel",
    "occupancy-registers": "a shape change that made the library pick another tile",
    "occupancy-shared-memory": "a shape change that made the library pick another tile",
    "more-work": "larger shapes or padding reaching the library",
}

LIBRARY_FAMILIES = frozenset(f.name for f in FAMILIES if f.library)


# A mechanism whose lever depends on the direction it moved in: its lever when it improved.
IMPROVED_LEVERS: Mapping[str, str] = {
    "launch-count": (
        "fewer launches per captured run: if the capture was scoped otherwise (ncu "
        "--launch-count, --launch-skip, -k, --nvtx-include, --range-filter), the counts do not "
        "compare: capture with the baseline's launch filters. If the program really launches "
        "it less often (fused, cached), accept it with `perfgate baseline accept --reason ...`"
    ),
}


def lever(mechanism: str, family: str | None, improved: bool = False) -> str:
    """The lever for a mechanism, said at the level the kernel's author controls; `improved`:
    the mechanism moved the good way (fewer launches, not more)."""
    base = (IMPROVED_LEVERS.get(mechanism) if improved else None) or LEVERS.get(mechanism, "")
    if family not in LIBRARY_FAMILIES or base.startswith(ACCEPT):
        return base
    library = _LIBRARY.get(family or "", "")
    hint = _LIBRARY_HINT.get(mechanism)
    return f"likely {hint}; {library}" if hint else library


# The dominant stall's meaning and lever, for a stall share that moved with no mechanism to
# explain it. short_scoreboard waits on MIO results (shared memory, MUFU), never on
# registers, so its lever is not occupancy.
STALLS: Mapping[str, tuple[str, str]] = {
    "mio_throttle": (
        "the MIO queue is full: shared-memory or special-function instructions come faster "
        "than it accepts them",
        "fewer, wider shared-memory accesses; move lookup tables out of the hot loop",
    ),
    "short_scoreboard": (
        "warps wait for MIO results: shared memory, special math functions (MUFU), some converts",
        "fewer shared-memory round trips per FLOP (keep values in registers), avoid bank "
        "conflicts, fast-math intrinsics (__expf) for MUFU-heavy code",
    ),
    "long_scoreboard": (
        "warps wait for L1TEX: global or local memory (spills show here too)",
        "keep more independent loads in flight (prefetch, pipelining), improve reuse (tiling)",
    ),
    "math_pipe_throttle": (
        "a math pipe is saturated",
        "use tensor cores, or do fewer FLOPs (algorithmic change)",
    ),
    "wait": (
        "fixed-latency dependencies, such as MMA results used right after the MMA",
        "deepen the software pipeline (more stages) and interleave independent work",
    ),
    "barrier": (
        "warps wait at a block barrier",
        "balance work between the warps of a block; synchronise less often",
    ),
    "lg_throttle": (
        "the local/global load-store queue is full",
        "fewer, wider global or local accesses (vector loads); fewer atomics",
    ),
    "drain": (
        "warps wait at exit for their memory writes (often atomics) to drain",
        "fewer global writes or atomics per thread",
    ),
    "branch_resolving": ("warps wait for branch targets", "fewer, warp-uniform branches"),
    "no_instruction": ("instruction cache misses", "smaller hot loops, fewer unrolled copies"),
    "membar": ("warps wait at memory barriers", "fewer __threadfence() calls"),
    "gmma": ("warpgroups wait for wgmma results", "pipeline wgmma deeper"),
}
