#!/usr/bin/env python3
"""whisper_cli_fixtures.py — regenerates tests/fixtures/whisper_cli/ from a LOCAL whisper.cpp build.

The fixtures are whisper.cpp's own whisper-cli output on jfk.wav with the tiny.en ggml model: the
output files of -otxt -osrt -ovtt -ocsv -oj -olrc (named jfk.wav.txt ... as whisper-cli names
them next to the input) and its stdout (stdout.txt). tests/py/test_whisper_cli.py checks
`steno whisper-cli` against them: layouts exactly, transcript text.

Nothing here builds or downloads whisper.cpp: point it at a whisper-cli binary you built and a
ggml model, e.g. one written by steno itself:

    build/steno convert --to ggml --model tiny.en -o /tmp/ggml-tiny.en.bin
    python3 tools/whisper_cli_fixtures.py --whisper-cli /path/to/whisper.cpp/build/bin/whisper-cli \\
        --model /tmp/ggml-tiny.en.bin --audio ../shared/audio/jfk.wav

Standard-library Python only.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "whisper_cli")
EXTS = ["txt", "srt", "vtt", "csv", "json", "lrc"]
FLAGS = ["-otxt", "-osrt", "-ovtt", "-ocsv", "-oj", "-olrc"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--whisper-cli", required=True, help="a whisper.cpp whisper-cli binary")
    ap.add_argument("--model", required=True, help="the tiny.en ggml model (steno convert --to ggml)")
    ap.add_argument("--audio", default=os.path.join(HERE, "..", "..", "shared", "audio", "jfk.wav"))
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wav = os.path.join(tmp, "jfk.wav")
        shutil.copy(a.audio, wav)
        # the model by its base name (the JSON's params.model), not a path of this machine
        os.symlink(os.path.abspath(a.model), os.path.join(tmp, "ggml-tiny.en.bin"))
        cmd = [a.whisper_cli, "-m", "ggml-tiny.en.bin", "-t", "2", "-np", *FLAGS, "jfk.wav"]
        r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("whisper-cli failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
        with open(os.path.join(a.out, "stdout.txt"), "w") as f:
            f.write(r.stdout)
        for ext in EXTS:
            src = os.path.join(tmp, "jfk.wav." + ext)
            if not os.path.exists(src):
                sys.exit("whisper-cli wrote no %s" % src)
            shutil.copy(src, os.path.join(a.out, "jfk.wav." + ext))
    print("wrote %s: stdout.txt %s" % (a.out, " ".join("jfk.wav." + e for e in EXTS)))


if __name__ == "__main__":
    main()
