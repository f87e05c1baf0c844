#!/usr/bin/env bash
# The GitHub Action's install step (action.yml): perfgate in a virtual environment of its own
# under $RUNNER_TEMP, never into the system Python (refused on PEP 668 systems such as Debian 12
# and Ubuntu 24.04) or a persistent self-hosted runner's site-packages. The runner empties
# $RUNNER_TEMP at the start and end of every job. Uses uv when it is on PATH.
#
# Environment: PERFGATE_PYTHON (a Python to use; default python3), PERFGATE_VERSION (a PyPI
# release; default: the action's own checkout), PERFGATE_EXTRAS (e.g. ncu-rep).
# Writes the step outputs perfgate, python and version.
set -euo pipefail

fail() {
  # An input is shown as printf '%q' shows it (fail "... $(shown "$input") ..."): a newline in
  # it cannot start a workflow command of its own.
  printf '::error title=perfgate action::%s\n' "$1"
  exit 2
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
  uv venv --quiet --python "$python" "$venv"
  uv pip install --quiet --python "$venv/bin/python" "$spec"
else
  if ! "$python" -m venv "$venv"; then
    rm -rf "$venv"
    fail "could not create a virtual environment with $(shown "$python"): install python3-venv (Debian, Ubuntu), set the action's python-version input, or put uv on PATH"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
fi

installed=$("$venv/bin/perfgate" --version)
echo "$installed ($venv)"
{
  echo "perfgate=$venv/bin/perfgate"
  echo "python=$venv/bin/python"
  echo "version=${installed##* }"
} >>"${GITHUB_OUTPUT:-/dev/null}"
