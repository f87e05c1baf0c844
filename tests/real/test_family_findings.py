"""One finding per change, with the caller's lever (issue 33, item 4).

Issue 33's real changes (tests/workloads/families.py): a baseline of three runs on machine start
fam-a, the changed program captured once on start fam-b. Each change is one edit a user made
(MoE top-k, the sort keys' dtype, the optimizer, jax.checkpoint, the model's dtype, a Triton
kernel's output dtype); its report must lead with that change, named once, with the lever the
caller holds, and not repeat it kernel by kernel."""

from __future__ import annotations

from perfgate.judge.states import KernelState
from tests import family_table

# The baseline, the check and the report's findings as docs/explain.md's table makes them
# (one record and one check per change for both).
_baseline = family_table.baseline
_check = family_table.result
_findings = family_table.findings


def test_moe_top_k_is_one_program_level_finding_more_work_x2() -> None:
    got = _check("moe", "moe-topk4")
    first = got.changes[0]
    assert first.kind == "scaled-work", [c.title for c in got.changes]
    assert first.title.startswith("More work: x2.00 across "), first.title
    assert "MoE top-k" in first.lever and "re-record the baseline" in first.lever
    # The per-kernel "More work" and "Launched more often" findings follow from it: folded.
    assert len(first.folded) >= 15
    findings = _findings(got)
    assert findings[0].startswith("  CHANGE      More work: x2.00"), findings
    assert sum("More work" in f for f in findings) == 1, findings
    assert not any("Launched more often" in f.split(":")[1] for f in findings[1:]), findings
    # Only a kernel with a mechanism of its own (loads less coalesced) is told beside it.
    assert len(findings) <= 2, findings


def test_cub_int64_keys_name_the_sort_key_type() -> None:
    got = _check("cub", "cub-int64")
    first = got.changes[0]
    assert first.kind == "element-type"
    assert "key type of a CUB radix sort: int -> long" in first.title, first.title
    assert "onesweep passes x4 -> x8" in first.title, first.title
    assert "int32 keys" in first.lever
    assert [c.kind for c in got.changes] == ["element-type"]
    # Every radix-sort kernel gone and new sits under it, nothing left as "user code".
    radix = {
        v.kernel
        for v in got.verdicts
        if v.state in (KernelState.MISSING, KernelState.NEW) and "RadixSort" in v.name
    }
    assert radix and radix <= set(first.members)


def test_adamw_for_loop_is_the_optimizer_implementation() -> None:
    got = _check("train-step", "train-step-forloop")
    assert [c.kind for c in got.changes] == ["optimizer"], [c.title for c in got.changes]
    first = got.changes[0]
    assert first.title == "optimizer implementation: fused -> for-loop"
    assert "fused=True" in first.lever and "foreach=True" in first.lever
    assert first.replaced_kernels == 2 and first.by_kernels == 21
    assert _findings(got) == [f"  CHANGE      {first.title}"]


def test_a_triton_softmax_writing_fp32_is_an_output_written_wider() -> None:
    got = _check("triton-sizes", "triton-sizes-fp32-out")
    regressed = [v for v in got.verdicts if v.state is KernelState.REGRESSED]
    # One softmax kernel, or one per row size (N=1000, N=3000) once identity tells them apart:
    # each writes fp32, whatever configuration the autotuner chose for it.
    assert regressed and {v.name for v in regressed} == {"softmax_kernel"}
    for v in regressed:
        head = v.headline
        assert head is not None and head.mechanism == "wider-stores", v.causes
        assert "store bytes x2.00 with loads unchanged" in head.detail
        assert "dtype" in head.lever and "bf16" in head.lever
        # Not told again as "More work" or "Wider vector stores" beside it.
        mechanisms = [c.mechanism for c in v.causes]
        assert "more-work" not in mechanisms and "vectorized-access" not in mechanisms
    findings = _findings(got)
    assert findings and all("Output written wider" in f for f in findings), findings


def test_jax_remat_is_recomputation() -> None:
    got = _check("jax-train", "jax-remat")
    first = got.changes[0]
    assert first.kind == "recomputation", [c.title for c in got.changes]
    assert "forward work runs again in the backward" in first.title
    assert "jax.checkpoint" in first.lever and "policy=" in first.lever
    # The GEMM launched twice at the same shape and the fusions doing more are under it.
    folded = {v.name for v in got.verdicts if v.kernel in first.folded}
    assert "gemm_fusion_dot_3" in folded and "loop_add_fusion" in folded
    findings = _findings(got)
    assert not any("user kernel's code changed" in f for f in findings), findings
    assert not any("Launched more often" in f or "More work" in f for f in findings), findings


def test_vit_fp32_folds_the_cat_copies_into_the_dtype_finding() -> None:
    got = _check("vit", "vit-fp32")
    assert [c.kind for c in got.changes] == ["dtype"]
    first = got.changes[0]
    assert "dtype of the whole model: FP16 -> FP32" in first.title
    assert "model.to(torch.float32)" in first.lever
    cat = {v.kernel for v in got.verdicts if "CatArrayBatchedCopy" in v.name}
    assert len(cat) == 2 and cat <= set(first.members)
    assert _findings(got) == [f"  CHANGE      {first.title}"]


def test_the_nvrtc_mechanisms_stay_first() -> None:
    for change, phrase in (
        ("nvrtc-bank-conflicts", "bank conflict"),
        ("nvrtc-uncoalesced", "uncoalesced"),
        ("nvrtc-spills", "spill"),
    ):
        got = _check("nvrtc", change)
        assert got.changes == (), (change, [c.title for c in got.changes])
        findings = _findings(got)
        assert findings and phrase in findings[0].lower(), (change, findings)


def test_benign_changes_have_no_finding() -> None:
    for workload, change in (("nvrtc", "nvrtc-reordered"), ("train-step", "train-step-logging")):
        assert _check(workload, change).changes == (), change
