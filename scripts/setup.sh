#!/usr/bin/env bash
# setup.sh — installs the dependencies, builds steno (Release, build/), fetches the tiny.en and base models
# and Silero VAD, and transcribes a real English recording to SRT on standard output.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
bash scripts/fetch_model.sh tiny.en
bash scripts/fetch_model.sh base   # multilingual: tests/py/test_multilingual.py
bash scripts/fetch_vad.sh        # Silero VAD (steno vad): tests/py/test_vad.py

demo=/usr/share/asterisk/sounds/en/demo-congrats.wav
[ -f "$demo" ] || demo=/usr/share/asterisk/sounds/en_US_f_Allison/demo-congrats.wav
echo "+ build/steno transcribe --output-format srt --output-dir - $demo"
build/steno transcribe --output-format srt --output-dir - "$demo"
