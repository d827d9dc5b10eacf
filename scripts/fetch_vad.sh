#!/usr/bin/env bash
# fetch_vad.sh — installs Silero VAD v6 (MIT) for `steno vad` and steno_vad_load into the cache:
#   ${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}/silero_vad/silero_vad_v6.safetensors
# The network is the one faster-whisper ships: the wheel faster-whisper==1.2.1 (pinned by version
# and sha256, `pip download --no-deps`), its faster_whisper/assets/silero_vad_v6.onnx (sha256
# checked), converted by tools/convert_silero_vad.py, which checks the graph op by op and the
# tensors' names and shapes. The converter's `onnx` package comes from PyPI, pinned, in a venv of
# its own (STENO_CONVERT_VENV, default ${XDG_CACHE_HOME:-$HOME/.cache}/steno/venv-convert).
# Idempotent: nothing is done when silero_vad/.complete exists and the file has the expected sha256.
set -euo pipefail
cd "$(dirname "$0")/.."

wheel=faster_whisper-1.2.1-py3-none-any.whl
wheel_sha256=79a66ad50688c0b794dd501dc340a736992a6342f7f95e5811be60b5224a26a7
onnx_path=faster_whisper/assets/silero_vad_v6.onnx
onnx_sha256=4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2
out_name=silero_vad_v6.safetensors
out_sha256=036698debf7c96f0e79f79a0e646d2a5c9c985a2a03736112fa50837b641d64d
pins=(onnx==1.23.2 numpy==2.4.6 protobuf==7.36.2 ml_dtypes==0.7.0 typing_extensions==4.16.0)

root=${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}
dest=$root/silero_vad
if [ -f "$dest/.complete" ] && [ "$(sha256sum "$dest/$out_name" 2>/dev/null | cut -d' ' -f1)" = "$out_sha256" ]; then
  echo "fetch_vad: silero_vad already in $dest"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check FILE SHA256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "fetch_vad: $(basename "$1"): sha256 $got, expected $2" >&2
    exit 1
  fi
}

echo "fetch_vad: downloading faster-whisper==1.2.1"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  python3 -m pip download --no-deps --only-binary=:all: -q faster-whisper==1.2.1 -d "$tmp"
check "$tmp/$wheel" "$wheel_sha256"
unzip -q -o "$tmp/$wheel" "$onnx_path" -d "$tmp/unzipped"
check "$tmp/unzipped/$onnx_path" "$onnx_sha256"

venv=${STENO_CONVERT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/venv-convert}
if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" - "${pins[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
PY
}; then
  echo "fetch_vad: installing ${pins[*]} into $venv"
  python3 -m venv "$venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -q "${pins[@]}"
fi
"$venv/bin/python" tools/convert_silero_vad.py "$tmp/unzipped/$onnx_path" "$tmp/$out_name"
check "$tmp/$out_name" "$out_sha256"

mkdir -p "$root"
stage=$(mktemp -d "$root/.silero_vad.XXXXXX")
cp "$tmp/$out_name" "$stage/"
touch "$stage/.complete"
chmod 755 "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
echo "fetch_vad: silero_vad installed in $dest"
