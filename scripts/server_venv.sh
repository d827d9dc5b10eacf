#!/usr/bin/env bash
# server_venv.sh — the Python environment of the server tests (tests/server): the official OpenAI
# client, selenium, prometheus-client (its parser reads /metrics), websockets (the /v1/stream
# tests), and llama.cpp's GGUF writer gguf with numpy (tools/llm_ref/tiny_models.py writes the tiny
# models of test_llm_arch with them), pinned, from PyPI, in a venv of their own so the system Python
# stays as it is. Idempotent: does nothing when the venv already
# has these versions. Prints the venv's python.
#   STENO_SERVER_VENV  where (default ${XDG_CACHE_HOME:-$HOME/.cache}/steno/venv-server)
set -euo pipefail
venv=${STENO_SERVER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/venv-server}
pins=(openai==3.57.0 selenium==4.51.0 prometheus-client==0.26.0 websockets==15.0.1 gguf==0.19.0 numpy==2.4.6)
if [ -x "$venv/bin/python" ] && "$venv/bin/python" - "${pins[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
PY
then
  echo "$venv/bin/python"
  exit 0
fi
python3 -m venv "$venv" >&2
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}" >&2
echo "$venv/bin/python"
