#!/usr/bin/env bash
# The .ncu-rep part of benchmarks/scale.py, on a GPU machine: capture a report of N launches
# (perfgate's metric list), export it to CSV, record a baseline from the export, then time
# perfgate check on the report against a bare ncu_report load of every metric.
#   bash benchmarks/rep_on_device.sh 1000 /tmp/rep-bench
set -eu
N=${1:-1000}
W=${2:-/tmp/rep-bench}
mkdir -p "$W"
nvcc -O3 -arch=sm_90 -o "$W/many_launches" benchmarks/many_launches.cu
EXTRAS=$(dirname "$(find / -name ncu_report.py -path '*extras/python*' 2>/dev/null | head -1)")
export PYTHONPATH="$EXTRAS:${PYTHONPATH:-}"
start=$(date +%s)
timeout 420 ncu --clock-control none --metrics "$(python3 -m perfgate metrics --ncu)" -f -o "$W/many" "$W/many_launches" "$N" > "$W/ncu.log" 2>&1
echo "ncu: $(( $(date +%s) - start )) s for $N launches; $(du -h "$W/many.ncu-rep" | cut -f1)"
ncu --import "$W/many.ncu-rep" --csv --page raw > "$W/many.csv"
python3 -m perfgate baseline record -c "$W/many.csv" -o "$W/many.yaml" 2>/dev/null
python3 benchmarks/scale.py --launches 0 --rep "$W/many.ncu-rep" --rep-baseline "$W/many.yaml" --repeat 3 --json "$W/rep.json"
# The same launches as the exported CSV, for comparison.
python3 - "$W" <<'PY'
import json, subprocess, sys, time, statistics
w = sys.argv[1]
times = []
for _ in range(3):
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "perfgate", "check", "-b", f"{w}/many.yaml", "-c", f"{w}/many.csv", "--no-new-kernels"], capture_output=True)
    times.append(time.perf_counter() - t)
print(f"perfgate check on the CSV export of the same report: {statistics.median(times):.2f} s (whole process)")
PY
