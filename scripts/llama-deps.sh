#!/usr/bin/env bash
# scripts/llama-deps.sh — installs, quietly and only when missing, llama.cpp's
# OpenAI-compatible server (llama-cpp-python[server] from PyPI, pinned) and
# the gguf package into a virtual environment, for the tests that run a real
# model server as a serve stage (e2e/llamacpp). `make llama-deps` and CI run
# it; elsewhere those tests skip, saying why.
#
#   CAIRN_LLAMA_VENV    the environment (default build/pyenv-llama)
#   CAIRN_LLAMA_WHEELS  the built wheels, kept for the next install
#                       (default build/wheels-llama)
#   CAIRN_LLAMA_BUILD   0: install only from wheels already built; where
#                       there are none, say so and exit 3 without building
#                       (make test and CI do this: the build took 96 min on
#                       a loaded 2-core machine)
#
# llama-cpp-python builds llama.cpp from source when it is installed: many
# minutes on a small machine (CMAKE_BUILD_PARALLEL_LEVEL jobs; default the
# machine's cores). The first run keeps every wheel it built or fetched in
# CAIRN_LLAMA_WHEELS; later runs install from there, offline, in seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${CAIRN_LLAMA_VENV:-$here/build/pyenv-llama}
wheels=${CAIRN_LLAMA_WHEELS:-$here/build/wheels-llama}
llama_version=0.3.36
gguf_version=0.19.0
reqs=("llama-cpp-python[server]==$llama_version" "gguf==$gguf_version")

installed() {
	[ -x "$venv/bin/python" ] && "$venv/bin/python" - "$llama_version" "$gguf_version" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
import llama_cpp, llama_cpp.server.app, gguf  # noqa: F401 (the server's own imports: fastapi, uvicorn...)
sys.exit(0 if (version("llama-cpp-python"), version("gguf")) == (sys.argv[1], sys.argv[2]) else 1)
PY
}

if installed; then
	exit 0
fi
python=${PYTHON:-python3}
[ -x /usr/bin/python3 ] && python=${PYTHON:-/usr/bin/python3}
if [ ! -x "$venv/bin/python" ]; then
	"$python" -m venv "$venv"
fi
have_wheel() { compgen -G "$wheels/llama_cpp_python-$llama_version-*.whl" >/dev/null && compgen -G "$wheels/gguf-$gguf_version-*.whl" >/dev/null; }
if ! have_wheel && [ "${CAIRN_LLAMA_BUILD:-1}" = 0 ]; then
	echo "llama-deps: no built llama-cpp-python $llama_version wheel in $wheels, and CAIRN_LLAMA_BUILD=0: not building llama.cpp (many minutes; 96 min on a loaded 2-core machine). Run 'make llama-deps' to build it once; until then e2e/llamacpp's tests skip." >&2
	exit 3
fi
if ! have_wheel; then
	mkdir -p "$wheels"
	echo "building llama-cpp-python $llama_version (llama.cpp from source: many minutes; kept in $wheels for later installs)" >&2
	start=$(date +%s)
	# GGML_NATIVE=OFF: a wheel for any x86-64 with AVX2, not only this CPU;
	# LLAVA_BUILD=OFF: without the multimodal library (no test uses it; 51
	# of the build's 178 files).
	CMAKE_ARGS=${CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"} CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
		"$venv/bin/pip" wheel -q --disable-pip-version-check --wheel-dir "$wheels" "${reqs[@]}" >&2
	echo "built in $(($(date +%s) - start)) s" >&2
fi
"$venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$wheels" "${reqs[@]}" >&2
if ! installed; then
	echo "llama-deps: llama-cpp-python $llama_version and gguf $gguf_version do not import from $venv after the install" >&2
	exit 1
fi
