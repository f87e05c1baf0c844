#!/usr/bin/env bash
# Two-phase `perfgate capture` against today's single-phase capture (issue 24), on the device:
#   OUT=/tmp/two_phase WORKLOADS="hf-decoder cnn-tf32 triton-autotune" \
#     bash benchmarks/capture_cost/two_phase.sh
# For each workload of tests/workloads/field.py, against a baseline recorded here with
# `perfgate baseline record` from the three h100-a runs of tests/data/field/h100/h100-a/:
#   (a) full   today's single-phase capture   perfgate capture --phases full
#   (b) gate   the new gate capture            perfgate capture --phases gate (+ its check)
#   (c) a REGRESSED build (REGRESSED below: a real one-line change of tests/workloads/field.py
#       that fails a gate on H100), perfgate capture --phases auto: its gate capture, the check
#       that fails, and the diagnosis capture of the failing kernels; then perfgate check of
#       the pair (its output kept in $OUT/check-WORKLOAD-regressed.txt).
# Each step is timed; $OUT/two_phase.txt gets one row per capture: workload, mode, wall s (the
# whole perfgate capture command), ncu s (the sidecar's wall_s), passes per kernel (from ncu's
# "- N passes" lines, the sidecar's passes_per_kernel), kernels, launches, exit code.
# Exit non-zero when any step failed (a capture, a check of (b) that does not pass, a check of
# (c) that does not fail, a missing diagnosis capture).
# On a GPU other than the H100 the baseline is re-recorded from (a)'s capture (one run: its
# bounds are the catalog's), since a baseline judges only its own GPU; the table says which.
# Needs perfgate's dependencies (click, pyyaml, jsonschema, pandas, junit-xml): carry the
# missing ones as wheels (/work/.library/device/README.md). Runs in about 5 minutes on an H100
# with the default workloads.
set -u
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-/tmp/two_phase}; mkdir -p "$OUT"; PY=${PY:-python3}; NCU=${NCU:-ncu}
WORKLOADS=${WORKLOADS:-hf-decoder cnn-tf32 triton-autotune}
STEP_S=${STEP_S:-200}  # one capture's time limit
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
declare -A REGRESSED=([hf-decoder]=hf-decoder-fp32 [gemms]=gemms-tf32-off [cnn-bf16-cl]=cnn-bf16)
WORK=$(mktemp -d /tmp/two_phase.XXXXXX)
TABLE="$OUT/two_phase.txt"; LOG="$OUT/two_phase.log"; : >"$LOG"
fails=0; t0=$(date +%s)
fail() { echo "FAILED: $*" | tee -a "$LOG" >&2; fails=$((fails + 1)); }
"$PY" -c "import perfgate.cli, perfgate.reports.junit, jsonschema" 2>>"$LOG" || {
  echo "perfgate or its dependencies cannot be imported (see $LOG): carry wheels" >&2; exit 2; }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
NCU_VERSION=$("$NCU" --version 2>/dev/null | tail -1)
{
  echo "# two-phase perfgate capture, $(date -u +%Y-%m-%dT%H:%MZ), GPU: ${GPU:-unknown}, $NCU_VERSION"
  printf '%-16s %-26s %7s %7s %-10s %7s %8s %3s\n' workload mode wall_s ncu_s passes kernels launches rc
} >"$TABLE"

# The field captures were taken with --nvtx --nvtx-include perfgate/ (tests/workloads/
# capture_field.sh): their sidecar says so, so that the baseline's scope is the captures'.
sidecar() {
  printf '{"perfgate_capture": 1, "clock_control": "none", "cache_control": "all", "phase": "full", "command": ["ncu", "--nvtx", "--nvtx-include", "perfgate/", "python3"]}\n' >"$1.meta.json"
}

row() {  # workload mode wall rc CAPTURE
  local meta="$5.meta.json" fields="-       -       -"
  if [ -f "$meta" ]; then
    fields=$("$PY" - "$meta" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
per = sorted(set((m.get("passes_per_kernel") or {}).values()))
print(m.get("wall_s", "-"), "/".join(map(str, per)) or "?", m.get("kernels", "-"), m.get("launches", "-"))
PYEOF
)
  fi
  read -r ncu_s passes kernels launches <<<"$fields"
  printf '%-16s %-26s %7s %7s %-10s %7s %8s %3s\n' "$1" "$2" "$3" "$ncu_s" "$passes" "$kernels" "$launches" "$4" | tee -a "$TABLE"
}

capture() {  # workload mode program-workload output phases
  local s rc wall
  s=$(date +%s.%N)
  timeout "$STEP_S" "$PY" -m perfgate capture -b "$WORK/$1.yaml" -o "$4" --phases "$5" \
    --nvtx-include perfgate/ --ncu "$NCU" -- "$PY" "$ROOT/tests/workloads/field.py" "$3" \
    >>"$LOG" 2>&1
  rc=$?
  wall=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s}")
  row "$1" "$2" "$wall" "$rc" "$4"
  if [ -f "${4%.csv}.diagnosis.csv.meta.json" ]; then
    row "$1" "$2 +diagnosis" "-" "$rc" "${4%.csv}.diagnosis.csv"
  fi
  return $rc
}

for w in $WORKLOADS; do
  echo "== $w ($(( $(date +%s) - t0 )) s)" | tee -a "$LOG"
  runs=()
  for i in 1 2 3; do
    src="$ROOT/tests/data/field/h100/h100-a/$w-run$i.csv.gz"
    [ -f "$src" ] || { fail "$w: no $src"; continue 2; }
    gzip -dc "$src" >"$WORK/$w-run$i.csv"; sidecar "$WORK/$w-run$i.csv"
    runs+=(-c "$WORK/$w-run$i.csv")
  done
  "$PY" -m perfgate baseline record "${runs[@]}" -o "$WORK/$w.yaml" >>"$LOG" 2>&1 \
    || { fail "$w: baseline record"; continue; }
  # (a) today's single-phase capture
  capture "$w" full "$w" "$WORK/$w-full.csv" full || fail "$w: full capture"
  case "$GPU" in
    *H100*) ;;
    *) echo "$w: ${GPU:-this GPU} is no H100: baseline re-recorded from (a)" | tee -a "$TABLE"
       "$PY" -m perfgate baseline record -c "$WORK/$w-full.csv" -o "$WORK/$w.yaml" --overwrite \
         >>"$LOG" 2>&1 || { fail "$w: baseline record from (a)"; continue; } ;;
  esac
  # (b) the gate capture of the unchanged build, and its check
  if capture "$w" gate "$w" "$WORK/$w-gate.csv" gate; then
    "$PY" -m perfgate check -b "$WORK/$w.yaml" -c "$WORK/$w-gate.csv" >"$WORK/$w-gate.check" 2>&1
    rc=$?; head -1 "$WORK/$w-gate.check" | tee -a "$LOG"
    [ $rc = 0 ] || { cat "$WORK/$w-gate.check" >>"$LOG"; fail "$w: gate check of the unchanged build exited $rc"; }
  else
    fail "$w: gate capture"
  fi
  # (c) a regressed build: gate capture, failing check, diagnosis capture, check of the pair
  r=${REGRESSED[$w]:-}
  if [ -z "$r" ]; then
    echo "$w: no regressed variant in tests/workloads/field.py: (c) not run" | tee -a "$TABLE"
    continue
  fi
  capture "$w" "auto ($r)" "$r" "$WORK/$w-regressed.csv" auto || fail "$w: auto capture of $r"
  [ -f "$WORK/$w-regressed.diagnosis.csv" ] || fail "$w: no diagnosis capture of $r"
  # The pair as written, for a look at what the check merged (KEEP=1).
  if [ -n "${KEEP:-}" ]; then
    tar czf "$OUT/$w-regressed.tar.gz" -C "$WORK" "$w-regressed.csv" "$w-regressed.csv.meta.json" \
      "$w-regressed.diagnosis.csv" "$w-regressed.diagnosis.csv.meta.json" 2>>"$LOG"
  fi
  "$PY" -m perfgate check -b "$WORK/$w.yaml" -c "$WORK/$w-regressed.csv" \
    >"$OUT/check-$w-regressed.txt" 2>&1
  rc=$?
  [ $rc = 1 ] || fail "$w: check of the regressed build exited $rc, not 1"
done
echo "total $(( $(date +%s) - t0 )) s, failed steps: $fails" | tee -a "$TABLE"
[ "$fails" = 0 ]
