#!/usr/bin/env bash
# The GitHub Action's install step (action.yml): perfgate in a virtual environment of its own
# under $RUNNER_TEMP, never into the system Python (refused on PEP 668 systems such as Debian 12
# and Ubuntu 24.04) or a persistent self-hosted runner's site-packages. The runner empties
# $RUNNER_TEMP at the start and end of every job. Uses uv when it is on PATH.
#
# Environment: PERFGATE_PYTHON (a Python to use; default python3), PERFGATE_VERSION (a PyPI
# release; default: the action's own checkout), PERFGATE_EXTRAS (e.g. ncu-rep).
# PERFGATE_STEP_SUMMARY ("false": no step summary).
# Writes the step outputs perfgate, python and version; on failure, verdict=error and
# exit-code=2 (the action's outputs), an ::error annotation with the cause (the failing
# command's own error lines) and the cause in the step summary.
set -euo pipefail

fail() {
  # An input is shown as printf '%q' shows it (fail "... $(shown "$input") ..."): a newline in
  # it cannot start a workflow command of its own.
  local message=$1 escaped
  escaped=${message//%/%25}
  escaped=${escaped//$'\r'/%0D}
  escaped=${escaped//$'\n'/%0A}
  echo "::error title=perfgate action::$escaped"
  printf 'verdict=error\nexit-code=2\n' >>"${GITHUB_OUTPUT:-/dev/null}"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [[ ! "${PERFGATE_STEP_SUMMARY:-true}" =~ ^(false|no|off|0)$ ]]; then
    # An indented code block: whatever the message holds is shown as text, never markup.
    {
      printf '### ❌ perfgate: ERROR\n\n> ⚠️ perfgate could not be installed:\n\n'
      printf '%s\n' "$message" | sed 's/^/    /'
    } >>"$GITHUB_STEP_SUMMARY"
  fi
  exit 2
}
# A command that fails where no check above expected it still ends in an annotation.
trap 'fail "the install step failed (line $LINENO: $BASH_COMMAND)"' ERR

# Runs a command with its stderr kept in $errors (and shown in the log); fails with the
# first error lines when the command fails.
errors=""
attempt() {
  local what=$1 log
  shift
  log=$(mktemp)
  if "$@" 2>"$log"; then
    cat "$log" >&2
    rm -f "$log"
    return 0
  fi
  cat "$log" >&2
  errors=$(grep -m5 -iE '^(error|×|  ×|  ╰)' "$log" || head -n5 "$log")
  rm -f "$log"
  rm -rf "$venv"  # nothing half-installed is found by the next run
  fail "could not install ${what}: ${errors:-no error line (see the log above)}"
}

shown() {
  printf '%q' "$1"
}

version="${PERFGATE_VERSION:-}"
extras="${PERFGATE_EXTRAS:-}"
python="${PERFGATE_PYTHON:-python3}"
if [ -n "$extras" ] && ! [[ "$extras" =~ ^[A-Za-z0-9_.,-]+$ ]]; then
  fail "extras: $(shown "$extras") is not a comma-separated list of extra names"
fi
suffix="${extras:+[$extras]}"
if [ -n "$version" ]; then
  # A version number only: the input must not be able to name another package or an option.
  if ! [[ "$version" =~ ^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$ ]]; then
    fail "perfgate-version: $(shown "$version") is not a version number such as 0.2.0"
  fi
  spec="perfgate${suffix}==${version}"
else
  spec="${GITHUB_ACTION_PATH:?}${suffix}"
fi

key=$(printf '%s\n%s\n' "$spec" "$python" | cksum | cut -d' ' -f1)
venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/perfgate-venv-$key"
if [ -x "$venv/bin/perfgate" ]; then
  echo "perfgate already installed in $venv"
elif command -v uv >/dev/null 2>&1; then
  attempt "a virtual environment with $python" uv venv --quiet --python "$python" "$venv"
  attempt "$spec" uv pip install --quiet --python "$venv/bin/python" "$spec"
else
  if ! "$python" -m venv "$venv"; then
    rm -rf "$venv"
    fail "could not create a virtual environment with $(shown "$python"): install python3-venv (Debian, Ubuntu), set the action's python-version input, or put uv on PATH"
  fi
  attempt "$spec" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
fi

if ! installed=$("$venv/bin/perfgate" --version); then
  rm -rf "$venv"
  fail "$spec was installed but \`perfgate --version\` failed (see the log above)"
fi
echo "$installed ($venv)"
{
  echo "perfgate=$venv/bin/perfgate"
  echo "python=$venv/bin/python"
  echo "version=${installed##* }"
} >>"${GITHUB_OUTPUT:-/dev/null}"
