#!/usr/bin/env bash
# Installs the real clients the model-call cache's tests drive
# (docs/model-cache.md), pinned, under the build folder:
#   bin/clients/lmeval   a venv with lm-eval[api]
#   bin/clients/inspect  a venv with inspect-ai and openai
#   bin/clients/node     node_modules with the official openai client
#   bin/clients/gepa     a venv with gepa, the optimizer method of
#                        pipelines/methods/gepa_adapter.py
# Each is installed once (a stamp file names its pinned versions) and
# reused. Usage: scripts/model-cache-clients.sh [lmeval|inspect|node|gepa ...]
# (default: all). Exits 3 with the reason on standard error when a
# registry cannot be reached or a tool is missing; the tests then skip,
# unless CAIRN_REQUIRE_MODEL_CLIENTS=1 (CI), which makes them fail.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${CAIRN_CLIENTS_DIR:-$PWD/bin/clients}
LMEVAL_PIN='lm-eval[api]==0.4.13'
INSPECT_PIN='inspect-ai==0.3.285 openai==3.51.0'
NODE_PIN='openai@7.55.0'
GEPA_PIN='gepa==0.1.4'
mkdir -p "$DEST"

fail() { echo "model-cache clients: $*" >&2; exit 3; }

venv() { # venv NAME PINS...
	local name=$1; shift
	local dir=$DEST/$name stamp="$*"
	if [ -f "$dir/.pinned" ] && [ "$(cat "$dir/.pinned")" = "$stamp" ]; then return 0; fi
	command -v python3 >/dev/null || fail "python3 is not installed"
	rm -rf "$dir"
	python3 -m venv "$dir" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
	"$dir/bin/pip" install -q --disable-pip-version-check "$@" >"$dir.log" 2>&1 ||
		fail "pip install $* failed (is PyPI reachable?); see $dir.log"
	echo "$stamp" >"$dir/.pinned"
}

node_client() {
	local dir=$DEST/node
	if [ -f "$dir/.pinned" ] && [ "$(cat "$dir/.pinned")" = "$NODE_PIN" ]; then return 0; fi
	command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are not installed"
	rm -rf "$dir" && mkdir -p "$dir"
	(cd "$dir" && echo '{"name":"cairn-model-cache-clients","private":true}' >package.json &&
		npm install --no-audit --no-fund --silent "$NODE_PIN" >"$dir.log" 2>&1) ||
		fail "npm install $NODE_PIN failed (is the npm registry reachable?); see $dir.log"
	echo "$NODE_PIN" >"$dir/.pinned"
}

want=${*:-lmeval inspect node gepa}
for c in $want; do
	case $c in
	lmeval) venv lmeval "$LMEVAL_PIN" ;;
	inspect) venv inspect $INSPECT_PIN ;;
	node) node_client ;;
	gepa) venv gepa "$GEPA_PIN" ;;
	*) echo "model-cache clients: unknown client $c (lmeval, inspect, node, gepa)" >&2; exit 2 ;;
	esac
done
