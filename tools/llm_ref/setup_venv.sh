#!/bin/sh
# setup_venv.sh — the Python venv the reference tools run in (tools/llm_ref/*.py,
# tools/llm_oracle_llamacpp.py): llama-cpp-python 0.3.36 (pip builds it from the sdist, which vendors
# llama.cpp at commit 0c1e57098; CPU only, 10-20 minutes on 2 cores), gguf 0.19.0 and numpy. llama.cpp
# is built for x86-64 with AVX2, FMA and F16C and without AVX-512, VNNI or AMX: the kernels steno's
# `--compute ggml` reproduces bit for bit (a native build on an AVX-512/AMX machine runs other
# kernels, whose sums differ by rounding). Run by hand, never in CI:
#     tools/llm_ref/setup_venv.sh [venv-dir]      (default: ~/.cache/steno/venv-llamacpp)
set -eu
VENV=${1:-$HOME/.cache/steno/venv-llamacpp}
python3 -m venv "$VENV"
"$VENV/bin/pip" install --upgrade pip
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
    "$VENV/bin/pip" install --no-binary llama-cpp-python "llama-cpp-python==0.3.36" "gguf==0.19.0" "numpy==2.4.6"
"$VENV/bin/python" -c "import llama_cpp, gguf; print('llama-cpp-python', llama_cpp.__version__)"
echo "venv ready: $VENV"
