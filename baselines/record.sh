#!/usr/bin/env bash
# Re-records the example baselines from the bundled captures (tests/data/h100). Run it after a
# change to the metric catalog; tests/baseline/test_baseline.py fails while they are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
D=tests/data/h100
python3 -m perfgate baseline record -c $D/zoo-good-short-run1.csv -c $D/zoo-good-short-run2.csv -c $D/zoo-good-short-run3.csv \
  -o baselines/h100/zoo.yaml --overwrite --reason "zoo good build, 3 separate ncu runs (tests/zoo/capture.sh)"
python3 -m perfgate baseline record -c $D/zoo-good-full-run1.csv.gz -c $D/zoo-good-full-run2.csv.gz -c $D/zoo-good-full-run3.csv.gz \
  -o baselines/h100/zoo-full.yaml --overwrite --reason "zoo good build, --set full, 3 separate ncu runs"
python3 -m perfgate baseline record -c $D/torch-short-run1.csv -c $D/torch-short-run2.csv -c $D/torch-short-run3.csv \
  -o baselines/h100/torch.yaml --overwrite --reason "PyTorch workload (tests/zoo/torch_workload.py), 3 separate ncu runs"
