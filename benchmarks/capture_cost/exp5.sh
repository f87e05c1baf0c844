#!/usr/bin/env bash
# Device run 5 (helper 13): after the kernel filter moved to ncu's function base, the PyTorch
# and Triton workloads captured and checked again, and the GPU tests. Run from the repo root;
# perfgate and the test file come from .dev13 (the device runs a copy of main).
set -u
R=$PWD; D=$R/.dev13; W=/tmp/w5; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
# On the lent device (a copy of main), the branch under test travels in .dev13/.
if [ -d "$D/perfgate" ]; then rm -rf perfgate && cp -r $D/perfgate perfgate && cp $D/tests_gpu/*.py tests/gpu/; fi
export PYTHONPATH=/tmp/site:$R PYTHONUNBUFFERED=1
PG="python3 -m perfgate"
T() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "TIME $(awk "BEGIN{print $(date +%s.%N)-$s}") rc=$rc :: $*" | cut -c1-220 | tee -a $W/times.txt; return $rc; }
H=tests/data/h200/real
$PG baseline record -c $H/torch-flash-run1.csv -c $H/torch-flash-run2.csv -c $H/torch-flash-run3.csv -o $W/torch.yaml
$PG baseline record -c $H/start2-triton-good-run1.csv -c $H/start2-triton-good-run2.csv -c $H/start2-triton-good-run3.csv -o $W/triton.yaml
TM="python3 tests/workloads/torch_model.py --attention flash"
T $TM > /dev/null
T $PG capture -b $W/torch.yaml --nvtx-include perfgate/ -o $W/torch-capture.csv -- $TM 2> $W/torch-capture.stderr
T $PG capture -b $W/torch.yaml --nvtx-include perfgate/ -o $W/torch-capture-2.csv -- $TM 2> $W/torch-capture-2.stderr
T $PG check -b $W/torch.yaml -c $W/torch-capture.csv > $W/check-torch.txt; head -12 $W/check-torch.txt
TR="python3 tests/workloads/triton_kernels.py --variant good"
T $PG capture -b $W/triton.yaml --nvtx-include perfgate/ -o $W/triton-capture.csv -- $TR 2> $W/triton-capture.stderr
T $PG check -b $W/triton.yaml -c $W/triton-capture.csv > $W/check-triton.txt; head -3 $W/check-triton.txt
for f in torch-capture torch-capture-2 triton-capture; do python3 -c "import json; m=json.load(open('$W/$f.csv.meta.json')); print('$f', 'passes', sorted(set(m['passes'])), 'launches', len(m['passes']), 'filter', m['kernel_filter'])"; done
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_capture_live.py 2>&1 | tee $W/pytest-gpu.txt | tail -4
tar czf $OUT/w5.tar.gz -C /tmp w5
cat $W/times.txt
