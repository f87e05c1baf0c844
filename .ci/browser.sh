#!/usr/bin/env bash
# Headless Chromium for the tests that load perfgate's HTML and SVG in a real browser
# (tests/history/test_history_browser.py): Debian's `chromium` package, installed where missing. Under
# CI=true those tests fail without it, so a failed install is said here and left to them.
set -euo pipefail
if command -v chromium >/dev/null || [ -x /usr/bin/chromium ]; then
  exit 0
fi
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
  || echo "warning: chromium could not be installed; the browser tests will fail under CI=true"
