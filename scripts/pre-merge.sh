#!/usr/bin/env bash
# Before you merge, on a machine with the GPU the baseline was recorded on: capture your
# program with perfgate capture and gate it, with the reports CI would write.
#
#   scripts/pre-merge.sh --baseline baselines/h100/torch.yaml -- python3 bench.py --steps 3
#   scripts/pre-merge.sh --baseline baselines/h100/zoo.yaml --capture existing.csv
#
# Options: --baseline PATH (required; a file or a directory of per-GPU baselines), --capture
# FILE (gate this capture instead of making one; repeatable), --out DIR (reports; default
# perfgate-report), --warn-only. Environment: PERFGATE (the perfgate command; default:
# perfgate on PATH, else python3 -m perfgate). Exits as perfgate check does: 0 pass, 1 the gate
# failed, 2 unusable input.
set -euo pipefail

usage() {  # usage CODE: to stdout when asked for (--help, exit 0), to stderr after a mistake
  if [ "$1" -eq 0 ]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  else
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  fi
  exit "$1"
}

baseline=""
out="perfgate-report"
captures=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) baseline="${2:?--baseline needs a path}"; shift 2 ;;
    --capture) captures+=("${2:?--capture needs a file}"); shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --warn-only) extra+=(--warn-only); shift ;;
    --) shift; break ;;
    -h|--help) usage 0 ;;
    *) echo "pre-merge: unknown option $1" >&2; usage 2 ;;
  esac
done
[ -n "$baseline" ] || { echo "pre-merge: --baseline is required" >&2; usage 2; }

if [ -n "${PERFGATE:-}" ]; then
  read -r -a perfgate <<<"$PERFGATE"
elif command -v perfgate >/dev/null 2>&1; then
  perfgate=(perfgate)
else
  perfgate=(python3 -m perfgate)
fi

mkdir -p "$out"
if [ ${#captures[@]} -eq 0 ]; then
  [ $# -gt 0 ] || { echo "pre-merge: give a program to capture after --, or --capture FILE" >&2; usage 2; }
  "${perfgate[@]}" capture --baseline "$baseline" -o "$out/capture.csv" -- "$@"
  captures=("$out/capture.csv")
fi

args=()
for capture in "${captures[@]}"; do
  args+=(--capture "$capture")
done
status=0
"${perfgate[@]}" check --baseline "$baseline" "${args[@]}" \
  --junit "$out/junit.xml" --markdown "$out/summary.md" --json "$out/result.json" \
  ${extra[@]+"${extra[@]}"} || status=$?
echo "pre-merge: reports in $out/ (summary.md, junit.xml, result.json)" >&2
exit "$status"
