#!/usr/bin/env bash
# Moved into perfgate: `perfgate pre-merge` (docs/ci.md, "Before you merge") ships with every
# install. This forwards to it, for a clone whose scripts still call scripts/pre-merge.sh:
#
#   scripts/pre-merge.sh --baseline baselines/h100/torch.yaml -- python3 bench.py --steps 3
#
# Environment: PERFGATE (the perfgate command; default: perfgate on PATH, else python3 -m
# perfgate).
set -euo pipefail
if [ -n "${PERFGATE:-}" ]; then
  read -r -a perfgate <<<"$PERFGATE"
elif command -v perfgate >/dev/null 2>&1; then
  perfgate=(perfgate)
else
  perfgate=(python3 -m perfgate)
fi
exec "${perfgate[@]}" pre-merge "$@"
