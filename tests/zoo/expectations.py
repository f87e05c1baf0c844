"""What each regressed zoo kernel must fail on. Each entry is a metric, or a tuple of metrics
of which at least one must regress (captures differ in what they hold: the short list counts
tensor instructions, --set full only has the tensor pipe's utilization)."""

from __future__ import annotations

EXPECTED_REGRESSIONS: dict[str, list[str | tuple[str, ...]]] = {
    # Coalescing is gated width-independently: sectors and bytes used per sector, not sectors
    # per request (16-byte vector loads have a quarter of the requests, same sectors).
    "zoo_coalescing": ["global_load_sectors", ("global_load_efficiency", "global_load_sectors")],
    "zoo_atomics": ["l2_atomic_requests", "dominant_stall", ("stall_cpi.drain", "stall.drain")],
    "zoo_registers": ["registers_per_thread", "occupancy_limiter", "achieved_occupancy"],
    "zoo_bank_conflicts": ["shared_bank_conflicts", "dominant_stall"],
    "zoo_divergence": ["warp_execution_efficiency"],
    "zoo_local_memory": ["local_memory_sectors"],
    "zoo_tensor_cores": [("tensor_instructions", "tensor_pipe_utilization")],
    "zoo_shared_occupancy": ["shared_memory_per_block", "occupancy_limiter", "achieved_occupancy"],
}


# The mechanism the differential diagnosis must lead with for each regressed zoo kernel.
EXPECTED_MECHANISMS: dict[str, str] = {
    "zoo_coalescing": "uncoalesced-loads",
    "zoo_atomics": "atomic-contention",
    "zoo_registers": "occupancy-registers",
    "zoo_bank_conflicts": "bank-conflicts",
    "zoo_divergence": "divergence",
    "zoo_local_memory": "local-memory",
    "zoo_tensor_cores": "no-tensor-cores",
    "zoo_shared_occupancy": "occupancy-shared-memory",
}


def unmet(regressed: dict[str, set[str]]) -> list[str]:
    """The expectations a check result does not meet, as readable lines."""
    problems = []
    for kernel, wanted in EXPECTED_REGRESSIONS.items():
        got = regressed.get(kernel, set())
        for item in wanted:
            options = item if isinstance(item, tuple) else (item,)
            if not any(o in got for o in options):
                problems.append(f"{kernel}: none of {options} regressed (regressed: {sorted(got)})")
    return problems
