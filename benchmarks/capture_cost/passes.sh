#!/usr/bin/env bash
# Replay passes and wall time of ncu per metric and per metric set (issue 24), on the device:
#   OUTD=/tmp/passes bash benchmarks/capture_cost/passes.sh per-metric   # every metric alone
#   OUTD=/tmp/passes WORKLOADS="hf-decoder cnn-tf32 triton-autotune" bash ... sets
# per-metric: each raw metric of tests/workloads/metrics.txt alone on one launch of the zoo's
# first kernel; ncu's progress line ("- N passes") gives the passes. sets: each workload of
# tests/workloads/field.py under the gate list, perfgate's whole list (what `perfgate capture`
# asks for today) and --set full, with wall time, passes per kernel and the capture kept.
# Clocks are never touched (--clock-control none); cache control is ncu's default (all).
set -u
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
OUTD=${OUTD:-/tmp/passes}; mkdir -p "$OUTD"; NCU=${NCU:-ncu}; PY=${PY:-python3}
fails=0
passes_of() { grep -oE ' - [0-9]+ pass(es)?' "$1" | grep -oE '[0-9]+' | sort -n | uniq -c | awk '{printf "%s%sx%s", s, $2, $1; s=" "}'; }
case ${1:-} in
per-metric)
  nvcc -O3 -arch=sm_90 -o "$OUTD/zoo" "$ROOT/tests/zoo/zoo.cu" || exit 1
  for m in $(grep -v '^#' "$ROOT/tests/workloads/metrics.txt"); do
    "$NCU" --clock-control none --metrics "$m" -c 1 "$OUTD/zoo" >"$OUTD/one.txt" 2>&1 || fails=$((fails + 1))
    echo "$m $(passes_of "$OUTD/one.txt")" | tee -a "$OUTD/per-metric.txt"
  done
  for list in gate perfgate; do
    "$NCU" --clock-control none --metrics "$(paste -sd, "$HERE/passes/$list-list.txt")" -c 1 "$OUTD/zoo" >"$OUTD/one.txt" 2>&1 || fails=$((fails + 1))
    echo "LIST:$list $(passes_of "$OUTD/one.txt")" | tee -a "$OUTD/per-metric.txt"
  done ;;
sets)
  for w in ${WORKLOADS:-hf-decoder cnn-tf32 triton-autotune}; do
    for set in gate perfgate full; do
      if [ $set = full ]; then what=(--set full); else what=(--metrics "$(paste -sd, "$HERE/passes/$set-list.txt")"); fi
      s=$(date +%s.%N)
      timeout 300 "$NCU" --clock-control none --csv --page raw "${what[@]}" --nvtx --nvtx-include "perfgate/" \
        $PY "$ROOT/tests/workloads/field.py" "$w" >"$OUTD/$w-$set.csv" 2>"$OUTD/$w-$set.stderr"
      rc=$?; [ $rc = 0 ] || fails=$((fails + 1))
      wall=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s}")
      echo "$w $set rc=$rc wall=${wall}s passes=[$(passes_of "$OUTD/$w-$set.csv")] kernels=$(grep -c ' passes\?$\| pass$' "$OUTD/$w-$set.csv")" | tee -a "$OUTD/sets.txt"
    done
  done ;;
*) echo "usage: passes.sh per-metric|sets" >&2; exit 2 ;;
esac
echo "failed ncu calls: $fails" | tee -a "$OUTD/summary.txt"
[ "$fails" = 0 ]
