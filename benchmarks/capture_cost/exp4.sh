#!/usr/bin/env bash
# Device run 4 (helper 13): a PyTorch workload through perfgate capture vs --set full (names
# with lambdas and the anonymous namespace through the kernel filter), doctor's sanity capture,
# and the GPU tests of perfgate capture. Run from the repo root; perfgate and the test file
# come from .dev13 (the device runs a copy of main).
set -u
R=$PWD; D=$R/.dev13; W=/tmp/w4; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
# On the lent device (a copy of main), the branch under test travels in .dev13/.
if [ -d "$D/perfgate" ]; then rm -rf perfgate && cp -r $D/perfgate perfgate && cp $D/tests_gpu/*.py tests/gpu/; fi
export PYTHONPATH=/tmp/site:$R PYTHONUNBUFFERED=1
PG="python3 -m perfgate"
T() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "TIME $(awk "BEGIN{print $(date +%s.%N)-$s}") rc=$rc :: $*" | cut -c1-220 | tee -a $W/times.txt; return $rc; }
H=tests/data/h200/real
$PG baseline record -c $H/torch-flash-run1.csv -c $H/torch-flash-run2.csv -c $H/torch-flash-run3.csv -o $W/torch.yaml
TM="python3 tests/workloads/torch_model.py --attention flash"
T $TM > /dev/null
T $PG capture -b $W/torch.yaml --nvtx-include perfgate/ -o $W/torch-capture.csv -- $TM 2> $W/torch-capture.stderr
T ncu --clock-control none --csv --page raw --set full --nvtx --nvtx-include perfgate/ $TM > $W/torch-full.csv 2> $W/torch-full.stderr
T $PG check -b $W/torch.yaml -c $W/torch-capture.csv > $W/check-torch.txt
cat $W/check-torch.txt | head -20; tail -3 $W/torch-capture.stderr
python3 -c "import json; m=json.load(open('$W/torch-capture.csv.meta.json')); print('passes', sorted(set(m['passes'])), len(m['passes']), 'filter chars', len(m['kernel_filter'] or ''))"
nvcc -O3 -arch=sm_90 -o $W/zoo_good tests/zoo/zoo.cu
$PG baseline record -c $H/start2-zoo-good-run1.csv -o $W/zoo.yaml
T $PG doctor -b $W/zoo.yaml -- $W/zoo_good > $W/doctor-sanity.txt 2>&1; cat $W/doctor-sanity.txt
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_capture_live.py 2>&1 | tee $W/pytest-gpu.txt | tail -8
rm -f $W/zoo_good; gzip -9n $W/torch-full.csv
tar czf $OUT/w4.tar.gz -C /tmp w4
cat $W/times.txt
