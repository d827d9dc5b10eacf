#!/bin/sh
# setup_venv.sh — the Python venv tools/llm_ref/make_pre_fixtures.py runs in: llama-cpp-python
# 0.3.36 (pip builds it from the sdist, which vendors llama.cpp at commit 0c1e57098; CPU only, a
# few minutes) and gguf 0.19.0. Run by hand, never in CI:
#     tools/llm_ref/setup_venv.sh [venv-dir]      (default: ~/.cache/steno/venv-llamacpp)
set -eu
VENV=${1:-$HOME/.cache/steno/venv-llamacpp}
python3 -m venv "$VENV"
"$VENV/bin/pip" install --upgrade pip
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF" \
    "$VENV/bin/pip" install --no-binary llama-cpp-python "llama-cpp-python==0.3.36" "gguf==0.19.0"
"$VENV/bin/python" -c "import llama_cpp, gguf; print('llama-cpp-python', llama_cpp.__version__)"
echo "venv ready: $VENV"
