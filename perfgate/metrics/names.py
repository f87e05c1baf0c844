"""Raw metric names that move between chips and ncu versions, and how to say that a gated
metric is absent from a capture.

ncu drops a metric name it does not know without a word (seen on ncu 2025.3.1: exit 0,
no log line, the column simply absent), so perfgate names every gated metric a capture lacks,
with the chip it was captured on and the names known to stand for the same quantity.
"""

from __future__ import annotations

from collections.abc import Iterable

from perfgate.ingest.launches import cc_version

# Compute capability -> chip family, for messages.
ARCHITECTURES: dict[tuple[int, int], str] = {
    (7, 0): "GV100 (Volta)",
    (7, 2): "GV10B (Xavier)",
    (7, 5): "TU10x (Turing)",
    (8, 0): "GA100 (Ampere)",
    (8, 6): "GA10x (Ampere)",
    (8, 7): "GA10B (Orin)",
    (8, 9): "AD10x (Ada)",
    (9, 0): "GH100 (Hopper)",
    (10, 0): "GB100 (Blackwell)",
    (10, 3): "GB110 (Blackwell)",
    (11, 0): "Thor",
    (12, 0): "GB20x (Blackwell)",
    (12, 1): "GB10 (Blackwell)",
}

# Names that stand for the same quantity on other chips or ncu versions: the first is
# what ncu 2025 reports on GH100, the others what older versions or other chips call it.
_ALTERNATIVES: tuple[tuple[str, ...], ...] = (
    (
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    ("dram__bytes_read.sum", "dram__bytes_op_read.sum", "fb__bytes_read.sum"),
    ("dram__bytes_write.sum", "dram__bytes_op_write.sum", "fb__bytes_write.sum"),
    ("smsp__inst_executed_pipe_tensor.sum", "sm__inst_executed_pipe_tensor.sum"),
    (
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    ),
    (
        "lts__t_requests_srcunit_tex_op_atom.sum",
        "lts__t_requests_srcunit_tex_op_atom_dot_alu.sum + "
        "lts__t_requests_srcunit_tex_op_atom_dot_cas.sum",
    ),
    (
        "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / "
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ),
    (
        "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum / "
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    ),
    (
        "smsp__thread_inst_executed.sum / smsp__inst_executed.sum",
        "smsp__thread_inst_executed_per_inst_executed.ratio",
    ),
)
_STALL_FORMS = (
    "smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio",
    "smsp__warp_issue_stalled_{r}_per_warp_active.pct",
    "smsp__average_warp_latency_issue_stalled_{r}.ratio",
    "smsp__warps_issue_stalled_{r}.sum",
)


def architecture(cc: str | None) -> str:
    version = cc_version(cc)
    if version is None:
        return "an unknown chip"
    chip = ARCHITECTURES.get(version)
    return f"CC {cc} ({chip})" if chip else f"CC {cc}"


def _stall_reason(name: str) -> str | None:
    for form in _STALL_FORMS:
        head, _, tail = form.partition("{r}")
        if name.startswith(head) and name.endswith(tail) and len(name) > len(head) + len(tail):
            return name[len(head) : len(name) - len(tail)]
    return None


def alternatives(name: str) -> tuple[str, ...]:
    """Other names known to measure what `name` measures (another chip's or ncu's spelling)."""
    out: list[str] = []
    for group in _ALTERNATIVES:
        if any(name == member or name in member.split(" ") for member in group):
            out.extend(m for m in group if m != name and name not in m.split(" "))
    reason = _stall_reason(name)
    if reason is not None:
        out.extend(f.format(r=reason) for f in _STALL_FORMS if f.format(r=reason) != name)
    return tuple(dict.fromkeys(out))


def describe_absent(names: Iterable[str], cc: str | None) -> list[str]:
    """One sentence per gated raw metric a capture lacks."""
    where = architecture(cc)
    lines = []
    for name in names:
        alt = alternatives(name)
        known = f"; known alternatives: {', '.join(alt)}" if alt else ""
        lines.append(
            f"{name}: absent from the capture on {where} (ncu drops a metric it does not "
            f"collect there without an error){known}"
        )
    return lines


def absent_note(needed: Iterable[str], columns: frozenset[str], cc: str | None) -> str:
    """For a check's missing-metric message: which needed names the capture lacks, on which
    chip, and the alternatives known for them ("" when none is absent)."""
    absent = [n for n in needed if n not in columns]
    if not absent:
        return ""
    alts = [f"{n} -> {' or '.join(a)}" for n in absent if (a := alternatives(n))]
    known = f"; known alternatives: {'; '.join(alts)}" if alts else ""
    return (
        f"; absent from the capture on {architecture(cc)}: {', '.join(absent)} (ncu drops a "
        f"metric it does not collect without an error){known}"
    )
