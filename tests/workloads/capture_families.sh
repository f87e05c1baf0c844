#!/usr/bin/env bash
# Captures issue 33's families (tests/workloads/families.py) on one machine start through
# capture_field.sh, with perfgate's whole metric list and a process-wide NVTX range.
#
#   START=fam-a RUNS="1 2 3" bash tests/workloads/capture_families.sh             # baseline start
#   START=fam-b RUNS=1 CHANGES=1 bash tests/workloads/capture_families.sh         # + real changes
#   START=fam-c RUNS=1 bash tests/workloads/capture_families.sh                   # held back
#
# First a probe: ncu with `--nvtx-include perfgate` (a start/end range has no trailing slash) on
# the smallest workload must profile its 3 kernels, or nothing else is run. With TRAPS=1 the
# training step is also captured with a push/pop range (what NVTX ranges on one thread miss:
# trap-pushpop.csv) and a no-replay census of every kernel the program launched
# (trap-census.txt: a kernel filter that matches nothing makes ncu list them).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
START_NAME=${START:?set START}
DEST=${DEST:-/tmp/field}/$START_NAME
NCU=${NCU:-ncu}
PY=${PY:-python3}
FAMILIES="nvrtc cub triton-sizes moe train-step vit jax-train"
CHANGE_SET="moe-topk4 train-step-forloop train-step-logging cub-int64 nvrtc-bank-conflicts nvrtc-uncoalesced nvrtc-spills nvrtc-reordered vit-fp32 jax-remat triton-sizes-fp32-out"
mkdir -p "$DEST"
if [ ! -f "$DEST/probe.txt" ]; then
  "$NCU" --clock-control none --csv --page raw --metrics gpu__time_duration.sum --nvtx \
    --nvtx-include perfgate $PY "$HERE/families.py" nvrtc >"$DEST/probe.txt" 2>&1
  n=$(grep -c '"transpose_tiled\|"copy_vec\|"poly_eval' "$DEST/probe.txt")
  echo "probe: $n kernels profiled in the start/end range" | tee -a "$DEST/probe.txt"
  [ "$n" -ge 3 ] || { echo "probe failed: see probe.txt" >&2; exit 3; }
fi
export START SCRIPT=families.py RANGE=perfgate
WORKLOADS=${WORKLOADS:-$FAMILIES} PLAIN=${PLAIN-$FAMILIES} bash "$HERE/capture_field.sh"
if [ "${CHANGES:-0}" = 1 ]; then
  WORKLOADS="$CHANGE_SET" RUNS=1 bash "$HERE/capture_field.sh"
fi
if [ "${TRAPS:-0}" = 1 ] && [ ! -s "$DEST/trap-census.txt" ]; then
  PERFGATE_RANGE=pushpop timeout 200 "$NCU" --clock-control none --csv --page raw \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum --nvtx --nvtx-include perfgate/ \
    $PY "$HERE/families.py" train-step >"$DEST/trap-pushpop.csv" 2>&1
  timeout 200 "$NCU" --clock-control none --kernel-name regex:'^perfgate-matches-nothing$' \
    $PY "$HERE/families.py" train-step >"$DEST/trap-census.txt" 2>&1
  if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/$START_NAME.tar.gz" -C "$(dirname "$DEST")" "$START_NAME"
  fi
fi
