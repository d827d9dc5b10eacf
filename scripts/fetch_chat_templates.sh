#!/usr/bin/env bash
# fetch_chat_templates.sh — the real chat templates of llama.cpp's models/templates/ folder, for
# tests/py/test_chat_templates.py (parity of steno's Jinja interpreter with Python's jinja2), into
#   ${STENO_TEMPLATES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/chat-templates}/*.jinja
# They come from the llama-cpp-python==0.3.36 sdist (which vendors llama.cpp), downloaded with
# `pip download --no-deps --no-binary :all:` (nothing is built or installed) and checked against
# the sha256 below; only vendor/llama.cpp/models/templates/*.jinja is extracted. The templates are
# never committed. Idempotent: nothing is downloaded when the folder's .complete marker exists.
set -euo pipefail

dir=${STENO_TEMPLATES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/chat-templates}
sdist=llama_cpp_python-0.3.36.tar.gz
sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e

if [ -f "$dir/.complete" ]; then
  echo "fetch_chat_templates: already in $dir"
  exit 0
fi

pip_cmd=()
if python3 -m pip --version >/dev/null 2>&1; then pip_cmd=(python3 -m pip)
elif command -v pip3 >/dev/null; then pip_cmd=(pip3)
else echo "fetch_chat_templates: no pip found; run scripts/install_deps.sh" >&2; exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch_chat_templates: downloading llama-cpp-python==0.3.36 (sdist)"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  "${pip_cmd[@]}" download --no-deps --no-binary :all: -q llama-cpp-python==0.3.36 -d "$tmp"
got=$(sha256sum "$tmp/$sdist" | cut -d' ' -f1)
if [ "$got" != "$sha" ]; then
  echo "fetch_chat_templates: $sdist: sha256 $got, expected $sha" >&2
  exit 1
fi
tar -xzf "$tmp/$sdist" -C "$tmp" --wildcards 'llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/*.jinja'
mkdir -p "$dir"
stage=$(mktemp -d "$dir/.stage.XXXXXX")
cp "$tmp"/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/*.jinja "$stage/"
mv "$stage"/*.jinja "$dir/"
rmdir "$stage"
touch "$dir/.complete"
echo "fetch_chat_templates: $(ls "$dir"/*.jinja | wc -l) templates in $dir"
