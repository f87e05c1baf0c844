#!/usr/bin/env bash
# Captures the field corpus (tests/workloads/field.py) on one machine start, with real ncu and
# perfgate's whole metric list (tests/workloads/metrics.txt), every run a separate ncu process.
# Each capture is ncu's stdout as written (program output and ==PROF== lines included).
#
#   START=h100-a RUNS="1 2 3" bash tests/workloads/capture_field.sh
#   START=h100-b RUNS="1 2" DEADLINE=500 WORKLOADS="gemms reductions" bash ...
#   START=h100-g1 PHASE=gate BASELINES=.gatebase/h100 bash ...    # gate captures (issue 24)
#   START=fam-a SCRIPT=families.py RANGE=perfgate WORKLOADS="moe cub" PLAIN="moe cub" bash ...
#
# SCRIPT: the workload script beside this one (field.py; families.py for issue 33's families,
# which open a process-wide NVTX start/end range, so RANGE=perfgate with no trailing slash).
# PLAIN: the workloads run once without ncu first, on a fresh start (default: the compile-*
# ones, to fill Inductor's cache); a workload whose plain run fails is not captured.
#
# PHASE=gate captures each run with `perfgate capture --phases gate --all-kernels` instead: the
# one-pass gate set of the baseline $BASELINES/<workload>.yaml (recorded from the start that
# holds the full captures: only its metric list is used), as a two-phase CI job would; the CSV
# is then ncu's raw page imported from its report, with perfgate's sidecar (.meta.json) and
# ncu's log (.log) beside it. Needs perfgate importable (PYTHONPATH) and its dependencies.
#
# Files: $DEST/$START/<workload>-run<N>.csv, env.txt, timings.txt, plain-*.txt (one run without
# ncu of the torch.compile workloads, which fills Inductor's cache for this machine start, as a
# CI runner's cache would be). Runs go round by round (every workload's run 1, then run 2, ...),
# so a deadline cuts whole rounds short, not one workload. DEADLINE=SECONDS: no ncu run starts
# after it. With OUT set (the device tool), $DEST/$START is tarred to $OUT/$START.tar.gz after
# every run. Clocks are never touched: every ncu call passes --clock-control none.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
START_NAME=${START:?set START to the machine start\'s name, e.g. h100-a}
DEST=${DEST:-/tmp/field}/$START_NAME
RUNS=${RUNS:-1 2 3}
WORKLOADS=${WORKLOADS:-hf-decoder hf-encoder cnn-fp32 cnn-tf32 cnn-bf16-cl compile-default compile-max-autotune cuda-graph gemms reductions triton-autotune}
NCU=${NCU:-ncu}
PY=${PY:-python3}
PHASE=${PHASE:-full}
SCRIPT=${SCRIPT:-field.py}
RANGE=${RANGE:-perfgate/}
case $PHASE in full) ;; gate) : "${BASELINES:?PHASE=gate needs BASELINES, a folder of <workload>.yaml}" ;;
  *) echo "PHASE must be full or gate" >&2; exit 2 ;; esac
mkdir -p "$DEST"
METRICS=$(grep -v '^#' "$HERE/metrics.txt" | paste -sd, -)
TIMINGS=$DEST/timings.txt
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/perfgate-inductor-cache
T0=$(date +%s)

elapsed() { echo $(($(date +%s) - T0)); }
archive() {
  if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/$START_NAME.tar.gz.tmp" -C "$(dirname "$DEST")" "$START_NAME" &&
      mv "$OUT/$START_NAME.tar.gz.tmp" "$OUT/$START_NAME.tar.gz"
  fi
}
log() { printf '%-36s rc=%-3s %6ss  %s\n' "$1" "$2" "$3" "$4" | tee -a "$TIMINGS"; }

if [ ! -f "$DEST/env.txt" ]; then
  {
    echo "# environment of machine start $START_NAME"; date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    "$NCU" --version
    $PY -c 'import torch, triton, transformers, torchvision; print("torch", torch.__version__, "triton", triton.__version__, "cudnn", torch.backends.cudnn.version(), "transformers", transformers.__version__, "torchvision", torchvision.__version__)' 2>&1
    [ "$SCRIPT" = field.py ] || $PY -c 'import jax, cupy, timm; print("jax", jax.__version__, "cupy", cupy.__version__, "timm", timm.__version__)' 2>&1
    uname -r; nproc
  } >"$DEST/env.txt" 2>&1
  if [ "$PHASE" = gate ]; then echo "baselines: $BASELINES" >>"$DEST/env.txt"; else cp "$HERE/metrics.txt" "$DEST/metrics.txt"; fi
  for w in ${PLAIN-$(printf '%s\n' $WORKLOADS | grep '^compile-')}; do
    # One at a time: two autotuning processes on one GPU time each other's kernels
    # (h100-a to h100-d warmed both at once).
    s=$(date +%s); timeout "${PLAIN_TIMEOUT:-400}" $PY "$HERE/$SCRIPT" "$w" >"$DEST/plain-$w.txt" 2>&1
    rc=$?
    log "plain-$w.txt" $rc $(($(date +%s) - s)) "(plain run, no ncu: fills Inductor's cache; $(find /tmp/perfgate-inductor-cache -name '*.best_config' 2>/dev/null | wc -l) best_config files)"
    [ $rc = 0 ] || echo "$w" >>"$DEST/failed-plain.txt"
  done
  archive
fi

for r in $RUNS; do
  for w in $WORKLOADS; do
    name=$w-run$r.csv
    [ -s "$DEST/$name" ] && continue  # a second call on the same machine start resumes
    grep -qx "$w" "$DEST/failed-plain.txt" 2>/dev/null && continue
    if [ -n "${DEADLINE:-}" ] && [ "$(elapsed)" -gt "$DEADLINE" ]; then
      log "$name" - 0 "skipped: past DEADLINE=$DEADLINE s"; continue
    fi
    s=$(date +%s)
    if [ "$PHASE" = gate ]; then
      timeout 200 $PY -m perfgate capture --ncu "$NCU" -b "$BASELINES/$w.yaml" --phases gate \
        --all-kernels --nvtx-include "$RANGE" -o "$DEST/$name" -- $PY "$HERE/$SCRIPT" "$w" \
        >"$DEST/$name.stderr" 2>&1
      log "$name" $? $(($(date +%s) - s)) "perfgate capture -b \$BASELINES/$w.yaml --phases gate --all-kernels --nvtx-include perfgate/ -- $PY field.py $w"
      grep -q . "$DEST/$name.stderr" || rm -f "$DEST/$name.stderr"
      archive; continue
    fi
    timeout 200 "$NCU" --clock-control none --csv --page raw --metrics "$METRICS" \
      --nvtx --nvtx-include "$RANGE" $PY "$HERE/$SCRIPT" "$w" >"$DEST/$name" 2>"$DEST/$name.stderr"
    log "$name" $? $(($(date +%s) - s)) "ncu --clock-control none --csv --page raw --metrics \$METRICS --nvtx --nvtx-include $RANGE $PY $SCRIPT $w"
    [ -s "$DEST/$name.stderr" ] || rm -f "$DEST/$name.stderr"
    archive
  done
done
echo "done at $(elapsed) s" | tee -a "$TIMINGS"
archive
