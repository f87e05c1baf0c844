#!/usr/bin/env bash
# Replay passes of candidate gate sets (passes/candidates.txt: NAME METRICS, "+..." adds to S1)
# on one launch of the zoo's first kernel, and wall time of the decoder under the chosen set.
set -u
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd); OUTD=${OUTD:-/tmp/cand}; mkdir -p "$OUTD"
[ -x "$OUTD/zoo" ] || nvcc -O3 -arch=sm_90 -o "$OUTD/zoo" "$ROOT/tests/zoo/zoo.cu" || exit 1
base=""
while read -r name list; do
  case $list in +*) list="$base,${list#+}" ;; *) base=$list ;; esac
  p=$(ncu --clock-control none --metrics "$list" -c 1 "$OUTD/zoo" 2>&1 | grep -oE ' - [0-9]+ pass' | grep -oE '[0-9]+' | head -1)
  echo "$name passes=$p metrics=$(echo "$list" | tr , '\n' | wc -l)"
done < "$HERE/passes/candidates.txt"
