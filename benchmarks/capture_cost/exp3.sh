#!/usr/bin/env bash
# Device run 3 (helper 13): perfgate capture vs --set full (passes, wall), error texts,
# doctor, GPU tests. Run from the repo root with .dev13 carried.
# Every command that must succeed runs under `ok`, each one that must fail (the error texts)
# under `bad`; the script exits 1 and names them when any did otherwise, 2 when a tool is missing.
set -u -o pipefail
R=$PWD; D=$R/.dev13; W=${W:-/tmp/w3}; mkdir -p "$W"
: "${OUT:?exp3.sh: error: set OUT to the folder for the results}"
exec 3>&2
failed=0
ok() { "$@"; local rc=$?; [ $rc -eq 0 ] || { echo "exp3.sh: FAILED (exit $rc): $*" | cut -c1-220 >&3; failed=$((failed + 1)); }; }
bad() { if "$@"; then echo "exp3.sh: expected to fail, succeeded: $*" | cut -c1-220 >&3; failed=$((failed + 1)); fi; }
for tool in nvcc ncu nvidia-smi python3; do
  command -v $tool >/dev/null || { echo "exp3.sh: error: $tool not found on PATH: run this on the device machine" >&2; exit 2; }
done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
# On the lent device (a copy of main), the branch under test travels in .dev13/.
if [ -d "$D/perfgate" ]; then rm -rf perfgate && cp -r $D/perfgate perfgate && cp $D/tests_gpu/*.py tests/gpu/; fi
export PYTHONPATH=/tmp/site:$R PYTHONUNBUFFERED=1
PG="python3 -m perfgate"
T() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "TIME $(awk "BEGIN{print $(date +%s.%N)-$s}") rc=$rc :: $*" | cut -c1-220 | tee -a $W/times.txt; return $rc; }
nvcc -O3 -arch=sm_90 -o $W/zoo_good tests/zoo/zoo.cu && nvcc -O3 -arch=sm_90 -DPERFGATE_REGRESSED -o $W/zoo_bad tests/zoo/zoo.cu \
  || { echo "exp3.sh: error: nvcc could not build tests/zoo/zoo.cu" >&2; exit 1; }
ok $PG baseline record -c tests/data/h200/real/start2-zoo-good-run1.csv -c tests/data/h200/real/start2-zoo-good-run2.csv -c tests/data/h200/real/start2-zoo-good-run3.csv -o $W/zoo.yaml
ok $PG baseline record -c tests/data/h200/real/start2-triton-good-run1.csv -c tests/data/h200/real/start2-triton-good-run2.csv -c tests/data/h200/real/start2-triton-good-run3.csv -o $W/triton.yaml
ok $PG capture -b $W/zoo.yaml --dry-run -o $W/x.csv -- $W/zoo_good > $W/dry.txt
ok T $W/zoo_good > /dev/null
ok T $PG capture -b $W/zoo.yaml -o $W/zoo-capture-1.csv -- $W/zoo_good 2> $W/zoo-capture-1.stderr
ok T $PG capture -b $W/zoo.yaml -o $W/zoo-capture-2.csv -- $W/zoo_good 2> $W/zoo-capture-2.stderr
ok T ncu --clock-control none --csv --page raw --set full $W/zoo_good > $W/zoo-full.csv 2>$W/zoo-full.stderr
ok T $PG check -b $W/zoo.yaml -c $W/zoo-capture-1.csv > $W/check-good.txt
ok T $PG capture -b $W/zoo.yaml -o $W/zoo-bad-capture.csv -- $W/zoo_bad 2> $W/zoo-bad-capture.stderr
bad T $PG check -b $W/zoo.yaml -c $W/zoo-bad-capture.csv > $W/check-bad.txt
TR="python3 tests/workloads/triton_kernels.py --variant good"
ok T python3 tests/workloads/triton_kernels.py --variant good > /dev/null
ok T $PG capture -b $W/triton.yaml --nvtx-include perfgate/ --keep-report -o $W/triton-capture.csv -- $TR 2> $W/triton-capture.stderr
ok T ncu --clock-control none --csv --page raw --set full --nvtx --nvtx-include perfgate/ $TR > $W/triton-full.csv 2>$W/triton-full.stderr
ok T ncu --clock-control none --set full --nvtx --nvtx-include perfgate/ -f -o $W/triton-full $TR > $W/triton-full-o.stdout 2>&1
ok T $PG check -b $W/triton.yaml -c $W/triton-capture.csv > $W/check-triton.txt
ok ncu --import $W/triton-capture.csv.ncu-rep --csv --page raw --print-units base --nvtx > $W/import-nvtx.csv 2> $W/import-nvtx.stderr
head -c 400 $W/triton-capture.csv; echo; head -c 400 $W/import-nvtx.csv; echo
# error texts through perfgate capture
bad T $PG capture -b $W/zoo.yaml --all-kernels -k '^nothing$' -o $W/e-nokernels.csv -- $W/zoo_good 2> $W/e-nokernels.stderr
bad T $PG capture -b $W/zoo.yaml -o $W/e-exit3.csv -- $W/zoo_good --fail 2> $W/e-exit3.stderr
ok python3 - "$W" <<'PY'
import sys, yaml
w = sys.argv[1]
d = yaml.safe_load(open(f"{w}/zoo.yaml"))
d["kernels"][0]["metrics"]["fb__bytes_read.sum"] = {"value": 1}
yaml.safe_dump(d, open(f"{w}/odd.yaml", "w"))
d["kernels"] = [{"id": "any", "match": {"regex": "elementwise|reduce"}, "metrics": {"duration": {"value": 1000}}}]
yaml.safe_dump(d, open(f"{w}/any.yaml", "w"))
PY
bad T $PG capture -b $W/odd.yaml -o $W/e-dropped.csv -- $W/zoo_good 2> $W/e-dropped.stderr
bad T $PG capture -b $W/any.yaml -o $W/e-abort.csv -- python3 -c "import os, sys, torch; x = torch.ones(1 << 20, device='cuda'); (x * 2).sum().item(); print('args', sys.argv[1:], flush=True); os.abort()" "a b" "it's \"q\"" '$HOME;ls' 2> $W/e-abort.stderr
ok T $PG doctor > $W/doctor-plain.txt 2>&1
ok T $PG doctor -b $W/zoo.yaml -- $W/zoo_good > $W/doctor-sanity.txt 2>&1
nvidia-smi --query-gpu=name,compute_cap,driver_version,mig.mode.current --format=csv,noheader > $W/smi.txt; cat /proc/driver/nvidia/params > $W/nvidia-params.txt 2>&1; grep Cap /proc/self/status > $W/proc-status.txt
for f in $W/*.stderr $W/check-*.txt $W/doctor-*.txt $W/dry.txt; do echo "=== $f"; cut -c1-400 $f | tail -25; done
grep -h "passes" $W/triton-full-o.stdout | head -3
cat $W/times.txt
# GPU tests
ok timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_capture_live.py > $W/gpu-tests.txt 2>&1
tail -15 $W/gpu-tests.txt
rm -f $W/zoo_good $W/zoo_bad $W/*.ncu-rep $W/*.csv.ncu-rep
ok tar czf "$OUT/w3.tar.gz" -C "$(dirname "$W")" "$(basename "$W")"
if [ $failed -ne 0 ]; then echo "exp3.sh: $failed command(s) did not do what they should (above)" >&2; exit 1; fi
