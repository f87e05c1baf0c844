#!/usr/bin/env bash
# Capture cost on a larger program (issue 24): the transformers decoder at 5 layers
# (tests/workloads/field.py hf-decoder-5l), timed without ncu, under perfgate capture --phases
# full and --phases gate, against a baseline from the 1-layer h100-a runs (its kernel names are
# the same). Writes $OUT/deep.txt. Carry .whl (jsonschema, junit-xml: docs/capture.md).
set -u; OUT=${OUT:-/tmp/deep}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 3
W=/tmp/w; mkdir -p $W; export PYTHONUNBUFFERED=1
python3 -m perfgate baseline record -c tests/data/field/h100/h100-a/hf-decoder-run1.csv.gz -c tests/data/field/h100/h100-a/hf-decoder-run2.csv.gz -c tests/data/field/h100/h100-a/hf-decoder-run3.csv.gz -o $W/b.yaml > /dev/null 2>&1 || exit 4
fails=0
T() { local s=$(date +%s.%N); "$@" > $W/last.txt 2>&1; local rc=$?; [ $rc = 0 ] || fails=$((fails + 1)); echo "$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$s}") s rc=$rc :: ${*: -1} $(grep -o 'gate capture:.*\|wrote [^ ]*: [0-9]* launch.*passes per kernel' $W/last.txt | head -1)" | tee -a $OUT/deep.txt; }
T python3 tests/workloads/field.py hf-decoder-5l
for r in 1; do
T python3 -m perfgate capture -b $W/b.yaml --phases full --nvtx-include perfgate/ -o $W/full$r.csv -- python3 tests/workloads/field.py hf-decoder-5l
T python3 -m perfgate capture -b $W/b.yaml --phases gate --nvtx-include perfgate/ -o $W/gate$r.csv -- python3 tests/workloads/field.py hf-decoder-5l
done
for f in $W/full1.csv $W/gate1.csv; do echo "$f $(python3 -c "import json,sys; m=json.load(open('$f.meta.json')); print(m.get('kernels'), m.get('launches'), m.get('wall_s'), sorted(set((m.get('passes_per_kernel') or {}).values())))")" | tee -a $OUT/deep.txt; done
echo "failed steps: $fails" | tee -a "$OUT/deep.txt"
[ "$fails" = 0 ]
