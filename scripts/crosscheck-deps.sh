#!/usr/bin/env bash
# scripts/crosscheck-deps.sh — installs, quietly and only when missing, the
# Debian packages the aggregation's cross-check (TestCrossCheck in
# stages/aggregate, scripts/aggregate-crosscheck.py) calls through
# /usr/bin/python3: numpy, scipy and statsmodels. `make crosscheck` and CI
# run it; elsewhere the test skips, saying why.
set -euo pipefail
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy, scipy, statsmodels' 2>/dev/null; then
	exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "installing python3-numpy python3-scipy python3-statsmodels for the aggregation's cross-check" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 python3-numpy python3-scipy python3-statsmodels >/dev/null
