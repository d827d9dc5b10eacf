"""test_whisper_cli.py — `steno whisper-cli` and the binary run as `whisper-cli` (a symlink).

Both spellings run the same command lines on jfk.wav with tiny.en and must give the same stdout
and the same files. The files are checked against whisper.cpp's own whisper-cli output in
tests/fixtures/whisper_cli/ (made by tools/whisper_cli_fixtures.py with a local whisper.cpp
build and the tiny.en ggml model from `steno convert --to ggml`):
  - names: <input>.txt .srt .vtt .csv .json .lrc next to the input, -of BASE for another base;
  - layout, exactly: every line of every format parsed by whisper.cpp's layout (cli.cpp output_*),
    header lines equal, the JSON re-rendered in whisper.cpp's tab-indented layout byte-equal,
    the same JSON keys in the same order;
  - text: the transcript (segments joined, case and punctuation folded) equal to whisper.cpp's.
Bad input: an unknown flag and an unsupported one exit 2 with one line, a missing file exits 1
with one line naming it.

Standard library only. Environment: STENO_BIN, STENO_SHARED, STENO_MODEL_DIR (steno_eval.py).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
MODEL = se.model_dir()
JFK = os.path.join(se.audio_dir(), "jfk.wav")
FIX = se.fixtures_dir("whisper_cli")
EXTS = ["txt", "srt", "vtt", "csv", "json", "lrc"]
FLAGS = ["-otxt", "-osrt", "-ovtt", "-ocsv", "-oj", "-olrc"]
TMP = tempfile.mkdtemp(prefix="steno_wcli_test_")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, flush=True)
    return cond


def run(argv0, args, cwd):
    """argv0: 'steno' (steno whisper-cli ARGS) or 'alias' (the whisper-cli symlink)."""
    if argv0 == "steno":
        cmd = [STENO, "whisper-cli"] + args
    else:
        link = os.path.join(TMP, "bin", "whisper-cli")
        if not os.path.exists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.abspath(STENO), link)
        cmd = [link] + args
    p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- whisper.cpp's layouts (examples/cli/cli.cpp) ----------------------------------------------

TS = r"\d\d:\d\d:\d\d[.]\d\d\d"
TS_C = r"\d\d:\d\d:\d\d,\d\d\d"


def parse_stdout(s):
    """'\\n' then "[t0 --> t1]  text" per segment, then a blank line."""
    check(s.startswith("\n"), "stdout: does not start with the blank line whisper-cli prints")
    check(s.endswith("\n\n"), "stdout: does not end with the blank line whisper-cli prints")
    texts = []
    for line in s.strip("\n").split("\n"):
        m = re.fullmatch(r"\[(%s) --> (%s)\]  (.*)" % (TS, TS), line)
        if check(m is not None, "stdout: line not in whisper-cli's layout: %r" % line):
            texts.append(m.group(3))
    return texts


def parse_txt(s):
    check(s.endswith("\n"), "txt: no final newline")
    return s[:-1].split("\n")


def parse_vtt(s):
    check(s.startswith("WEBVTT\n\n"), "vtt: header is not 'WEBVTT' and a blank line")
    body = s[len("WEBVTT\n\n"):]
    check(body.endswith("\n\n"), "vtt: cues do not end with a blank line")
    texts = []
    for cue in body[:-2].split("\n\n"):
        lines = cue.split("\n")
        ok = len(lines) == 2 and re.fullmatch("%s --> %s" % (TS, TS), lines[0])
        if check(ok, "vtt: cue not in whisper.cpp's layout: %r" % cue):
            texts.append(lines[1])
    return texts


def parse_srt(s):
    check(s.endswith("\n\n"), "srt: cues do not end with a blank line")
    texts = []
    for i, cue in enumerate(s[:-2].split("\n\n")):
        lines = cue.split("\n")
        ok = len(lines) == 3 and lines[0] == str(i + 1) and re.fullmatch("%s --> %s" % (TS_C, TS_C), lines[1])
        if check(ok, "srt: cue %d not in whisper.cpp's layout: %r" % (i + 1, cue)):
            texts.append(lines[2])
    return texts


def parse_csv(s):
    lines = s.split("\n")
    check(lines[0] == "start,end,text", "csv: header %r is not 'start,end,text'" % lines[0])
    check(lines[-1] == "", "csv: no final newline")
    texts = []
    for line in lines[1:-1]:
        m = re.fullmatch(r'(\d+),(\d+),"((?:[^"]|"")*)"', line)
        if check(m is not None, "csv: row not in whisper.cpp's layout: %r" % line):
            texts.append(m.group(3).replace('""', '"'))
    return texts


def parse_lrc(s):
    lines = s.split("\n")
    check(lines[0] == "[by:whisper.cpp]", "lrc: first line %r is not '[by:whisper.cpp]'" % lines[0])
    check(lines[-1] == "", "lrc: no final newline")
    texts = []
    for line in lines[1:-1]:
        m = re.fullmatch(r"\[\d\d:\d\d\.\d\d\](.*)", line)
        if check(m is not None, "lrc: line not in whisper.cpp's layout: %r" % line):
            texts.append(m.group(1))
    return texts


def render_wcpp_json(v, indent=0, name=None, last=True):
    """whisper.cpp's output_json layout: tabs, '"k": v' one per line, '},' between items."""
    pad = "\t" * indent
    head = pad + ('"%s": ' % name if name is not None else "")
    end = "\n" if last else ",\n"
    if isinstance(v, dict):
        out = head + "{\n"
        items = list(v.items())
        for i, (k, x) in enumerate(items):
            out += render_wcpp_json(x, indent + 1, k, i == len(items) - 1)
        return out + pad + "}" + end
    if isinstance(v, list):
        out = head + "[\n"
        for i, x in enumerate(v):
            out += render_wcpp_json(x, indent + 1, None, i == len(v) - 1)
        return out + pad + "]" + end
    if isinstance(v, bool):
        return head + ("true" if v else "false") + end
    if isinstance(v, int):
        return head + str(v) + end
    if isinstance(v, str):
        return head + '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' + end
    raise ValueError("unexpected JSON value %r" % (v,))


def keys_shape(v):
    if isinstance(v, dict):
        return {k: keys_shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [keys_shape(v[0])] if v else []
    return type(v).__name__


def parse_json(s, what):
    try:
        doc = json.loads(s)
    except ValueError as e:
        check(False, "%s: not JSON: %s" % (what, e))
        return None, []
    check(render_wcpp_json(doc) == s, "%s: not in whisper.cpp's tab-indented JSON layout" % what)
    for seg in doc.get("transcription", []):
        for k in ("from", "to"):
            check(re.fullmatch(TS_C, seg["timestamps"][k]) is not None, "%s: timestamp %r" % (what, seg["timestamps"]))
            check(isinstance(seg["offsets"][k], int), "%s: offsets not integers" % what)
    return doc, [seg["text"] for seg in doc.get("transcription", [])]


PARSERS = {"txt": parse_txt, "vtt": parse_vtt, "srt": parse_srt, "csv": parse_csv, "lrc": parse_lrc}


def fold(texts):
    return re.sub(r"[^a-z ]", "", " ".join(texts).lower()).split()


def parse_file(ext, s, what):
    if ext == "json":
        return parse_json(s, what)[1]
    return PARSERS[ext](s)


# ---- cases ----------------------------------------------------------------------------------

def transcribe_both():
    outs = {}
    for who in ("steno", "alias"):
        d = os.path.join(TMP, who)
        os.makedirs(d)
        shutil.copy(JFK, os.path.join(d, "jfk.wav"))
        t = time.time()
        rc, out, err = run(who, ["-m", MODEL, "-t", "2", "-np"] + FLAGS + ["jfk.wav"], d)
        print("%s: rc %d in %.1f s" % (who, rc, time.time() - t), flush=True)
        check(rc == 0, "%s: exit %d: %s" % (who, rc, err[-500:]))
        files = {}
        for ext in EXTS:
            p = os.path.join(d, "jfk.wav." + ext)
            if check(os.path.isfile(p), "%s: whisper-cli's output file jfk.wav.%s missing" % (who, ext)):
                files[ext] = read(p)
        outs[who] = (out, files)
    check(outs["steno"] == outs["alias"], "`steno whisper-cli` and the whisper-cli symlink differ")
    return outs["steno"]


def compare_with_fixtures(out, files):
    fix_out = read(os.path.join(FIX, "stdout.txt"))
    ref_texts = parse_stdout(fix_out)
    texts = parse_stdout(out)
    check(fold(texts) == fold(ref_texts), "stdout transcript differs from whisper.cpp's:\n  %r\n  %r"
          % (" ".join(texts), " ".join(ref_texts)))
    for ext in EXTS:
        if ext not in files:
            continue
        ref = read(os.path.join(FIX, "jfk.wav." + ext))
        ref_t = parse_file(ext, ref, "fixture jfk.wav." + ext)
        got_t = parse_file(ext, files[ext], "jfk.wav." + ext)
        check(fold(got_t) == fold(ref_t), "jfk.wav.%s: transcript differs from whisper.cpp's" % ext)
        check(all(t.startswith(" ") for t in got_t), "jfk.wav.%s: segment texts lack whisper's leading space" % ext)
        if ext == "json":
            a, b = json.loads(files[ext]), json.loads(ref)
            sa, sb = keys_shape(a), keys_shape(b)
            check(sa == sb, "json: keys differ from whisper.cpp's:\n  %s\n  %s" % (sa, sb))
            check(list(a) == list(b), "json: top-level key order %s != %s" % (list(a), list(b)))
            check(a["params"]["language"] == "en" and a["result"]["language"] == "en", "json: language")
            check(a["model"]["type"] == b["model"]["type"] and a["model"]["vocab"] == b["model"]["vocab"],
                  "json: model type/vocab %s != %s" % (a["model"], b["model"]))


def output_file_and_nt():
    d = os.path.join(TMP, "of")
    os.makedirs(d)
    shutil.copy(JFK, os.path.join(d, "jfk.wav"))
    rc, out, err = run("alias", ["-m", MODEL, "-t", "2", "-np", "-nt", "-otxt", "-ocsv", "-of", "base", "jfk.wav"], d)
    check(rc == 0, "-of/-nt: exit %d: %s" % (rc, err[-300:]))
    check(sorted(os.listdir(d)) == ["base.csv", "base.txt", "jfk.wav"], "-of base: files %s" % sorted(os.listdir(d)))
    check("[" not in out and out.startswith("\n") and out.endswith("\n"), "-nt: stdout %r has timestamps" % out)
    check("fellow americans" in out.lower(), "-nt: stdout %r" % out)


def max_len_and_full_json():
    """-ml 16 -sow cuts segments on words; -on 3 numbers srt cues from 4; -ojf adds tokens."""
    d = os.path.join(TMP, "ml")
    os.makedirs(d)
    shutil.copy(JFK, os.path.join(d, "jfk.wav"))
    rc, out, err = run("steno", ["-m", MODEL, "-t", "2", "-np", "-ml", "16", "-sow", "-on", "3", "-osrt",
                                 "jfk.wav"], d)
    check(rc == 0, "-ml: exit %d: %s" % (rc, err[-300:]))
    texts = parse_stdout(out)
    check(len(texts) >= 6 and all(len(t) <= 16 or " " not in t[1:] for t in texts), "-ml 16: %r" % texts)
    srt = read(os.path.join(d, "jfk.wav.srt"))
    cues = srt[:-2].split("\n\n")
    check([c.split("\n")[0] for c in cues] == [str(4 + i) for i in range(len(texts))],
          "-on 3: srt cue numbers do not run 4, 5, ... over %d cues: %r" % (len(texts), srt[:40]))
    rc, out, err = run("steno", ["-m", MODEL, "-t", "2", "-np", "-ojf", "-of", "full", "jfk.wav"], d)
    check(rc == 0, "-ojf: exit %d: %s" % (rc, err[-300:]))
    doc, texts = parse_json(read(os.path.join(d, "full.json")), "full.json")
    if doc:
        toks = doc["transcription"][0].get("tokens", [])
        check(toks and all(set(t) == {"text", "id"} for t in toks), "-ojf tokens: %r" % toks[:3])
        check("".join(t["text"] for t in toks if not t["text"].startswith("[_")) == doc["transcription"][0]["text"],
              "-ojf: token texts do not make up the segment text")


def one_line(err):
    return len([l for l in err.splitlines() if l.strip()]) == 1


def bad_input():
    d = TMP
    rc, out, err = run("steno", ["-m", MODEL, "--no-such-flag", JFK], d)
    check(rc == 2 and one_line(err) and "--no-such-flag" in err, "unknown flag: rc %d %r" % (rc, err))
    for who in ("steno", "alias"):
        rc, out, err = run(who, ["-m", MODEL, "-vo", "0.1", JFK], d)
        check(rc == 2 and one_line(err) and "not supported: -vo" in err, "%s -vo: rc %d %r" % (who, rc, err))
    rc, out, err = run("alias", ["-m", MODEL, "-tdrz", JFK], d)
    check(rc == 2 and one_line(err) and err.startswith("steno: whisper-cli: not supported: -tdrz"),
          "-tdrz: rc %d %r" % (rc, err))
    missing = os.path.join(TMP, "no_such_clip.wav")
    rc, out, err = run("alias", ["-m", MODEL, "-np", "-f", missing], d)
    check(rc == 1 and one_line(err) and missing in err, "missing file: rc %d %r" % (rc, err))
    rc, out, err = run("alias", ["-h"], d)
    check(rc == 0 and "-otxt" in out and "--output-file" in out, "-h: rc %d" % rc)
    # a damaged whisper.cpp model file: the loader's one-line error naming the file and the reason
    ggml = os.path.join(TMP, "ggml-tiny.en-q5_1.bin")
    with open(ggml, "wb") as f:
        f.write(b"lmgg" + b"\0" * 60)
    rc, out, err = run("alias", ["-m", ggml, "-f", JFK], d)
    check(rc == 1 and one_line(err) and ggml in err and "out of range" in err, "damaged ggml model: rc %d %r" % (rc, err))
    rc, out, err = run("alias", ["-m", "models/ggml-large-v9.bin", "-f", JFK], d)
    check(rc == 1 and one_line(err) and "no such file" in err and "steno pull large-v9" in err,
          "missing ggml model: rc %d %r" % (rc, err))
    # the language is checked before the model loads, whichever the model
    rc, out, err = run("alias", ["-m", MODEL, "-l", "xx", "-f", JFK], d)
    check(rc == 2 and one_line(err) and "unknown language 'xx'" in err, "-l xx: rc %d %r" % (rc, err))
    # current whisper.cpp flags without an effect here are accepted
    rc, out, err = run("alias", ["-m", MODEL, "-np", "-nfa", "-dev", "0", "--carry-initial-prompt", "-f", JFK], d)
    check(rc == 0 and "country" in out, "-nfa -dev 0 --carry-initial-prompt: rc %d %r" % (rc, err[-300:]))


def timed_lines(out):
    """[(start s, end s, text)] of whisper-cli's "[HH:MM:SS.mmm --> HH:MM:SS.mmm]  text" lines."""
    def sec(t):
        h, m, rest = t.split(":")
        return int(h) * 3600 + int(m) * 60 + float(rest)
    rows = []
    for line in out.splitlines():
        m = re.fullmatch(r"\[(%s) --> (%s)\]  (.*)" % (TS, TS), line)
        if m:
            rows.append((sec(m.group(1)), sec(m.group(2)), m.group(3)))
    return rows


def vad():
    """--vad with whisper.cpp's VAD flags: 10 s of zeros + jfk.wav + 10 s of zeros gives jfk.wav's
    words with times on the input's timeline; 30 s of zeros gives no segment."""
    pad = [0] * (10 * 16000)
    padded, silent = os.path.join(TMP, "padded.wav"), os.path.join(TMP, "silent.wav")
    se.write_wav16k(padded, pad + se.read_wav16k(JFK) + pad)
    se.write_wav16k(silent, [0] * (30 * 16000))
    rc, out, err = run("alias", ["-m", MODEL, "-np", "-bs", "1", "-bo", "1", "-f", JFK], TMP)
    alone = " ".join(t for _, _, t in timed_lines(out))
    rc, out, err = run("alias", ["-m", MODEL, "-np", "-bs", "1", "-bo", "1", "--vad", "-vsd", "2000", "-vp", "400",
                                 "-vspd", "0", "-vt", "0.5", "-f", padded], TMP)
    segs = timed_lines(out)
    check(rc == 0 and segs and segs[0][0] >= 9.6 and segs[-1][1] <= 21.5,
          "--vad: segments %r should lie within the speech (9.6..21.5 s), rc %d %r" % (segs, rc, err[-300:]))
    check(se.normalize_en(" ".join(t for _, _, t in segs)) == se.normalize_en(alone),
          "--vad: %r, jfk.wav alone: %r" % (segs, alone))
    rc, out, err = run("alias", ["-m", MODEL, "-np", "--vad", "-f", silent], TMP)
    check(rc == 0 and not timed_lines(out), "--vad on 30 s of zeros: rc %d, segments %r" % (rc, timed_lines(out)))


def ggml_model():
    """whisper.cpp users' -m ggml-NAME.bin: the file `steno convert --to ggml` writes loads and gives
    the same transcript as the CTranslate2 directory it came from."""
    ggml = os.path.join(TMP, "ggml-tiny.en.bin")
    p = subprocess.run([STENO, "convert", "--to", "ggml", "--model", MODEL, "-o", ggml], capture_output=True, text=True)
    check(p.returncode == 0, "convert --to ggml: rc %d %r" % (p.returncode, p.stderr))
    rc1, out1, err1 = run("alias", ["-m", MODEL, "-np", "-f", JFK], TMP)
    rc2, out2, err2 = run("alias", ["-m", ggml, "-np", "-f", JFK], TMP)
    check(rc1 == 0 and rc2 == 0 and out1 == out2 and "country" in out2,
          "-m ggml-tiny.en.bin: rc %d %r vs the CT2 directory's %r" % (rc2, out2 or err2, out1))


def main():
    t0 = time.time()
    out, files = transcribe_both()
    compare_with_fixtures(out, files)
    output_file_and_nt()
    max_len_and_full_json()
    bad_input()
    ggml_model()
    vad()
    shutil.rmtree(TMP, ignore_errors=True)
    print("%s in %.1f s" % ("FAIL (%d)" % len(failures) if failures else "PASS", time.time() - t0))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
