#!/usr/bin/env bash
# Reproduces every real capture under tests/data/ on a machine with an NVIDIA Hopper GPU
# (H100/H200), ncu 2025.3 and nvcc. Every file is written exactly as ncu produced it: the
# preamble lines and the number formatting are part of what perfgate must handle.
#
#   bash tests/zoo/capture.sh                 # all phases, files under ./zoo-captures/
#   PHASES="build short" bash tests/zoo/capture.sh
#   DEST=/some/dir RUNS=3 bash tests/zoo/capture.sh
#
# Phases: build short forms odd torch full torchfull pack (each needs "build" first, in the same
# DEST). FIRST_RUN=N starts the full phase's run numbers at N. DEADLINE=SECONDS skips the phases that would start after it. Clocks are never
# touched: every ncu call passes --clock-control none.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${DEST:-$PWD/zoo-captures}
RUNS=${RUNS:-3}
FULL_RUNS=${FULL_RUNS:-$RUNS}
PHASES=${PHASES:-build short forms odd torch full torchfull pack}
NCU=${NCU:-ncu}
BIN=$DEST/bin
mkdir -p "$DEST" "$BIN"
METRICS=$(grep -v '^#' "$HERE/metrics.txt" | paste -sd, -)
COMMON=(--clock-control none --csv --page raw)
TIMINGS=$DEST/timings.txt

stamp() { date +%s.%N; }
# run NAME TIMEOUT CMD...: runs CMD with stdout to NAME and stderr to NAME.stderr, logs time.
run() {
  local name=$1 limit=$2; shift 2
  local t0 rc
  t0=$(stamp)
  timeout "$limit" "$@" >"$DEST/$name" 2>"$DEST/$name.stderr"
  rc=$?
  printf '%-40s rc=%-3s %6.1fs  %s\n' "$name" "$rc" "$(awk "BEGIN{print $(stamp) - $t0}")" "$*" | cut -c1-300 >>"$TIMINGS"
  [ -s "$DEST/$name.stderr" ] || rm -f "$DEST/$name.stderr"
  RUNS_DONE=$((RUNS_DONE + 1))
  # The odd phase records ncu's failures on purpose; anywhere else a failure is a failure.
  if [ "$rc" -ne 0 ] && [ "${EXPECTED_TO_FAIL:-0}" != 1 ]; then
    RUNS_FAILED=$((RUNS_FAILED + 1))
    echo "capture.sh: $name failed (rc=$rc); see $DEST/$name.stderr" >&2
  fi
}
RUNS_DONE=0
RUNS_FAILED=0

START=$(date +%s)
for phase in $PHASES; do
  # DEADLINE (seconds): start no phase after it, so a time-limited session still gets an archive.
  if [ -n "${DEADLINE:-}" ] && [ $(($(date +%s) - START)) -gt "$DEADLINE" ]; then
    echo "== skipping phase $phase: past DEADLINE=$DEADLINE s" | tee -a "$TIMINGS"; continue
  fi
  echo "== phase $phase ($(date -u +%H:%M:%S))"
  EXPECTED_TO_FAIL=0
  case $phase in
  build)
    {
      echo "# environment of the capture run"; date -u
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
      "$NCU" --version; nvcc --version | tail -2
      python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1
      locale -a 2>&1 | head -5
    } >"$DEST/env.txt" 2>&1
    nvcc -O3 -arch=sm_90 -Xptxas -v -o "$BIN/zoo_good" "$HERE/zoo.cu" 2>"$DEST/ptxas-good.txt"
    nvcc -O3 -arch=sm_90 -DPERFGATE_REGRESSED -Xptxas -v -o "$BIN/zoo_bad" "$HERE/zoo.cu" 2>"$DEST/ptxas-bad.txt"
    "$BIN/zoo_good" >"$DEST/zoo-good-plain-run.txt" 2>&1
    ;;
  short)
    for r in $(seq 1 "$RUNS"); do
      for v in good bad; do
        run "zoo-$v-short-run$r.csv" 300 "$NCU" "${COMMON[@]}" --metrics "$METRICS" "$BIN/zoo_$v"
      done
    done
    ;;
  forms)
    # The same short list, written the other ways users produce it.
    run zoo-good-short-logfile.stdout 300 "$NCU" "${COMMON[@]}" --metrics "$METRICS" \
      --log-file "$DEST/zoo-good-short-logfile.csv" "$BIN/zoo_good"
    run zoo-good-short-base-units.csv 300 "$NCU" "${COMMON[@]}" --print-units base \
      --metrics "$METRICS" "$BIN/zoo_good"
    run zoo-good-short-rep.stdout 300 "$NCU" --clock-control none --metrics "$METRICS" \
      -f -o "$DEST/zoo-good-short" "$BIN/zoo_good" --launches 1
    run zoo-good-short-import.csv 120 "$NCU" --import "$DEST/zoo-good-short.ncu-rep" --csv --page raw
    run zoo-good-short-summary.csv 300 "$NCU" "${COMMON[@]}" --print-summary per-kernel \
      --metrics "$METRICS" "$BIN/zoo_good" --launches 2
    run zoo-good-details-page.csv 300 "$NCU" --clock-control none --csv --page details \
      --section SpeedOfLight --section Occupancy -k regex:zoo_ "$BIN/zoo_good" --launches 1
    ;;
  odd)
    EXPECTED_TO_FAIL=1  # ncu's errors and error codes are what this phase records
    run no-kernels-profiled.txt 120 "$NCU" "${COMMON[@]}" --metrics "$METRICS" \
      -k regex:no_such_kernel "$BIN/zoo_good" --launches 1
    run app-error-code.csv 300 "$NCU" "${COMMON[@]}" --metrics "$METRICS" -k regex:zoo_co \
      "$BIN/zoo_good" --launches 1 --fail
    run set-default.csv 120 "$NCU" "${COMMON[@]}" --set default -k regex:zoo_co "$BIN/zoo_good" --launches 1
    run unknown-metric.csv 120 "$NCU" "${COMMON[@]}" \
      --metrics "launch__registers_per_thread,fb__bytes_read.sum,no_such__metric.sum" \
      -k regex:zoo_co "$BIN/zoo_good" --launches 1
    # Counters as an unprivileged user: on a machine that restricts them this gives the real
    # ERR_NVGPUCTRPERM text; where they are open it records that they are.
    chmod 755 "$BIN" "$BIN/zoo_good" "$DEST" 2>/dev/null
    run nonroot-user.csv 120 python3 -c \
      'import os, sys; os.setgid(65534); os.setuid(65534); os.execvp(sys.argv[1], sys.argv[1:])' \
      "$NCU" --clock-control none --csv --page raw --metrics launch__registers_per_thread \
      -k regex:zoo_co "$BIN/zoo_good" --launches 1
    ;;
  torch)
    for r in $(seq 1 "$RUNS"); do
      run "torch-short-run$r.csv" 400 "$NCU" "${COMMON[@]}" --metrics "$METRICS" \
        --nvtx --nvtx-include "perfgate/" python3 "$HERE/torch_workload.py"
    done
    ;;
  full)
    for r in $(seq "${FIRST_RUN:-1}" "$FULL_RUNS"); do
      for v in good bad; do
        run "zoo-$v-full-run$r.csv" 500 "$NCU" "${COMMON[@]}" --set full -k regex:zoo_ \
          "$BIN/zoo_$v" --launches 2
      done
    done
    ;;
  torchfull)
    run torch-full-run1.csv 500 "$NCU" "${COMMON[@]}" --set full --nvtx --nvtx-include "perfgate/" \
      python3 "$HERE/torch_workload.py" --steps 1
    ;;
  pack)
    # The large CSVs are committed gzipped (gzip -9n: no name or time stamp in the header);
    # what is inside is byte for byte what ncu wrote, and perfgate reads .gz directly.
    for f in "$DEST"/*-full-run*.csv "$DEST"/zoo-good-short-summary.csv; do
      [ -f "$f" ] && gzip -9nf "$f"
    done
    ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
  if [ -n "${OUT:-}" ]; then  # device tool: bring everything back as one archive
    tar czf "$OUT/captures.tar.gz" --exclude=bin -C "$(dirname "$DEST")" "$(basename "$DEST")"
  fi
done
cat "$TIMINGS"
if [ "$RUNS_FAILED" -gt 0 ]; then
  echo "capture.sh: $RUNS_FAILED of $RUNS_DONE runs failed" >&2
  exit 1
fi
