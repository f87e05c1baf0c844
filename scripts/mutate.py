"""Mutation testing of perfgate's judgement: small AST mutations of one module at a time, each
run against the tests that exercise that module; a mutant the tests still pass is a survivor.

    python scripts/mutate.py --out mutation.json            # every module of MODULES
    python scripts/mutate.py --rerun mutation.json --out after.json   # only its survivors
    python scripts/mutate.py --select issue33 --out i33.json    # one issue's functions only
    python scripts/mutate.py --select issue34 --out i34.json    # the time gate's rules
    python scripts/mutate.py --module M --hand --out hand.json   # M's HAND_MUTANTS only

Each worker mutates its own copy of the repository's tracked files (a temporary directory),
so the working tree is never touched and two workers never see each other's mutant. Bytecode
is never written there: a .pyc stores its source's mtime in whole seconds, and two mutants of
one size written within a second would otherwise run the first one's code.

Operators: comparison flips (< <=, > >=, == !=, is / is not, in / not in, < >), and/or,
`not` removed, a numeric constant +1 and set to 0 (1 when it was 0), `return X` -> `return
None`, min/max swapped. Docstrings, strings, annotations and `assert`s are left alone. A
module's HAND_MUTANTS (text replacements) come after its operators' mutants.
docs/mutation.md gives the command used, the score and the survivors judged equivalent.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Fastest first: with -x, a mutant is killed by the first test file that fails.
_JUDGE_TESTS = (
    "tests/metrics/test_thresholds.py",
    "tests/real/test_real_changes.py",
    "tests/real/test_check.py",
)
_NEW_JUDGE = ("tests/judge/test_judgement.py",)
_NEW_MATCH = ("tests/identity/test_matching_fallbacks.py",)
_NEW_RATCHET = ("tests/lifecycle/test_ratchet.py",)
_NEW_CALIBRATION = ("tests/lifecycle/test_calibration_bounds.py",)
_FAIL_CLOSED = ("tests/judge/test_fail_closed.py",)
# Issue 33: the seven families' captures (fam-a baselines, fam-b real changes).
_FAMILIES = (
    "tests/real/test_family_noise.py", "tests/identity/test_family_identity.py",
    "tests/real/test_family_findings.py", "tests/real/test_family_table.py",
)  # fmt: skip
_NEW_33 = ("tests/judge/test_issue33_rules.py",)
# Issue 34: the time gate's rules, on rules and on the corpus's real re-captures.
_TIME_34 = (
    "tests/judge/test_common_mode.py",
    "tests/metrics/test_program_rules.py",
    "tests/real/test_program_time.py",
    "tests/baseline/test_clock_control.py",
    "tests/judge/test_two_runs.py",
)
# The fast schema check held to jsonschema on documents generated from the schema.
_FASTCHECK = ("tests/baseline/test_fastcheck.py",)
# Tests written for the survivors of verdicts, grouping, phases and the baseline's checks.
_NEW_VERDICTS = ("tests/verdicts/test_mutation_verdicts.py",)
# The check's exit paths: its use case, the CLI around it, the reports and the write safety.
_NEW_USECASES = ("tests/usecases/test_mutation_usecases.py",)
_EXIT_PATHS = (
    *_NEW_USECASES, "tests/usecases/test_gate_check.py", "tests/hostile/test_crashes.py",
    "tests/cli/test_rough_edges.py", "tests/reports/test_github.py",
    "tests/cli/test_cli_options.py", "tests/cli/test_cli.py", "tests/common/test_write_safety.py",
)  # fmt: skip
_NEW_REPORTS = ("tests/reports/test_mutation_reports.py",)
# Tests written for the survivors of the causes' rules (every function of rules_*.py).
_NEW_CAUSES = ("tests/causes/test_mutation_causes.py",)
# Tests written for the gaps the verdicts' run left (a check through real captures).
_NEW_GAPS = ("tests/verdicts/test_mutation_gaps.py",)
_REPORT_EXITS = (
    *_NEW_REPORTS, "tests/judge/test_policy.py", "tests/reports/test_github.py",
    "tests/cli/test_cli_options.py", "tests/reports/test_reports.py", "tests/cli/test_cli.py",
    "tests/judge/test_fail_closed.py",
)  # fmt: skip
# module -> the test files that exercise it (files that do not exist yet are skipped, so the
# same table measures the suite before and after the tests written for this run).
MODULES: dict[str, tuple[str, ...]] = {
    "perfgate/judge/outcome.py": (*_JUDGE_TESTS, *_NEW_JUDGE),
    "perfgate/judge/comparison.py": (*_JUDGE_TESTS, *_NEW_JUDGE),
    # The status table and kernel_state (judge/states.py holds only the enum).
    "perfgate/judge/policy.py": ("tests/judge/test_policy.py", *_JUDGE_TESTS, *_NEW_JUDGE),
    "perfgate/identity/matching.py": (
        "tests/identity/test_matching.py", *_NEW_MATCH, "tests/identity/test_identity.py",
        "tests/real/test_real_changes.py", "tests/real/test_check.py",
        "tests/identity/test_family_identity.py", *_NEW_33,
    ),
    "perfgate/identity/families.py": (
        "tests/identity/test_identity.py", "tests/real/test_real_changes.py", *_NEW_MATCH,
        "tests/identity/test_family_identity.py", *_NEW_33,
    ),
    "perfgate/lifecycle/calibrate.py": (
        "tests/lifecycle/test_calibrate.py", *_NEW_CALIBRATION, *_NEW_JUDGE, *_NEW_33,
        "tests/real/test_family_noise.py",
    ),
    **{
        f"perfgate/lifecycle/{m}.py": (
            "tests/lifecycle/test_lifecycle_plans.py", "tests/lifecycle/test_lifecycle.py",
            *_NEW_RATCHET,
        )
        for m in ("plan", "ratchet", "editplan", "ownership", "fresh")
    },
    # Issue 21: the whole-program gate and autotuned launch configurations.
    "perfgate/verdicts/program.py": (
        "tests/metrics/test_program_rules.py", "tests/real/test_program_time.py",
        "tests/real/test_real_changes.py",
    ),
    "perfgate/lifecycle/program.py": ("tests/metrics/test_program_rules.py",
                                      "tests/real/test_program_time.py"),
    "perfgate/metrics/program.py": ("tests/metrics/test_program_rules.py",
                                    "tests/real/test_program_time.py"),
    "perfgate/identity/configs.py": (
        "tests/identity/test_configs_rules.py", "tests/identity/test_autotune.py",
        "tests/identity/test_matching.py",
        "tests/real/test_real_changes.py", "tests/identity/test_family_identity.py", *_NEW_33,
    ),
    # The ratchet's comparison of bounds is in the editor.
    "perfgate/lifecycle/edit.py": (
        *_NEW_RATCHET, "tests/lifecycle/test_lifecycle_plans.py",
        "tests/lifecycle/test_lifecycle.py",
    ),
    # Issue 31, fail closed: the reasons a gate goes unjudged, and where a check decides them
    # (only the named functions of the larger modules: ONLY_FUNCTIONS).
    "perfgate/judge/skips.py": (*_FAIL_CLOSED, "tests/judge/test_policy.py", *_NEW_JUDGE),
    "perfgate/verdicts/check.py": (
        *_FAIL_CLOSED, *_NEW_JUDGE, *_NEW_RATCHET, "tests/metrics/test_stalls.py",
        "tests/hostile/test_corpus.py",
        "tests/usecases/test_two_phase.py", *_NEW_33, "tests/real/test_family_findings.py",
        "tests/judge/test_evidence_noise.py",
    ),
    "perfgate/verdicts/model.py": (
        *_FAIL_CLOSED, "tests/real/test_program_time.py", "tests/real/test_check.py",
        "tests/hostile/test_hostile.py",
    ),
    "perfgate/ingest/gateset.py": (*_FAIL_CLOSED, "tests/usecases/test_two_phase.py"),
    "perfgate/ingest/scope.py": (*_FAIL_CLOSED, *_NEW_RATCHET),
    "perfgate/baseline/fingerprint.py": (*_FAIL_CLOSED, "tests/usecases/test_two_phase.py"),
    "perfgate/ncu/command.py": (*_FAIL_CLOSED, "tests/usecases/test_two_phase.py",
                                "tests/ncu/test_capture.py"),
    # Issue 33 (`--select issue33`: only the functions it added or changed). The modules an
    # earlier issue measured keep their lists above, with issue 33's test files appended.
    "perfgate/lifecycle/record.py": (
        *_NEW_33, *_NEW_CALIBRATION, "tests/lifecycle/test_calibrate.py",
        "tests/real/test_family_noise.py",
    ),
    **{
        f"perfgate/causes/{m}.py": (*_NEW_33, "tests/causes/test_changes.py", *_FAMILIES)
        for m in ("changes", "changes_model", "changes_names", "changes_types",
                  "changes_paths", "changes_picks", "changes_work")
    },
    **{
        f"perfgate/causes/{m}.py": (
            *_NEW_CAUSES, *_NEW_33, "tests/causes/test_causes.py", *_FAMILIES
        )
        for m in ("rules_memory", "rules_occupancy", "rules_execution", "rules_work",
                  "rules_stalls", "rules_ncu", "rootcause")
    },
    "perfgate/identity/grouping.py": (
        *_NEW_33, "tests/identity/test_work_classes.py", "tests/identity/test_family_identity.py",
    ),
    "perfgate/ingest/names.py": (
        *_NEW_33, "tests/ingest/test_kernel_names.py", "tests/ingest/test_units.py",  # its doctests
        "tests/identity/test_family_identity.py",
    ),
    # The one judgement path: the rules' registry, the one route, split kernels, one metric.
    "perfgate/judge/rules.py": (
        "tests/judge/test_judge_rules.py", "tests/real/test_check.py",
        "tests/judge/test_evidence.py",
        "tests/judge/test_evidence_noise.py", *_NEW_33, *_FAIL_CLOSED,
    ),
    "perfgate/verdicts/kernel.py": (
        "tests/judge/test_judge_rules.py", "tests/real/test_check.py",
        "tests/identity/test_autotune.py",
        "tests/real/test_family_autotune.py", *_NEW_33,
    ),
    "perfgate/verdicts/metric.py": (
        *_FAIL_CLOSED, "tests/judge/test_judge_rules.py", "tests/real/test_check.py",
    ),
    # Issue 34: the common factor of a process's kernel times and the time floors.
    "perfgate/judge/common_mode.py": _TIME_34,
    # The bounds of a check of two runs or more (kernels, and the program on H200).
    "perfgate/judge/two_runs.py": (*_TIME_34, "tests/judge/test_judge_rules.py"),
    "perfgate/judge/program.py": _TIME_34,
    "perfgate/verdicts/common_mode.py": (*_TIME_34, "tests/judge/test_judge_rules.py"),
    "perfgate/metrics/timefloors.py": (
        *_TIME_34, "tests/real/test_noise_floors.py", "tests/real/test_family_noise.py",
    ),
    # The fast schema check: what it vouches for skips jsonschema.
    "perfgate/baseline/fastcheck.py": (
        *_FASTCHECK, "tests/baseline/test_baseline.py", "tests/baseline/test_yamlload.py",
        "tests/hostile/test_properties.py",
    ),
    # Verdicts, grouping, phases, baseline checks: the deciding modules not measured before.
    # A kernel absent from the capture: missing, or skipped when only some recorded runs had it.
    "perfgate/verdicts/absent.py": (
        *_NEW_VERDICTS, "tests/identity/test_varied_kernels.py", "tests/real/test_gate_corpus.py",
        "tests/identity/test_work_classes.py", "tests/real/test_real_changes.py",
        "tests/identity/test_identity.py",
    ),
    "perfgate/verdicts/split.py": (
        *_NEW_VERDICTS, "tests/identity/test_split.py", "tests/identity/test_work_classes.py",
        "tests/usecases/test_two_phase.py",
    ),
    "perfgate/verdicts/passing.py": (*_NEW_GAPS, *_NEW_VERDICTS, "tests/real/test_check.py"),
    "perfgate/causes/substitution.py": (
        *_NEW_VERDICTS, "tests/causes/test_causes.py", "tests/identity/test_identity.py",
        "tests/real/test_real_changes.py",
    ),
    "perfgate/ingest/phases.py": (
        *_NEW_VERDICTS, "tests/causes/test_diagnosis.py", "tests/ingest/test_diagnosis_refusal.py",
        "tests/usecases/test_two_phase.py",
    ),
    # tests/hostile/test_hostile.py (a minute unmutated) is left out: the others name each check.
    **{
        f"perfgate/baseline/{m}.py": (
            *_NEW_VERDICTS, "tests/baseline/test_baseline.py",
            "tests/identity/test_varied_kernels.py",
            "tests/baseline/test_yamlload.py",
        )
        for m in ("validate", "load")
    },
    # Use cases and report exit paths: the exit code under --fail-on, which reports are written,
    # replaced or removed after a problem or a bug, GitHub's step outputs and annotations.
    "perfgate/usecases/check_command.py": _EXIT_PATHS,
    "perfgate/usecases/outputs.py": _EXIT_PATHS,
    # Every report's status line and the JSON report's status and exit code.
    **{f"perfgate/reports/{m}.py": _REPORT_EXITS for m in ("summary", "json_report")},
}  # fmt: skip

# In these modules only the named functions are mutated: the decisions a run is about.
ONLY_FUNCTIONS: dict[str, frozenset[str]] = {
    "perfgate/verdicts/check.py": frozenset({"_not_compared", "_program"}),
    "perfgate/verdicts/metric.py": frozenset({"compare_one", "_unavailable"}),
    "perfgate/judge/rules.py": frozenset({"settle"}),
    "perfgate/verdicts/model.py": frozenset({"not_judged", "exit_code_under"}),
    "perfgate/ingest/scope.py": frozenset({"declared", "differ"}),
    "perfgate/baseline/fingerprint.py": frozenset({"_basis", "bases_of"}),
    "perfgate/ncu/command.py": frozenset({"_phase", "_scope_filters", "scope_arguments"}),
    # What decides a kernel absent (the verdicts' wording and the change findings are not).
    "perfgate/verdicts/absent.py": frozenset(
        {"_not_required", "missing_verdict", "_other_work", "_names"}
    ),
    # What decides the exit code, stdout's format and which reports are written or removed
    # (not the trends and drift read from --history, nor the charts' drawing).
    "perfgate/usecases/check_command.py": frozenset({
        "policy_exit_code", "_uses_github", "report_outputs", "_check_report_paths",
        "_skip_irregular_step_files", "run_check_command", "stdout_reporter", "problem_stdout",
        "policy_note",
    }),
    "perfgate/reports/json_report.py": frozenset({"to_dict", "render"}),
    "perfgate/usecases/outputs.py": frozenset({
        "write_reports", "write_step_outputs", "remove_report", "step_outputs", "_one_line",
        "without_output", "replace_stale_reports", "safe_outputs", "_every_input",
        "github_commands", "report_problem",
    }),
}  # fmt: skip

# Issue 33's judgement, for `--select issue33`: the functions (and module-level tables) it
# added or changed, mutated instead of each module's whole source or ONLY_FUNCTIONS, so one
# run over its nine modules stays within minutes.
SELECTIONS: dict[str, dict[str, frozenset[str]]] = {
    # What the issue33 selection left of grouping and configs, and the baseline's checks that
    # parse_baseline makes itself (duplicate ids, regexes, seen_in) beside validate.py's.
    "deciding": {
        "perfgate/identity/grouping.py": frozenset({
            "select", "nvtx_range", "group_launches", "_dims", "readable_ids", "new_ids",
            "pair_work_classes", "log_distance", "WORK_GAP",
        }),
        "perfgate/identity/configs.py": frozenset({
            "_int", "config_of", "configurations", "_per_run", "tuned_reason",
            "records_configuration", "with_durations", "best_configuration",
            "expected_duration", "_warps", "describe_choice", "_us", "slower_choice",
            "describe_reconfig", "pin_advice", "tuned_warning", "describe_change",
        }),
        "perfgate/baseline/load.py": frozenset({"parse_baseline"}),
        # The rest of absent.py (ONLY_FUNCTIONS has what decides a kernel missing).
        "perfgate/verdicts/absent.py": frozenset(
            {"new_verdict", "notice", "change_findings", "_time_before_after", "_launches"}
        ),
    },
    "issue34": {
        "perfgate/judge/common_mode.py": frozenset({
            "weighted_median", "common_factors", "corrected_bound", "noise_words",
            "set_by_floor", "MIN_PEER_NS", "MIN_PEERS", "MAX_COMMON", "_SAME_BOUND",
            "SPREAD_K", "NEAR",
        }),
        "perfgate/metrics/timefloors.py": frozenset({
            "gpu_kind", "interpolated", "time_floor_at", "corrected_floor_at",
            "CORRECTED_FLOOR_POINTS", "TIME_FLOOR_POINTS", "two_run_floor_at",
            "TWO_RUN_FLOOR_POINTS", "program_floor", "two_run_program_floor",
            "PROGRAM_FLOORS", "TWO_RUN_PROGRAM_FLOORS", "TWO_RUN_CORRECTED_FLOOR_POINTS",
        }),
        "perfgate/lifecycle/program.py": frozenset({"program_bound", "record_program"}),
        "perfgate/judge/two_runs.py": frozenset({"two_run_bound", "runs_words", "MIN_RUNS"}),
        "perfgate/judge/program.py": frozenset({"check_bound", "program_state", "_SAME_BOUND"}),
        "perfgate/verdicts/common_mode.py": frozenset({"_bounded", "time_bounds"}),
        "perfgate/baseline/fingerprint.py": frozenset({"basis_difference"}),
        # An autotuned kernel judged at its configuration, without the other ones' range.
        "perfgate/verdicts/kernel.py": frozenset({"per_configuration"}),
    },
    # A baseline from several machine starts (docs/noise.md): the pooling, its bound, the
    # machine start read from the sidecar, the two-run metrics and the autotuner's choice
    # seen in the total time.
    "pooled": {
        "perfgate/lifecycle/pooled.py": frozenset(
            {"starts_of", "pooled_value", "Starts", "CROSS_K"}
        ),
        "perfgate/lifecycle/calibrate.py": frozenset({"calibrate_pooled"}),
        "perfgate/lifecycle/record.py": frozenset({"_pooled", "_pooled_metric"}),
        "perfgate/lifecycle/program.py": frozenset({"pooled_program", "record_program"}),
        "perfgate/ncu/machine.py": frozenset({"machine_start"}),
        "perfgate/verdicts/common_mode.py": frozenset({"time_bounds"}),
        "perfgate/verdicts/kernel.py": frozenset({"_choice", "_CHOICE_TIMES"}),
    },
    # Four runs per check (docs/noise.md "Four runs per check"): the four-run floor, its bound,
    # the as-measured judgement and its words, and the card a machine start names.
    "four-runs": {
        "perfgate/judge/two_runs.py": frozenset({"four_run_bound", "runs_words", "FOUR_RUNS"}),
        "perfgate/metrics/timefloors.py": frozenset(
            {"four_run_floor_at", "FOUR_RUN_FLOOR_POINTS"}
        ),
        "perfgate/verdicts/common_mode.py": frozenset({"_bounded", "time_bounds"}),
        "perfgate/judge/rules.py": frozenset({"word_noise"}),
        "perfgate/ncu/machine.py": frozenset({"visible_uuids", "machine_start"}),
    },
    # The history's drift rule (docs/history.md "Drift"): the value and the level of the newest
    # runs held to the branch's recent runs, what counts against the build, and its words.
    "drift": {
        "perfgate/history/changepoints.py": frozenset(
            {"drift", "_limit", "_worse", "_level", "DriftRule", "spread"}
        ),
        "perfgate/history/detect.py": frozenset(
            {"drift_gates", "_drift", "_held", "held_to_history"}
        ),
        "perfgate/history/detect_report.py": frozenset({"drift_lines", "_level"}),
    },
    # A run held to its own machine start's runs: the start a result keeps, and the runs it is
    # held to (docs/history.md "A run's own machine start").
    "machine-start": {
        "perfgate/history/records.py": frozenset({"machine_start", "_captured", "_start_of"}),
        "perfgate/history/detect.py": frozenset(
            {"held_points", "_drift", "_held", "held_to_history"}
        ),
        "perfgate/history/detect_report.py": frozenset({"_of_start", "to_json"}),
        "perfgate/history/model.py": frozenset({"digest"}),
    },
    "four-run-program": {
        "perfgate/judge/program.py": frozenset({"check_bound", "_SAME_BOUND"}),
        "perfgate/metrics/timefloors.py": frozenset(
            {"four_run_program_floor", "FOUR_RUN_PROGRAM_FLOORS", "two_run_program_floor"}
        ),
        "perfgate/verdicts/program.py": frozenset({"judge_program"}),
        "perfgate/reports/summary.py": frozenset({"program_text", "_FLOOR_RUNS"}),
    },
    "issue33": {
        "perfgate/lifecycle/calibrate.py": frozenset({
            "kernel_varies", "lookback_floor", "lookback_time_floor", "dram_bytes_floor",
            "time_floor",  # its table moved to perfgate/metrics/timefloors.py (issue34)
        }),
        "perfgate/lifecycle/record.py": frozenset({"_metric_baseline", "record_kernel"}),
        "perfgate/causes/changes_types.py": frozenset(
            {"dtype_rule", "_operator_dtype", "element_type_rule", "_types", "bare"}
        ),
        "perfgate/causes/changes_paths.py": frozenset({"_optimizer", "optimizer_rule"}),
        "perfgate/causes/changes_model.py": frozenset({"work_ratios"}),
        "perfgate/causes/changes_work.py": frozenset({
            "_moved", "_grew", "_common_factor", "scaled_work_rule", "_repeated_gemm",
            "recomputation_rule",
        }),
        # more_work and vectorized_access only gained a `stored_wider(...)` test, which
        # these functions' mutants reach through them: their older rules are not mutated.
        "perfgate/causes/rules_memory.py": frozenset({"stored_wider", "wider_stores"}),
        "perfgate/causes/rules_work.py": frozenset({"more_work"}),
        "perfgate/identity/configs.py": frozenset({
            "traffic", "median_traffic", "problem_sizes", "sized_groups", "with_traffic",
            "recorded_traffic", "merge_tuned",
        }),
        "perfgate/identity/grouping.py": frozenset({"_instructions", "split_work"}),
        "perfgate/ingest/names.py": frozenset(
            {"_function_name", "normalise", "_spelled", "short_name"}
        ),
        "perfgate/identity/matching.py": frozenset(
            {"_sized", "_by_size", "_size_pairs", "_renamed_by_work"}
        ),
        "perfgate/identity/families.py": frozenset({"family_of", "_f", "FAMILIES"}),
        "perfgate/judge/rules.py": frozenset(
            {"note_evidence", "why_noted", "name_choice", "moved_per_launch"}
        ),
        "perfgate/verdicts/kernel.py": frozenset({"_choice", "_with_choice"}),
    },
}  # fmt: skip
# A selection's own test files where a module's MODULES list is another run's: check.py's
# serves the fail-closed run (test_corpus and test_two_phase, 90 s together, decide nothing
# issue 33 added); test_check (14 s), in both lists, judges earlier issues' verdicts, not the
# pairing of sizes and renumbered fusions, the evidence notes or the autotuner's ordering.
_DRIFT_TESTS = (
    "tests/history/test_history_changepoints.py", "tests/history/test_history_json.py",
    "tests/history/test_history_drift_level.py",
)  # fmt: skip
_START_TESTS = (
    "tests/history/test_history_machine_start.py", "tests/history/test_history_findings.py",
    *_DRIFT_TESTS,
)  # fmt: skip
SELECTION_TESTS: dict[str, dict[str, tuple[str, ...]]] = {
    "machine-start": {
        module: _START_TESTS
        for module in (
            "perfgate/history/records.py", "perfgate/history/detect.py",
            "perfgate/history/detect_report.py", "perfgate/history/model.py",
        )
    },
    "drift": {
        module: _DRIFT_TESTS
        for module in (
            "perfgate/history/changepoints.py", "perfgate/history/detect.py",
            "perfgate/history/detect_report.py",
        )
    },
    # grouping's list in MODULES serves the issue33 selection (split_work); the ids, the NVTX
    # ranges and the pairing of work classes are read by the identity and matching tests too.
    "deciding": {
        "perfgate/identity/grouping.py": (
            *_NEW_VERDICTS, *_NEW_33, "tests/identity/test_work_classes.py",
            "tests/identity/test_family_identity.py", "tests/identity/test_identity.py",
            "tests/identity/test_matching.py", "tests/identity/test_split.py",
        ),
        # New kernels, the notice of a capture of another program and the change findings.
        "perfgate/verdicts/absent.py": (
            *_NEW_GAPS, *_NEW_VERDICTS, "tests/causes/test_changes.py",
            "tests/real/test_family_findings.py", "tests/real/test_check.py",
            "tests/identity/test_identity.py", "tests/real/test_real_changes.py",
            "tests/identity/test_work_classes.py",
        ),
    },
    "issue34": {
        "perfgate/lifecycle/program.py": _TIME_34,
        "perfgate/baseline/fingerprint.py": _TIME_34,
        "perfgate/verdicts/kernel.py": (
            "tests/judge/test_two_runs.py", "tests/identity/test_autotune.py",
            "tests/real/test_family_autotune.py", "tests/real/test_check.py",
        ),
    },
    # The pooled rule's own tests first, then each module's usual list (MODULES): what
    # time_bounds and _choice decided before the pooled rule is held there.
    "pooled": {
        module: tuple(dict.fromkeys((
            "tests/lifecycle/test_pooled_mutants.py",
            "tests/lifecycle/test_pooled.py", "tests/ncu/test_machine_start.py",
            "tests/verdicts/test_choice_total_time.py", *MODULES.get(module, ()),
            "tests/judge/test_two_runs.py",
        )))
        for module in (
            "perfgate/lifecycle/pooled.py", "perfgate/lifecycle/calibrate.py",
            "perfgate/lifecycle/record.py", "perfgate/lifecycle/program.py",
            "perfgate/ncu/machine.py", "perfgate/verdicts/common_mode.py",
            "perfgate/verdicts/kernel.py",
        )
    },
    # The four-run rule's own tests first, then each module's usual list (MODULES) and the
    # two-run and pooled ones it shares _bounded and time_bounds with.
    "four-runs": {
        module: tuple(dict.fromkeys((
            "tests/judge/test_four_runs.py", "tests/ncu/test_machine_start.py",
            *MODULES.get(module, ()), "tests/lifecycle/test_pooled_mutants.py",
            "tests/verdicts/test_choice_total_time.py", "tests/judge/test_two_runs.py",
        )))
        for module in (
            "perfgate/judge/two_runs.py", "perfgate/metrics/timefloors.py",
            "perfgate/verdicts/common_mode.py", "perfgate/judge/rules.py",
            "perfgate/ncu/machine.py",
        )
    },
    "four-run-program": {
        module: tuple(dict.fromkeys((
            "tests/judge/test_four_runs.py", "tests/judge/test_two_runs.py",
            "tests/reports/test_mutation_reports.py", *MODULES.get(module, ()),
        )))
        for module in (
            "perfgate/judge/program.py", "perfgate/metrics/timefloors.py",
            "perfgate/verdicts/program.py", "perfgate/reports/summary.py",
        )
    },
    "issue33": {
        "perfgate/identity/matching.py": (
            "tests/identity/test_matching.py", *_NEW_MATCH, "tests/identity/test_identity.py",
            "tests/real/test_real_changes.py", "tests/identity/test_family_identity.py", *_NEW_33,
        ),
        "perfgate/verdicts/check.py": (
            *_NEW_33, "tests/real/test_family_findings.py", "tests/real/test_family_table.py",
            "tests/identity/test_family_identity.py",
            "tests/real/test_family_autotune.py",  # _named_choice
            *_NEW_JUDGE, "tests/judge/test_evidence_noise.py",
        ),
    },
}  # fmt: skip

# Mutants made by hand, (what, old text, new text) each, appended to the module's own (ids
# MODULE:hN): ways a check compiled from a schema can accept what the schema refuses that the
# operators above do not make (a keyword ignored, a type widened, an enum by case). The old text
# must occur once in the module.
HAND_MUTANTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "perfgate/baseline/fastcheck.py": (
        ("negative bounds accepted (minimum on |v|)",
         "return lambda v: is_type(v) and v >= least",
         "return lambda v: is_type(v) and abs(v) >= least"),
        ("minimum ignored", 'least = node.get("minimum")', "least = None"),
        ("any time_basis (a string enum takes any string)",
         "return lambda v: isinstance(v, str) and v in texts",
         "return lambda v: isinstance(v, str)"),
        ("string enum by case", "isinstance(v, str) and v in texts",
         "isinstance(v, str) and v.lower() in texts"),
        ("any format_version (other enums take anything)",
         "return lambda v: any(equal(x, v) for x in options)", "return _yes"),
        ("true equals 1 (format_version: true)",
         "return bool(_unbool(one) == _unbool(two))", "return bool(one == two)"),
        ("2.0 is not 2 (stricter: not sure of format_version 2.0)",
         "return bool(_unbool(one) == _unbool(two))",
         "return type(one) is type(two) and bool(one == two)"),
        ("const ignored", "checks.append(lambda v: equal(const, v))", "checks.append(_yes)"),
        ("anyOf as allOf", "any(c(v) for c in options)", "all(c(v) for c in options)"),
        ("additionalProperties ignored",
         "extra: Check | None = None if rest is True else self.node(rest)",
         "extra: Check | None = None"),
        ("propertyNames ignored",
         'names = self.node(node["propertyNames"]) if "propertyNames" in node else None',
         "names = None"),
        ("required ignored", 'required = tuple(node.get("required", ()))', "required = ()"),
        ("minProperties ignored", 'least = node.get("minProperties", 0)', "least = 0"),
        ("a known property's schema ignored", "elif not sub(value):", "elif False:"),
        ("items ignored", 'item = self.node(node["items"]) if "items" in node else None',
         "item = None"),
        ("minItems ignored", 'fewest = node.get("minItems", 0)', "fewest = 0"),
        ("maxItems ignored", 'most = node.get("maxItems")', "most = None"),
        ("minLength ignored", 'shortest = node.get("minLength", 0)', "shortest = 0"),
        ("pattern ignored",
         'search = re.compile(node["pattern"]).search if "pattern" in node else None',
         "search = None"),
        ("pattern over the whole string (stricter: not sure of a trailing newline)",
         're.compile(node["pattern"]).search', 're.compile(node["pattern"]).fullmatch'),
        ("a type list's second type refused (stricter)",
         "return lambda v: first(v) or second(v)", "return first"),
        ("nan and inf are numbers", "if cls is float:\n        return math.isfinite(v)",
         "if cls is float:\n        return True"),
        ("a boolean is a number",
         "if isinstance(v, bool) or not isinstance(v, numbers.Number):",
         "if not isinstance(v, numbers.Number):"),
        ("a boolean is an integer",
         "if isinstance(v, bool):\n        return False\n    return isinstance(v, int) or",
         "return isinstance(v, int) or"),
        ("2.5 is an integer", "(isinstance(v, float) and v.is_integer())",
         "isinstance(v, float)"),
        ("an unknown keyword ignored (not \"not sure\")",
         "self.unknown.add(key)\n                return _no", "self.unknown.add(key)"),
        ("without_bulk vouches when any kernel is valid",
         "not all(map(kernel_is_valid, kernels))", "not any(map(kernel_is_valid, kernels))"),
    ),
    "perfgate/ingest/phases.py": (
        ("the diagnosis capture lends the max of its launches instead of their mean",
         "return sum(numbers) / len(numbers)", "return max(numbers)"),
    ),
    "perfgate/causes/substitution.py": (
        ("a user kernel's replacement worded as a library's pick",
         "elif family is not None and kinds == {family}:", "elif kinds == {family}:"),
    ),
    "perfgate/causes/rules_stalls.py": (
        ("a 1-point stall share named as a root cause", "if rises[top] < 10:",
         "if rises[top] < 1:"),
    ),
    "perfgate/usecases/check_command.py": (
        ("a bug in the check leaves an earlier run's reports in place",
         "a result\n        replace_stale_reports(outputs, exc)\n", "a result\n        pass\n"),
        ("--fail-on ignored: the check's verdict is the exit code",
         "code = policy_exit_code(report, command.policy)", "code = report.exit_code"),
        ("a report that could not be written is left (an earlier run's, or cut short)",
         "remove_report(outputs, exc.path)\n        report_problem", "report_problem"),
        ("a problem's report written over an input (only the path it names dropped)",
         "outputs = safe_outputs(without_output(outputs, exc.path), inputs)",
         "outputs = without_output(outputs, exc.path)"),
        ("the step outputs' exit-code before --fail-on",
         "write_step_outputs(report, outputs, code)",
         "write_step_outputs(report, outputs, report.exit_code)"),
        ("annotations on stderr too with --format github",
         'annotate = _uses_github(command, gh) and command.fmt != "github"',
         "annotate = _uses_github(command, gh)"),
    ),
    "perfgate/usecases/outputs.py": (
        ("after a bug, the step summary is appended to as well",
         "write_reports(problem, replace(outputs, step_summary=None))",
         "write_reports(problem, outputs)"),
        ("a GitHub step file named by a problem is removed",
         "if path and path in {getattr(outputs, name) for name in _REPORT_FILES}:",
         "if path:"),
        ("a problem's step outputs say exit 0",
         "write_step_outputs(problem, outputs, exc.exit_code)\n        return",
         "write_step_outputs(problem, outputs, ExitCode.OK)\n        return"),
        ("a problem's report that cannot be written is left in place",
         "        remove_report(outputs, also.path)\n", ""),
        ("reporters failing after a bug leave the earlier reports",
         "all\n        for path in (outputs.junit, outputs.markdown, outputs.json, "
         "outputs.pr_comment):",
         "all\n        for path in ():"),
        ("the step outputs' verdict after --fail-on",
         '"verdict": EXIT_WORDS[report.exit_code].output',
         '"verdict": EXIT_WORDS[exit_code].output'),
        ("annotations are errors under --fail-on never",
         'level: github_report.Level = "error" if policy else "warning"',
         'level: github_report.Level = "error"'),
        ("an earlier run's charts beside the markdown kept",
         "        _remove_earlier_charts(outputs.markdown, [*charts.values(), *trend_files])\n",
         ""),
    ),
    "perfgate/reports/json_report.py": (
        ("the JSON's exit_code under --fail-on never (0 for a failed check)",
         "code = int(report.exit_code)", "code = int(report.exit_code_under(frozenset()))"),
        ("the JSON's status of a passing check",
         '"status": EXIT_WORDS[report.exit_code].json',
         '"status": EXIT_WORDS[type(report.exit_code)(0)].json'),
    ),
    "perfgate/reports/summary.py": (
        ("the status line's verdict of the first problem's check passes",
         "verdict = EXIT_WORDS[report.exit_code].status_line\n        return",
         "verdict = EXIT_WORDS[type(report.exit_code)(0)].status_line\n        return"),
        ("the status line's verdict under --fail-on never",
         "code = report.exit_code\n", "code = report.exit_code_under(frozenset())\n"),
    ),
}  # fmt: skip

# Functions left out: who accepts a change and when (environment plumbing, no judgement).
SKIPPED_FUNCTIONS = frozenset({"_git_user", "who", "now", "stamp", "history_entry"})

_FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
_REVERSE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.Gt,
    ast.Gt: ast.Lt,
    ast.LtE: ast.GtE,
    ast.GtE: ast.LtE,
}


@dataclass(frozen=True)
class Mutant:
    id: str  # module:index, stable while the module's source is
    module: str
    line: int
    what: str


def _skipped(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: annotations, asserts, f-strings, SKIPPED_FUNCTIONS."""
    out: set[int] = set()
    for node in ast.walk(tree):
        subtrees: list[ast.AST] = []
        if isinstance(node, (ast.Assert, ast.JoinedStr)):
            subtrees.append(node)
        if isinstance(node, (ast.AnnAssign, ast.arg)) and node.annotation is not None:
            subtrees.append(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            subtrees.append(node.returns)
        if isinstance(node, ast.FunctionDef) and node.name in SKIPPED_FUNCTIONS:
            subtrees.append(node)
        for sub in subtrees:
            out.update(id(n) for n in ast.walk(sub))
    return out


def _targets(stmt: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


def _sites(
    tree: ast.Module, only: frozenset[str] | None = None
) -> Iterator[tuple[ast.AST, str, int]]:
    """(node, description, variant) of every mutation, in a fixed order; with `only`, of the
    functions of those names alone."""
    skip = _skipped(tree)
    if only is not None:
        inside = {
            id(n)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef) and fn.name in only
            for n in ast.walk(fn)
        }
        # A module-level table named in `only` (a constant the judgement reads) is mutated too.
        inside |= {
            id(n)
            for stmt in tree.body
            if isinstance(stmt, (ast.Assign, ast.AnnAssign))
            and any(isinstance(t, ast.Name) and t.id in only for t in _targets(stmt))
            for n in ast.walk(stmt)
        }
        skip |= {id(n) for n in ast.walk(tree) if id(n) not in inside}
    returns_none: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and isinstance(fn.returns, ast.Constant):
            returns_none.update(id(n) for n in ast.walk(fn))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _FLIPS:
                    yield node, f"{type(op).__name__} -> {_FLIPS[type(op)].__name__}", 2 * k
                if type(op) in _REVERSE:
                    yield node, f"{type(op).__name__} -> {_REVERSE[type(op)].__name__}", 2 * k + 1
        elif isinstance(node, ast.BoolOp):
            yield node, "and -> or" if isinstance(node.op, ast.And) else "or -> and", 0
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not removed", 0
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool)
        ):
            yield node, f"{node.value!r} -> {node.value + 1!r}", 0
            yield node, f"{node.value!r} -> {0 if node.value else 1}", 1
        elif isinstance(node, ast.Return) and node.value is not None:
            if id(node) not in returns_none and not (
                isinstance(node.value, ast.Constant) and node.value.value is None
            ):
                yield node, "return None", 0
        elif isinstance(node, ast.Name) and node.id in ("min", "max"):
            yield node, f"{node.id} -> {'max' if node.id == 'min' else 'min'}", 0


def _apply(node: ast.AST, variant: int) -> None:
    if isinstance(node, ast.Compare):
        k, reverse = divmod(variant, 2)
        table = _REVERSE if reverse else _FLIPS
        node.ops[k] = table[type(node.ops[k])]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        raise _Unwrap(node)  # `not x` -> `x`: its parent must take the operand instead
    elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        node.value = node.value + 1 if variant == 0 else (0 if node.value else 1)
    elif isinstance(node, ast.Return):
        node.value = ast.Constant(None)
    elif isinstance(node, ast.Name):
        node.id = "max" if node.id == "min" else "min"


class _Unwrap(Exception):
    def __init__(self, node: ast.UnaryOp) -> None:
        self.node = node


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.UnaryOp) -> None:
        self.target = target

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if node is self.target:
            return node.operand
        return self.generic_visit(node)


def _defined(tree: ast.Module) -> set[str]:
    """The names a module defines: functions, classes and assigned module-level names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(x.id for x in node.targets if isinstance(x, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def mutants_of(module: str) -> list[tuple[Mutant, str]]:
    """Every mutant of one module with the source it runs."""
    source = (ROOT / module).read_text()
    only = SELECTIONS[_select][module] if _select else ONLY_FUNCTIONS.get(module)
    if only is not None:
        # A function that moved would silently leave its mutants out: name it instead.
        defined = _defined(ast.parse(source))
        gone = sorted(only - defined)
        if gone:
            raise SystemExit(
                f"{module} defines none of {', '.join(gone)}: update scripts/mutate.py"
            )
    count = sum(1 for _ in _sites(ast.parse(source), only))
    out = []
    for index in range(count):
        tree = ast.parse(source)
        node, what, variant = list(_sites(tree, only))[index]
        try:
            _apply(node, variant)
        except _Unwrap as unwrap:
            tree = _Replace(unwrap.node).visit(tree)
        ast.fix_missing_locations(tree)
        line = getattr(node, "lineno", 0)
        out.append((Mutant(f"{module}:{index}", module, line, what), ast.unparse(tree)))
    for k, (what, old, new) in enumerate(HAND_MUTANTS.get(module, ())):
        if source.count(old) != 1:
            raise SystemExit(f"hand mutant {what!r}: its text is not once in {module}")
        line = source[: source.index(old)].count("\n") + 1
        out.append((Mutant(f"{module}:h{k}", module, line, f"hand: {what}"),
                    source.replace(old, new)))  # fmt: skip
    return out


def _copy_tree(dest: Path) -> None:
    git = shutil.which("git")
    if git is None:
        raise SystemExit("git is needed to list the repository's files")
    files = subprocess.run(
        [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _pytest(tree: Path, tests: tuple[str, ...], timeout: float) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if proc.returncode == 0 else "killed"


NEW_TESTS = frozenset(
    (*_NEW_JUDGE, *_NEW_MATCH, *_NEW_RATCHET, *_NEW_CALIBRATION, *_NEW_33, *_FASTCHECK,
     *_NEW_VERDICTS, *_NEW_USECASES, *_NEW_REPORTS, *_NEW_CAUSES, *_NEW_GAPS)
)  # fmt: skip
_before = False  # --before: the suite as it was before the tests written for this run
_select: str | None = None  # --select: a SELECTIONS entry instead of ONLY_FUNCTIONS


def _tests(module: str, tree: Path) -> tuple[str, ...]:
    chosen = SELECTION_TESTS.get(_select or "", {}).get(module)
    listed = chosen if chosen is not None else MODULES[module]
    return tuple(t for t in listed if (tree / t).exists() and not (_before and t in NEW_TESTS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="results JSON")
    parser.add_argument("--rerun", type=Path, help="run only the survivors of this results JSON")
    parser.add_argument("--module", action="append", help="only these modules (default: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--before", action="store_true", help="leave out " + ", ".join(NEW_TESTS))
    parser.add_argument("--hand", action="store_true", help="only the modules' HAND_MUTANTS")
    parser.add_argument("--select", choices=sorted(SELECTIONS),
                        help="mutate only this selection's functions of its modules")  # fmt: skip
    args = parser.parse_args()
    global _before, _select
    _before = args.before
    _select = args.select

    modules = args.module or list(SELECTIONS[_select] if _select else MODULES)
    previous: dict[str, dict[str, str]] = {}
    if args.rerun:
        previous = {m["id"]: m for m in json.loads(args.rerun.read_text())["mutants"]}
    work = [(m, src) for mod in modules for m, src in mutants_of(mod)]
    if args.hand:
        work = [(m, src) for m, src in work if m.what.startswith("hand: ")]
    if args.rerun:
        for m, _ in work:
            if m.id not in previous or previous[m.id]["what"] != m.what:
                raise SystemExit(f"{m.id} is not the mutant of {args.rerun}: source changed")
    todo = [(m, s) for m, s in work if not previous or previous[m.id]["status"] == "survived"]
    # Each result is appended to OUT.partial as it comes: a run stopped half way resumes there.
    partial = args.out.with_suffix(".partial")
    done: dict[str, str] = {}
    if partial.exists():
        done = dict(line.split(" ", 1)[::-1] for line in partial.read_text().splitlines())
    todo = [(m, s) for m, s in todo if m.id not in done]

    trees = [Path(tempfile.mkdtemp(prefix=f"perfgate-mutate{i}-")) for i in range(args.jobs)]
    for tree in trees:
        _copy_tree(tree)
    timeouts: dict[str, float] = {}
    # Unmutated, each module's tests must pass; their time sets the limit per mutant.
    for mod in dict.fromkeys(m.module for m, _ in todo):
        start = time.monotonic()
        if _pytest(trees[0], _tests(mod, trees[0]), 900) != "survived":
            raise SystemExit(f"the tests of {mod} fail without any mutant")
        timeouts[mod] = max(30.0, 3 * (time.monotonic() - start))
        print(f"{mod}: {len(_tests(mod, trees[0]))} test files, limit {timeouts[mod]:.0f}s",
              flush=True)  # fmt: skip

    free = list(trees)
    status: dict[str, str] = {m.id: previous[m.id]["status"] for m, _ in work if previous}
    status.update(done)

    def run(item: tuple[Mutant, str]) -> None:
        mutant, source = item
        tree = free.pop()
        try:
            (tree / mutant.module).write_text(source)
            status[mutant.id] = _pytest(tree, _tests(mutant.module, tree), timeouts[mutant.module])
            print(f"{status[mutant.id]:9} {mutant.module}:{mutant.line} {mutant.what}", flush=True)
            with partial.open("a") as log:
                log.write(f"{status[mutant.id]} {mutant.id}\n")
        finally:
            shutil.copy2(ROOT / mutant.module, tree / mutant.module)
            free.append(tree)

    start = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(run, todo))
    for tree in trees:
        shutil.rmtree(tree)

    rows = [{**asdict(m), "status": status[m.id]} for m, _ in work]
    counts = {
        s: sum(1 for r in rows if r["status"] == s) for s in ("killed", "survived", "timeout")
    }
    detected = counts["killed"] + counts["timeout"]
    summary = {**counts, "total": len(rows), "score": round(detected / len(rows), 4),
               "seconds": round(time.monotonic() - start)}  # fmt: skip
    args.out.write_text(json.dumps({"summary": summary, "mutants": rows}, indent=1) + "\n")
    print(json.dumps(summary))
    for r in rows:
        if r["status"] == "survived":
            print(f"survived {r['module']}:{r['line']} {r['what']}  [{r['id']}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
