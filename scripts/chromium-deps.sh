#!/usr/bin/env bash
# scripts/chromium-deps.sh — installs, quietly and only when missing,
# Debian's chromium: the run report's tests (runreport, pipelines) open
# report pages in it, headless, through chromedp. `make test` and CI run
# it; where it cannot install (no root, no network) the tests skip and say
# why, unless CAIRN_REQUIRE_BROWSER=1 (CI), where they fail.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do
	command -v "$b" >/dev/null && exit 0
done
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo -n true 2>/dev/null || { echo "chromium-deps: chromium is not installed and this user cannot install it: the report's browser tests will skip" >&2; exit 1; }
	sudo="sudo -n"
fi
echo "installing chromium for the run report's browser tests" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
