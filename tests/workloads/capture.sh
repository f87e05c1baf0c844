#!/usr/bin/env bash
# Captures the workloads of tests/workloads/ with real ncu on a machine with an NVIDIA Hopper GPU
# (H100/H200), ncu 2025.3, nvcc and a python3 that has torch + triton. Every capture is kept
# exactly as ncu wrote it to stdout (program output and ==PROF== lines included).
#
#   bash tests/workloads/capture.sh                       # everything, files under ./workload-captures/
#   DEST=/some/dir RUNS="1 2 3" DEADLINE=480 bash tests/workloads/capture.sh
#   PREFIX=start2- BUILDS="torch-flash compiled-a compiled-b triton-good changes-base zoo-good" \
#     PHASES="build runs pack" bash tests/workloads/capture.sh   # a second machine start
#
# Phases: build (nvcc, env.txt, ptxas reports, one plain run of each Python program to fill the
# JIT caches), runs (RUNS x BUILDS, round by round, each a separate ncu process; runs=2,3 takes
# only those run numbers, so that round 1 and the extras come first), extras (zoo with
# four stall reasons; .ncu-rep files with NCU's rules for the Triton builds), pack (gzip -9n of
# files over 300 KB). DEADLINE=SECONDS: no ncu run starts after it (pack always runs).
# With OUT set (the device tool), everything but bin/ is tarred to $OUT/captures.tar.gz after
# every run, so a run cut off by a time limit still brings back what it made.
# The captures in tests/data/h200/real/ were made with:
#   DEST=/tmp/wc DEADLINE=430 bash tests/workloads/capture.sh            (machine start 1)
#   DEST=/tmp/wc DEADLINE=200 PHASES="runs=3 pack" BUILDS="<the 8 skipped>" ...  (same machine)
#   DEST=/tmp/wc2 PREFIX=start2- PHASES="build runs pack" DEADLINE=420 \
#     BUILDS="torch-flash compiled-a compiled-b triton-good changes-base zoo-good" ...  (start 2)
# Clocks are never touched: every ncu call passes --clock-control none.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEST=${DEST:-$PWD/workload-captures}
RUNS=${RUNS:-1 2 3}
PREFIX=${PREFIX:-}
PHASES=${PHASES:-build runs=1 extras runs=2,3 pack}
BUILDS=${BUILDS:-torch-flash torch-math torch-channels_last torch-redundant compiled-a compiled-b compiled-tail triton-good triton-regressed changes-base changes-changed}
NCU=${NCU:-ncu}
PY=${PY:-python3}
BIN=$DEST/bin
mkdir -p "$DEST" "$BIN"
METRICS=$(grep -v '^#' "$HERE/metrics.txt" | paste -sd, -)
COMMON=(--clock-control none --csv --page raw)
NVTX=(--nvtx --nvtx-include "perfgate/")
TIMINGS=$DEST/timings.txt
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=1 TORCHINDUCTOR_CACHE_DIR=/tmp/perfgate-inductor-cache

START=$(date +%s)
stamp() { date +%s.%N; }
past_deadline() { [ -n "${DEADLINE:-}" ] && [ $(($(date +%s) - START)) -gt "$DEADLINE" ]; }
archive() {  # device tool: bring everything back as one archive
  if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/captures.tar.gz.tmp" --exclude=bin -C "$(dirname "$DEST")" "$(basename "$DEST")" &&
      mv "$OUT/captures.tar.gz.tmp" "$OUT/captures.tar.gz"
  fi
}
# run NAME TIMEOUT CMD...: runs CMD with stdout to NAME and stderr to NAME.stderr, logs time and rc.
run() {
  local name=$1 limit=$2; shift 2
  local t0 rc
  if past_deadline; then
    echo "== skipped $name: past DEADLINE=$DEADLINE s" | tee -a "$TIMINGS"; return
  fi
  t0=$(stamp)
  timeout "$limit" "$@" >"$DEST/$name" 2>"$DEST/$name.stderr"
  rc=$?
  printf '%-40s rc=%-3s %6.1fs  %s\n' "$name" "$rc" "$(awk "BEGIN{print $(stamp) - $t0}")" "$*" |
    sed "s|$METRICS|\$METRICS|" | cut -c1-300 | tee -a "$TIMINGS"
  [ -s "$DEST/$name.stderr" ] || rm -f "$DEST/$name.stderr"
  archive
}
# program BUILD: the command line of one build (after ncu's own options).
program() {
  case $1 in
  torch-flash) echo "${NVTX[*]} $PY $HERE/torch_model.py --attention flash" ;;
  torch-math) echo "${NVTX[*]} $PY $HERE/torch_model.py --attention math" ;;
  torch-channels_last) echo "${NVTX[*]} $PY $HERE/torch_model.py --memory-format channels_last" ;;
  torch-redundant) echo "${NVTX[*]} $PY $HERE/torch_model.py --redundant-add" ;;
  compiled-a) echo "${NVTX[*]} $PY $HERE/compiled_module.py --variant a" ;;
  compiled-b) echo "${NVTX[*]} $PY $HERE/compiled_module.py --variant b" ;;
  compiled-tail) echo "${NVTX[*]} $PY $HERE/compiled_module.py --variant tail" ;;
  triton-good) echo "${NVTX[*]} $PY $HERE/triton_kernels.py --variant good" ;;
  triton-regressed) echo "${NVTX[*]} $PY $HERE/triton_kernels.py --variant regressed" ;;
  changes-base) echo "${NVTX[*]} $BIN/changes_base" ;;
  changes-changed) echo "${NVTX[*]} $BIN/changes_changed" ;;
  zoo-good) echo "$BIN/zoo_good" ;;
  *) echo "unknown build $1" >&2; return 2 ;;
  esac
}

for phase in $PHASES; do
  echo "== phase $phase ($(date -u +%H:%M:%S), $(($(date +%s) - START)) s)"
  case $phase in
  build)
    {
      echo "# environment of the capture run"; date -u
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
      "$NCU" --version; nvcc --version | tail -2
      $PY -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1
      uname -r; nproc
    } >"$DEST/env.txt" 2>&1
    cp "$HERE/metrics.txt" "$DEST/metrics.txt"
    nvcc -O3 -arch=sm_90 -Xptxas -v -o "$BIN/changes_base" "$HERE/changes.cu" 2>"$DEST/${PREFIX}ptxas-changes-base.txt" &
    nvcc -O3 -arch=sm_90 -DCHANGED -Xptxas -v -o "$BIN/changes_changed" "$HERE/changes.cu" 2>"$DEST/${PREFIX}ptxas-changes-changed.txt" &
    nvcc -O3 -arch=sm_90 -o "$BIN/zoo_good" "$ROOT/tests/zoo/zoo.cu" &
    # One plain run of each Python program fills the Triton/Inductor caches, so the ncu runs
    # below time the profiled process, not the JIT. Their output is kept as plain-*.txt.
    for b in $BUILDS; do
      case $b in torch-flash|compiled-*|triton-*)
        args=$(program "$b"); args=${args#"${NVTX[*]} "}
        ( t0=$(stamp); timeout 300 $args >"$DEST/${PREFIX}plain-$b.txt" 2>&1; rc=$?
          printf '%-40s rc=%-3s %6.1fs  (plain run, no ncu)\n' "${PREFIX}plain-$b.txt" "$rc" \
            "$(awk "BEGIN{print $(stamp) - $t0}")" >>"$TIMINGS" ) &
      esac
    done
    wait
    archive
    ;;
  runs|runs=*)
    # "runs" takes every run number in RUNS; "runs=2,3" only those.
    list=$RUNS; [ "$phase" = runs ] || list=${phase#runs=}
    for r in ${list//,/ }; do
      for b in $BUILDS; do
        read -r -a args <<<"$(program "$b")"
        run "$PREFIX$b-run$r.csv" 150 "$NCU" "${COMMON[@]}" --metrics "$METRICS" "${args[@]}"
      done
    done
    ;;
  extras)
    # Four stall reasons of the per_warp_active family only (a partial stall family).
    M4=smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_selected_per_warp_active.pct,launch__registers_per_thread,gpu__time_duration.sum
    run "${PREFIX}zoo-good-4stalls-run1.csv" 150 "$NCU" "${COMMON[@]}" --metrics "$M4" "$BIN/zoo_good"
    # Report files with NCU's rule results (sections, not --metrics alone).
    for v in good regressed; do
      run "${PREFIX}triton-$v-full.stdout" 200 "$NCU" --clock-control none --set full \
        -k regex:"softmax|matmul" "${NVTX[@]}" --launch-count 4 -f -o "$DEST/${PREFIX}triton-$v-full" \
        $PY "$HERE/triton_kernels.py" --variant $v
      rep=$DEST/${PREFIX}triton-$v-full.ncu-rep
      if [ -f "$rep" ] && [ "$(stat -c %s "$rep")" -gt 4200000 ]; then
        mv "$rep" "$DEST/too-large-$v.ncu-rep.discard"
        run "${PREFIX}triton-$v-full.stdout" 200 "$NCU" --clock-control none \
          --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
          --section WarpStateStats --section Occupancy --section LaunchStats --section SourceCounters \
          -k regex:"softmax|matmul" "${NVTX[@]}" --launch-count 4 -f -o "$DEST/${PREFIX}triton-$v-full" \
          $PY "$HERE/triton_kernels.py" --variant $v
        ls -l "$DEST/too-large-$v.ncu-rep.discard" >>"$TIMINGS"; rm -f "$DEST/too-large-$v.ncu-rep.discard"
      fi
    done
    ;;
  pack)
    # gzip -9n (no name or time stamp in the header); the content stays byte for byte as ncu wrote it.
    find "$DEST" -maxdepth 1 -type f -name '*.csv' -size +300k -exec gzip -9nf {} \;
    ls -l "$DEST" >"$DEST/${PREFIX}listing.txt"
    ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
  archive
done
cat "$TIMINGS"
