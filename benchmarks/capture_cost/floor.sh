#!/usr/bin/env bash
# Where a gate capture's time goes (issue 24), on the transformers decoder at 5 and 10 layers
# (tests/workloads/field.py hf-decoder-5l / -10l): the program alone; ncu with nothing
# profiled (ncu's start and its interception of every CUDA call); ncu profiling every launch
# of the range with a 0-pass list (launch attributes), a 1-pass time-only list, the gate set,
# the gate set with --cache-control none and with --target-processes application-only; then
# `perfgate capture --phases gate` and `--phases full` (ncu, the report's import, perfgate).
# Each line of $OUT/floor.txt: wall seconds, exit code, step. Steps already in
# /tmp/floor/floor.txt are skipped, so a second call on the same machine start resumes;
# DEADLINE=SECONDS: no step starts after it. ROUNDS=N: only the main lines, N rounds
# interleaved, and the two captures once. Baselines: the h100-a decoder runs (their kernel
# names are the decoder's at any depth). Carry .whl (jsonschema, junit-xml: docs/capture.md).
set -u; OUT=${OUT:-/tmp/floor-out}; mkdir -p "$OUT"; W=/tmp/floor; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 3
export PYTHONUNBUFFERED=1; T0=$(date +%s); fails=0
F=tests/data/field/h100/h100-a
[ -s $W/b.yaml ] || python3 -m perfgate baseline record -c $F/hf-decoder-run1.csv.gz -c $F/hf-decoder-run2.csv.gz -c $F/hf-decoder-run3.csv.gz -o $W/b.yaml >/dev/null 2>&1 || exit 4
# The gate set exactly as perfgate capture asks ncu for it.
GATE=$(python3 -m perfgate capture -b $W/b.yaml --phases gate --dry-run -- true 2>/dev/null | head -1 | tr ' ' '\n' | grep -A1 -x -- --metrics | tail -1)
[ -n "$GATE" ] || exit 5
NCU="ncu --clock-control none --replay-mode kernel --nvtx --nvtx-include perfgate/ --force-overwrite"
step() {  # step NAME COMMAND...
  local name=$1; shift
  grep -q " :: $name\$" $W/floor.txt 2>/dev/null && return
  if [ -n "${DEADLINE:-}" ] && [ $(($(date +%s) - T0)) -gt "$DEADLINE" ]; then echo "skipped $name: past DEADLINE"; return; fi
  local s=$(date +%s.%N); "$@" >$W/last.txt 2>&1; local rc=$?
  [ $rc = 0 ] || { fails=$((fails + 1)); tail -3 $W/last.txt; }
  echo "$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$s}") rc=$rc :: $name" | tee -a $W/floor.txt
  cp $W/floor.txt "$OUT/floor.txt"
}
# prof NAME METRICS [NCU OPTIONS...]: ncu over the program $P; CC= and TP= set the cache control
# and the target processes (default all, all).
prof() {
  local name=$1 metrics=$2; shift 2
  step "$name" $NCU --cache-control "${CC:-all}" --target-processes "${TP:-all}" --metrics "$metrics" "$@" -o $W/r $P
}
# pg LAYERS PHASE: perfgate capture of the program $P.
pg() { step "L$1 perfgate capture --phases $2" python3 -m perfgate capture -b $W/b.yaml --phases "$2" --nvtx-include perfgate/ -o $W/$2$1.csv -- $P; }
CORE=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__inst_executed_pipe_tensor.sum,sm__maximum_warps_per_active_cycle_pct
DRAM=dram__bytes_read.sum,dram__bytes_write.sum
if [ -n "${ROUNDS:-}" ]; then
  # ROUNDS=N: the main lines again, interleaved N times (5 layers), then the two captures once.
  P="python3 tests/workloads/field.py hf-decoder-5l"
  for r in $(seq "$ROUNDS"); do
    step "r$r L5 program alone" $P
    prof "r$r L5 ncu, 0-pass launch attributes" launch__registers_per_thread
    prof "r$r L5 ncu, 1 pass time only" gpu__time_duration.sum
    prof "r$r L5 ncu, $CORE,$DRAM" $CORE,$DRAM
    prof "r$r L5 ncu, gate set" "$GATE"
  done
  pg 5 gate; pg 5 full
  echo "failed steps: $fails"; [ "$fails" = 0 ]; exit
fi
for L in 5 10; do
  P="python3 tests/workloads/field.py hf-decoder-${L}l"
  step "L$L program alone" $P
  if [ $L = 5 ]; then
    prof "L$L ncu, nothing profiled" gpu__time_duration.sum --kernel-name regex:^perfgate_no_such_kernel$
    prof "L$L ncu, 0-pass launch attributes" launch__registers_per_thread
    prof "L$L ncu, 1 pass time only" gpu__time_duration.sum
    prof "L$L ncu, gate set" "$GATE"
    CC=none prof "L$L ncu, gate set, cache-control none" "$GATE"
    TP=application-only prof "L$L ncu, gate set, application-only" "$GATE"
    # Which counters of the gate set cost beyond the time-only pass: time plus one group each.
    for g in $DRAM smsp__inst_executed.sum,smsp__inst_executed_pipe_tensor.sum \
        l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum \
        lts__t_requests_srcunit_tex_op_red.sum,lts__t_requests_srcunit_tex_op_atom.sum sm__maximum_warps_per_active_cycle_pct; do
      prof "L$L ncu, time + $g" gpu__time_duration.sum,$g
    done
    # The gate set without the L1 sector and L2 atomic counters (a baseline that gates neither).
    prof "L$L ncu, $CORE" $CORE
    prof "L$L ncu, $CORE,$DRAM" $CORE,$DRAM
  fi
  pg $L gate; pg $L full
done
for f in $W/gate5.csv $W/full5.csv $W/gate10.csv $W/full10.csv; do
  [ -s $f.meta.json ] && echo "$f $(python3 -c "import json; m=json.load(open('$f.meta.json')); print('kernels', m.get('kernels'), 'launches', m.get('launches'), 'ncu wall_s', m.get('wall_s'), 'passes', sorted(set((m.get('passes_per_kernel') or {}).values())))")" | tee -a "$OUT/floor-meta.txt"
done
echo "failed steps: $fails"
[ "$fails" = 0 ]
