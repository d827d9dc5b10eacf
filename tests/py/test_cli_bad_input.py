"""test_cli_bad_input.py — `steno transcribe` on bad inputs, usage errors and every output format.

Contract checked (DESIGN.md "Errors"; README):
  * a file or model that cannot be used: exit 1 and exactly ONE line on stderr,
    "steno: <input>: <reason>", naming the input (the audio path, model.bin or config.json);
  * silence and zero-sample audio: exit 0 and an empty transcript;
  * usage errors: exit 2;
  * never a signal, never a sanitizer report (the ASan+UBSan build runs this same file);
  * --output-format txt|vtt|srt|tsv|json|all writes <dir>/<stem>.<ext>, byte-identical to what
    openai-whisper's whisper/utils.py writers produce from the same result (re-created below from
    the JSON output), and the JSON is byte-identical to Python's json.dump of itself;
  * "-" reads standard input; -o - prints to standard output; one bad file among several does not
    stop the others.

Standard library only. Environment: STENO_BIN, STENO_SHARED, STENO_MODEL_DIR (see steno_eval.py).
Each case prints PASS/FAIL with its reason; the last line is "N passed, N failed".
"""

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
MODEL = se.model_dir()
SHARED = se.shared_dir()
JFK = os.path.join(SHARED, "models", "whisper-test-assets", "jfk.wav")
if not os.path.isfile(JFK):
    se.fail("test clip missing: %s" % JFK)
TMP = tempfile.mkdtemp(prefix="steno_cli_test_")
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:")

results = []  # (name, ok, message)


class CaseFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def run(args, stdin_bytes=None, env=None, timeout=900, preexec_fn=None):
    """Runs steno with args; returns (rc, stdout str, stderr str). Signals and sanitizer reports
    fail the case at once."""
    cmd = [STENO] + list(args)
    try:
        p = subprocess.run(cmd, input=stdin_bytes if stdin_bytes is not None else b"",
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           env=env, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired:
        raise CaseFailure("timed out after %d s: %s" % (timeout, " ".join(cmd)))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    ctx = "\n  command: %s\n  exit: %d\n  stderr: %r" % (" ".join(cmd), p.returncode, err[-3000:])
    check(p.returncode >= 0, "killed by signal %d%s" % (-p.returncode, ctx))
    check(not any(m in err for m in SANITIZER_MARKS), "sanitizer report on stderr" + ctx)
    return p.returncode, out, err, ctx


CASES = []


def case(fn):
    """Registers fn as a case; main() runs the cases in file order."""
    CASES.append(fn)
    return fn


def run_case(fn):
    name = fn.__name__
    try:
        fn()
        results.append((name, True, ""))
        print("PASS %s" % name, flush=True)
    except CaseFailure as e:
        results.append((name, False, str(e)))
        print("FAIL %s: %s" % (name, e), flush=True)
    except Exception as e:  # a bug in the test itself still fails loudly
        results.append((name, False, "test error: %r" % (e,)))
        print("FAIL %s: test error: %r" % (name, e), flush=True)


def tmp_path(*parts):
    p = os.path.join(TMP, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def transcribe_args(*extra, out_dir=None, model=MODEL):
    out_dir = out_dir or tmp_path("out", "x")
    return ["transcribe", "--model", model, "--verbose", "False", "-o", out_dir] + list(extra)


def expect_one_line_error(rc, err, ctx, names, rc_want=1, reason_after_colon=True):
    check(rc == rc_want, "expected exit %d%s" % (rc_want, ctx))
    lines = err.splitlines()
    check(len(lines) == 1, "expected exactly one line on stderr, got %d%s" % (len(lines), ctx))
    line = lines[0]
    check(line.startswith("steno: "), "stderr line should start with 'steno: '" + ctx)
    check(any(n in line for n in names), "stderr line should name %s%s" % (" or ".join(names), ctx))
    # a reason after the name: "steno: <name...>: <reason>"
    check(not reason_after_colon or re.search(r": \S", line[len("steno: "):]) is not None,
          "stderr line should give a reason after the input's name" + ctx)


def write_wav(path, samples_i16, rate=16000):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(samples_i16))


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ------------------------------------------------------------------------------------------------
# openai-whisper's whisper/utils.py writers, for the byte-compatibility checks
# ------------------------------------------------------------------------------------------------

def format_timestamp(seconds, always_include_hours=False, decimal_marker="."):
    assert seconds >= 0, "non-negative timestamp expected"
    milliseconds = round(seconds * 1000.0)
    hours = milliseconds // 3_600_000
    milliseconds -= hours * 3_600_000
    minutes = milliseconds // 60_000
    milliseconds -= minutes * 60_000
    seconds = milliseconds // 1_000
    milliseconds -= seconds * 1_000
    hours_marker = f"{hours:02d}:" if always_include_hours or hours > 0 else ""
    return f"{hours_marker}{minutes:02d}:{seconds:02d}{decimal_marker}{milliseconds:03d}"


def utils_py_write(result, fmt):
    f = io.StringIO()
    segs = result["segments"]
    if fmt == "txt":
        for s in segs:
            print(s["text"].strip(), file=f)
    elif fmt in ("vtt", "srt"):
        hours, marker = (True, ",") if fmt == "srt" else (False, ".")
        if fmt == "vtt":
            print("WEBVTT\n", file=f)
        for i, s in enumerate(segs, start=1):
            a = format_timestamp(s["start"], hours, marker)
            b = format_timestamp(s["end"], hours, marker)
            t = s["text"].strip().replace("-->", "->")
            if fmt == "srt":
                print(f"{i}\n{a} --> {b}\n{t}\n", file=f)
            else:
                print(f"{a} --> {b}\n{t}\n", file=f)
    elif fmt == "tsv":
        print("start", "end", "text", sep="\t", file=f)
        for s in segs:
            print(round(1000 * s["start"]), file=f, end="\t")
            print(round(1000 * s["end"]), file=f, end="\t")
            print(s["text"].strip().replace("\t", " "), file=f)
    elif fmt == "json":
        json.dump(result, f)
    return f.getvalue()


FORMATS = ["txt", "vtt", "srt", "tsv", "json"]
JFK_ALL = {}  # fmt -> file content of the --output-format all run (filled by the first case)


# ------------------------------------------------------------------------------------------------
# Output formats (run first: later cases compare against these files)
# ------------------------------------------------------------------------------------------------

@case
def output_format_all_matches_openai_writers():
    out = tmp_path("all", "x").rsplit("/", 1)[0]
    rc, stdout, err, ctx = run(["transcribe", "--model", MODEL, "-o", out, JFK])
    check(rc == 0, "transcribe jfk.wav failed" + ctx)
    check(err == "", "stderr should be empty on success (stderr is not a terminal)" + ctx)
    for fmt in FORMATS:
        p = os.path.join(out, "jfk." + fmt)
        check(os.path.isfile(p), "missing output %s" % p)
        JFK_ALL[fmt] = read_text(p)
    raw = JFK_ALL["json"]
    try:
        result = json.loads(raw)
    except ValueError as e:
        raise CaseFailure("jfk.json is not JSON: %s\n%s" % (e, raw[:500]))
    check(list(result) == ["text", "segments", "language"],
          "result keys %r, expected text, segments, language" % list(result))
    check(result["language"] == "en", "language %r" % result["language"])
    check(len(result["segments"]) >= 1, "no segments for jfk.wav")
    keys = ["id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob",
            "compression_ratio", "no_speech_prob"]
    for s in result["segments"]:
        check(list(s) == keys, "segment keys %r, expected %r" % (list(s), keys))
    check("ask not what your country can do for you" in result["text"].lower(),
          "unexpected transcript %r" % result["text"])
    check(json.dumps(result) == raw, "jfk.json differs from json.dump of itself:\n%s\n%s"
          % (raw, json.dumps(result)))
    for fmt in FORMATS:
        want = utils_py_write(result, fmt)
        check(JFK_ALL[fmt] == want, "jfk.%s differs from utils.py's writer:\n got: %r\nwant: %r"
              % (fmt, JFK_ALL[fmt], want))
    # --verbose defaults to True with -o DIR: openai-whisper's "[start --> end] text" lines.
    want = "".join("[%s --> %s] %s\n" % (format_timestamp(s["start"]), format_timestamp(s["end"]),
                                         s["text"]) for s in result["segments"])
    check(stdout == want, "verbose stdout:\n got: %r\nwant: %r" % (stdout, want))


@case
def each_output_format_writes_one_file():
    check(JFK_ALL, "needs the output_format_all case")
    for fmt in FORMATS:
        out = tmp_path("single_" + fmt, "x").rsplit("/", 1)[0]
        rc, stdout, err, ctx = run(["transcribe", "--model", MODEL, "--verbose", "False",
                                    "--output-format", fmt, "--output-dir", out, JFK])
        check(rc == 0, "--output-format %s failed%s" % (fmt, ctx))
        check(stdout == "", "--verbose False should print nothing on stdout, got %r" % stdout)
        check(sorted(os.listdir(out)) == ["jfk." + fmt],
              "--output-format %s wrote %r" % (fmt, sorted(os.listdir(out))))
        check(read_text(os.path.join(out, "jfk." + fmt)) == JFK_ALL[fmt],
              "--output-format %s differs from the 'all' run" % fmt)


@case
def stdin_and_stdout():
    check(JFK_ALL, "needs the output_format_all case")
    with open(JFK, "rb") as f:
        data = f.read()
    rc, stdout, err, ctx = run(["transcribe", "--model", MODEL, "-o", "-", "-f", "srt", "-"],
                               stdin_bytes=data)
    check(rc == 0, "cat jfk.wav | steno transcribe -o - -f srt - failed" + ctx)
    check(stdout == JFK_ALL["srt"], "stdin→stdout SRT differs:\n got: %r\nwant: %r"
          % (stdout, JFK_ALL["srt"]))
    # default format on stdout is txt
    rc, stdout, err, ctx = run(["transcribe", "--model", MODEL, "--output-dir", "-", "-"],
                               stdin_bytes=data)
    check(rc == 0, "stdin→stdout txt failed" + ctx)
    check(stdout == JFK_ALL["txt"], "stdin→stdout txt differs: %r" % stdout)


@case
def one_bad_file_among_good_ones():
    out = tmp_path("mixed", "x").rsplit("/", 1)[0]
    missing = tmp_path("nope", "missing.wav")
    rc, stdout, err, ctx = run(transcribe_args("-f", "txt", missing, JFK, out_dir=out))
    expect_one_line_error(rc, err, ctx, [missing])
    check(os.path.isfile(os.path.join(out, "jfk.txt")), "jfk.txt not written after a bad file")
    if JFK_ALL:
        check(read_text(os.path.join(out, "jfk.txt")) == JFK_ALL["txt"], "jfk.txt differs")


# ------------------------------------------------------------------------------------------------
# Bad audio
# ------------------------------------------------------------------------------------------------

def jfk_bytes():
    with open(JFK, "rb") as f:
        return f.read()


@case
def missing_file():
    p = tmp_path("missing", "does-not-exist.wav")
    rc, out, err, ctx = run(transcribe_args(p))
    expect_one_line_error(rc, err, ctx, [p])


@case
def text_file_named_wav():
    p = tmp_path("text", "notes.wav")
    with open(p, "w") as f:
        f.write("This is not audio. It is a text file with a .wav name.\n" * 20)
    rc, out, err, ctx = run(transcribe_args(p))
    expect_one_line_error(rc, err, ctx, [p])


@case
def directory_as_audio():
    p = tmp_path("adir", "clip.wav", "x").rsplit("/", 1)[0]
    os.makedirs(p, exist_ok=True)
    rc, out, err, ctx = run(transcribe_args(p))
    expect_one_line_error(rc, err, ctx, [p])


@case
def wav_cut_mid_header():
    p = tmp_path("cut", "header.wav")
    with open(p, "wb") as f:
        f.write(jfk_bytes()[:30])
    rc, out, err, ctx = run(transcribe_args(p))
    expect_one_line_error(rc, err, ctx, [p])


@case
def wav_cut_mid_data():
    # A WAV whose data chunk ends early (as from an interrupted copy): the samples that are there
    # are transcribed (exit 0, like ffmpeg + openai-whisper) and one warning line names the file and
    # how much audio was decoded. Never a crash.
    data = jfk_bytes()
    k = data.find(b"data")
    check(k > 0, "jfk.wav has no data chunk?")
    p = tmp_path("cut", "data.wav")
    with open(p, "wb") as f:
        f.write(data[:k + 8 + (len(data) - k - 8) // 2 + 1])  # odd length: mid-sample too
    out_dir = tmp_path("cut_out", "x").rsplit("/", 1)[0]
    rc, out, err, ctx = run(transcribe_args("-f", "txt", p, out_dir=out_dir))
    check(rc == 0, "a truncated WAV should give exit 0" + ctx)
    txt = read_text(os.path.join(out_dir, "data.txt"))
    check("fellow americans" in txt.lower(), "first half of jfk.wav not transcribed: %r" % txt)
    check(err.count("\n") == 1 and err.startswith("steno: warning: %s: truncated: " % p) and
          "11.0 s of audio, 5.5 s decoded" in err, "expected one warning naming the file and the decoded length" + ctx)


@case
def wav_header_without_data():
    # a header promising 11 s of audio and no data chunk bytes at all: exit 0, empty, a warning
    data = jfk_bytes()
    p = tmp_path("cut", "nodata.wav")
    with open(p, "wb") as f:
        f.write(data[:data.find(b"data") + 8])
    out_dir = tmp_path("nodata_out", "x").rsplit("/", 1)[0]
    rc, out, err, ctx = run(transcribe_args("-f", "txt", p, out_dir=out_dir))
    check(rc == 0, "a WAV without its data should give exit 0" + ctx)
    check(read_text(os.path.join(out_dir, "nodata.txt")) == "", "expected an empty transcript" + ctx)
    check(err.count("\n") == 1 and err.startswith("steno: warning: %s: no audio data: " % p),
          "expected one warning naming the file" + ctx)


@case
def m4a_with_index_at_end_through_stdin():
    # An M4A whose moov atom (the index) follows the audio cannot be demuxed from a pipe without
    # seeking; steno reads stdin whole first, so it transcribes as the file does (ffmpeg, a Debian
    # package of install_deps.sh, makes the input)
    m4a = tmp_path("m4a", "moov_end.m4a")
    ff = subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", JFK, "-c:a", "aac", "-b:a", "64k", m4a],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(ff.returncode == 0, "ffmpeg could not make the M4A: %r" % ff.stderr[-500:])
    with open(m4a, "rb") as f:
        data = f.read()
    check(data.find(b"moov") > data.find(b"mdat") > 0, "ffmpeg put the moov atom first; the case needs it last")
    rc, out, err, ctx = run(["transcribe", "--model", MODEL, "-f", "txt", "-o", "-", "-"], stdin_bytes=data)
    check(rc == 0 and "ask not what your country can do for you" in out.lower(),
          "the M4A through stdin should be transcribed: %r%s" % (out, ctx))


@case
def progress_bar_only_when_asked_off_a_terminal():
    # stderr is a pipe here: no progress unless --progress, which prints lines with the bar, the
    # position, the speed (x real time) and the ETA
    rc, out, err, ctx = run(transcribe_args("-f", "txt", JFK))
    check(rc == 0 and "%" not in err, "no progress expected off a terminal without --progress" + ctx)
    rc, out, err, ctx = run(transcribe_args("-f", "txt", "--progress", JFK))
    last = err.strip().splitlines()[-1] if err.strip() else ""
    check(rc == 0 and re.search(r"jfk\.wav 100% \[#{20}\] 0:11/0:11 [0-9.]+x ETA 0:00$", last),
          "expected a final progress line '... 100% [####...] 0:11/0:11 N.Nx ETA 0:00'" + ctx)
    rc, out, err, ctx = run(["transcribe", "--help"])
    for flag in ("--max-line-width", "--max-line-count", "--max-words-per-line", "--highlight-words"):
        i = out.find("  " + flag)
        check(i >= 0 and "needs --word-timestamps True" in out[i:i + 200].replace("\n", " ").replace(
            "                          ", ""), "the help of %s should say it needs --word-timestamps True" % flag)


_json_runs = []


def json_of(*extra):
    _json_runs.append(extra)
    out_dir = tmp_path("spell_%d" % len(_json_runs), "x").rsplit("/", 1)[0]
    rc, out, err, ctx = run(transcribe_args("-f", "json", *extra, JFK, out_dir=out_dir))
    check(rc == 0, "expected exit 0" + ctx)
    names = os.listdir(out_dir)
    check(len(names) == 1, "expected one output file, got %s%s" % (names, ctx))
    return names[0], json.loads(read_text(os.path.join(out_dir, names[0])))


@case
def faster_whisper_and_openai_spellings():
    # #15 item 2: --fp16 (accepted, both values), --device cpu|auto, --compute_type mapped to the
    # weight storage (float32 = --weights f32, float16/default/auto = f16), --output-name; each
    # other value a one-line usage error (exit 2)
    _, ref16 = json_of()
    if se.sanitize():  # the same option code on fewer transcriptions (each is seconds under ASan)
        runs = ((["--fp16", "True"], ref16),)
    else:
        _, ref32 = json_of("--weights", "f32")
        runs = ((["--fp16", "False"], ref16), (["--fp16", "True"], ref16), (["--device", "cpu"], ref16),
                (["--device", "auto"], ref16), (["--compute_type", "float32"], ref32),
                (["--compute-type", "float16"], ref16), (["--compute_type", "default"], ref16),
                # the two spellings together when they agree (default/auto: whatever --weights says)
                (["--compute-type", "float32", "--weights", "f32"], ref32),
                (["--compute-type", "auto", "--weights", "f32"], ref32))
    for extra, ref in runs:
        name, got = json_of(*extra)
        check(se.all_tokens(got) == se.all_tokens(ref), "%s changed the tokens" % " ".join(extra))
    name, got = json_of("--output-name", "talk")
    check(name == "talk.json" and se.all_tokens(got) == se.all_tokens(ref16), "--output-name talk wrote %s" % name)
    for extra, words in ((["--fp16", "maybe"], "--fp16"), (["--device", "cuda"], "CPU"),
                         (["--compute_type", "int8"], "'int8' is not available"),
                         (["--output-name", "a/b"], "--output-name")):
        rc, out, err, ctx = run(transcribe_args(*extra, JFK))
        expect_one_line_error(rc, err, ctx, [extra[0].replace("_", "-")], rc_want=2)
        check(words in err, "the error should say %r%s" % (words, ctx))
    rc, out, err, ctx = run(transcribe_args("--output-name", "x", JFK, JFK))
    expect_one_line_error(rc, err, ctx, ["--output-name"], rc_want=2)
    # csv and lrc (whisper.cpp's -ocsv/-olrc layouts) beside openai-whisper's five, from the same result
    segs = ref16["segments"]
    rc, out, err, ctx = run(transcribe_args("-f", "csv", JFK, out_dir="-"))
    want = ["start,end,text"] + ['%d,%d,"%s"' % (round(s["start"] * 1000), round(s["end"] * 1000),
                                                 s["text"].replace('"', '""')) for s in segs]
    check(rc == 0 and out.splitlines() == want, "-f csv: %r, expected %r%s" % (out, want, ctx))
    rc, out, err, ctx = run(transcribe_args("-f", "lrc", JFK, out_dir="-"))
    want = ["[by:whisper.cpp]"] + ["[%02d:%05.2f]%s" % (s["start"] // 60, s["start"] % 60, s["text"]) for s in segs]
    check(rc == 0 and out.splitlines() == want, "-f lrc: %r, expected %r%s" % (out, want, ctx))


@case
def clip_timestamps_past_the_end():
    out_dir = tmp_path("clip_out", "x").rsplit("/", 1)[0]
    rc, out, err, ctx = run(transcribe_args("-f", "txt", "--clip-timestamps", "20,30", JFK, out_dir=out_dir))
    check(rc == 0, "clips past the end should give exit 0" + ctx)
    check(err.count("\n") == 1 and "warning" in err and JFK in err and "after the end of the audio" in err,
          "expected one warning naming the file and the reason" + ctx)


@case
def wav_with_zero_samples():
    p = tmp_path("zero", "zero.wav")
    write_wav(p, b"")
    out_dir = tmp_path("zero_out", "x").rsplit("/", 1)[0]
    rc, out, err, ctx = run(transcribe_args("-f", "json", p, out_dir=out_dir))
    check(rc == 0, "zero-sample WAV should give exit 0" + ctx)
    r = json.loads(read_text(os.path.join(out_dir, "zero.json")))
    check(r["text"] == "" and r["segments"] == [], "zero samples should give an empty "
          "transcript, got %r" % r)


@case
def ten_seconds_of_digital_silence():
    p = tmp_path("silence", "silence.wav")
    write_wav(p, b"\0\0" * 16000 * 10)
    out_dir = tmp_path("silence_out", "x").rsplit("/", 1)[0]
    rc, out, err, ctx = run(transcribe_args("-f", "json", p, out_dir=out_dir))
    check(rc == 0, "silence should give exit 0" + ctx)
    r = json.loads(read_text(os.path.join(out_dir, "silence.json")))
    check(r["text"].strip() == "" and all(s["text"].strip() == "" for s in r["segments"]),
          "10 s of digital silence should give an empty transcript, got %r" % r["text"])


# ------------------------------------------------------------------------------------------------
# Bad model directories
# ------------------------------------------------------------------------------------------------

def model_copy(name, model_bin=None, config=None):
    """A copy of the model dir with model.bin replaced by bytes (None: absent) and config.json by
    text (None: the real one)."""
    d = tmp_path("models", name, "x").rsplit("/", 1)[0]
    for f in os.listdir(MODEL):
        if f not in ("model.bin", ".complete"):
            shutil.copy(os.path.join(MODEL, f), d)
    if model_bin is not None:
        with open(os.path.join(d, "model.bin"), "wb") as f:
            f.write(model_bin)
    if config is not None:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(config)
    return d


def real_model_bin(n=None):
    with open(os.path.join(MODEL, "model.bin"), "rb") as f:
        return f.read() if n is None else f.read(n)


def expect_model_error(d, names):
    rc, out, err, ctx = run(transcribe_args(JFK, model=d))
    expect_one_line_error(rc, err, ctx, names)


@case
def address_space_too_small_for_the_model():
    """`ulimit -v 250000`: the load fails with one line and exit 1, and the process ends (it hung
    in OpenBLAS's exit, whose server thread retried its buffer allocation for ever)."""
    if se.sanitize():
        # ASan reserves terabytes of shadow address space at start: no RLIMIT_AS fits under it
        print("  not run in the sanitizer build: ASan's shadow memory needs an unlimited address space")
        return
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (250000 * 1024, 250000 * 1024))

    rc, out, err, ctx = run(transcribe_args(JFK), timeout=120, preexec_fn=limit)
    expect_one_line_error(rc, err, ctx, ["model.bin", os.path.basename(MODEL)])
    check("memory" in err.lower() or "allocate" in err.lower(), "the reason should say memory" + ctx)


@case
def model_bin_missing():
    expect_model_error(model_copy("missing"), ["model.bin"])


@case
def model_bin_empty():
    expect_model_error(model_copy("empty", b""), ["model.bin"])


@case
def model_bin_truncated_head():
    expect_model_error(model_copy("trunc_head", real_model_bin(1 << 20)), ["model.bin"])


@case
def model_bin_truncated_tail():
    full = real_model_bin()
    expect_model_error(model_copy("trunc_tail", full[:len(full) - 4096]), ["model.bin"])


@case
def model_bin_corrupt():
    import random
    rnd = random.Random(1234)
    expect_model_error(model_copy("corrupt", bytes(rnd.getrandbits(8) for _ in range(1 << 16))),
                       ["model.bin"])


@case
def model_bin_corrupt_header():
    # the real file with its first kilobyte scrambled (spec names and shapes garbage)
    full = bytearray(real_model_bin())
    for i in range(4, 1024):
        full[i] = (full[i] * 31 + 7) & 0xFF
    expect_model_error(model_copy("corrupt_header", bytes(full)), ["model.bin"])


@case
def config_json_not_json():
    expect_model_error(model_copy("badconfig", real_model_bin(), "{this is not json"),
                       ["config.json"])


@case
def config_json_ids_outside_the_model():
    with open(os.path.join(MODEL, "config.json")) as f:
        real = json.load(f)
    for key, value, names in [("suppress_ids", real["suppress_ids"] + [99999999], ["config.json", "suppress_ids"]),
                              ("suppress_ids_begin", [-5], ["config.json", "suppress_ids_begin"]),
                              ("alignment_heads", [[99, 99]], ["config.json", "alignment_heads"]),
                              ("alignment_heads", [[3, 6]], ["config.json", "alignment_heads"])]:
        cfg = dict(real)
        cfg[key] = value
        expect_model_error(model_copy("cfg_" + key, real_model_bin(), json.dumps(cfg)), names)


@case
def named_model_not_installed():
    env = dict(os.environ)
    env["STENO_MODELS_DIR"] = tmp_path("no_models", "x").rsplit("/", 1)[0]
    rc, out, err, ctx = run(["transcribe", "--model", "tiny.en", "-o", tmp_path("o", "x"), JFK],
                            env=env)
    expect_one_line_error(rc, err, ctx, ["tiny.en"], reason_after_colon=False)
    check("scripts/fetch_model.sh" in err, "should say how to fetch the model" + ctx)


@case
def model_file_instead_of_directory():
    """--model FILE: the error names the file's format and what steno reads (not "Not a
    directory"), for a bare name in the current directory too (a ggml file is read: a zeroed
    header is refused with the reason); generate -m with a file that is
    neither GGUF nor llama2.c says so."""
    import struct
    header = b'{"__metadata__":{}}'
    files = {"ggml-tiny.en.bin": (b"lmgg" + b"\0" * 60, "whisper.cpp ggml"),
             "model.gguf": (b"GGUF\3\0\0\0" + b"\0" * 60, "GGUF"),
             "model.safetensors": (struct.pack("<Q", len(header)) + header, "safetensors"),
             "pytorch_model.pt": (b"PK\3\4" + b"\0" * 60, "PyTorch"),
             "tiny.en.pt": (b"\x80\x02}q\x00.", "pickle")}
    d = os.path.dirname(tmp_path("model_files", "x"))
    for name, (data, word) in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        for model in (os.path.join(d, name), name):  # a path, and a bare name found in the cwd
            p = subprocess.run([STENO] + transcribe_args(JFK, model=model), cwd=d, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            err = p.stderr.decode("utf-8", "replace")
            ctx = "\n  --model %s\n  exit: %d\n  stderr: %r" % (model, p.returncode, err)
            expect_one_line_error(p.returncode, err, ctx, [name])
            if name.startswith("ggml-"):  # steno reads ggml files: this one's header is zeros
                check("hyperparameter 0 is out of range" in err, "a zeroed ggml header should say why%s" % ctx)
                continue
            check(word in err and "CTranslate2" in err and "Not a directory" not in err,
                  "should name the format (%s) and what steno reads%s" % (word, ctx))
    rc, out, err, ctx = run(transcribe_args(JFK, model=os.path.join(MODEL, "model.bin")))
    expect_one_line_error(rc, err, ctx, ["model.bin"])
    check("give the directory" in err, "a CTranslate2 model.bin should be told to give its directory" + ctx)
    missing = os.path.join(d, "models", "ggml-base.en.bin")  # whisper.cpp's usual -m path, absent
    rc, out, err, ctx = run(transcribe_args(JFK, model=missing))
    expect_one_line_error(rc, err, ctx, [missing])
    check("no such model directory" in err and "model.bin:" not in err, "a missing --model should say so" + ctx)
    rc, out, err, ctx = run(["generate", "-m", JFK, "-n", "4", "-p", "Hi"])
    expect_one_line_error(rc, err, ctx, ["jfk.wav"])
    check("neither GGUF nor a llama2.c checkpoint" in err, "generate -m WAV should say what it is not" + ctx)


# ------------------------------------------------------------------------------------------------
# Usage
# ------------------------------------------------------------------------------------------------

@case
def usage_errors_exit_2():
    bad = [
        [],                                                     # no verb
        ["frobnicate"],                                         # unknown verb
        ["transcribe"],                                         # no files
        ["transcribe", "--no-such-option", JFK],
        ["transcribe", "--output-format", "docx", JFK],
        ["transcribe", "-o", "-", "-f", "all", JFK],            # all cannot go to stdout
        ["transcribe", "--temperature", "hot", JFK],
        ["transcribe", "--temperature-increment-on-fallback", "0", JFK],
        ["transcribe", "--threads", "-2", JFK],
        ["transcribe", "--verbose", "maybe", JFK],
        ["transcribe", "--condition-on-previous-text", "perhaps", JFK],
        ["transcribe", "--language", "klingon", JFK],
        ["transcribe", "--model"],                              # missing value
        ["transcribe", "-", "-"],                               # stdin twice
        ["transcribe", "--model", MODEL, "--language", "de", JFK],  # English-only model
        ["transcribe", "--audio-ctx", "2000", JFK],             # more than n_audio_ctx
        ["transcribe", "--audio-ctx", "-1", JFK],
        ["transcribe", "--threads", "100000", JFK],
        ["transcribe", "--task", "summarize", JFK],
        ["transcribe", "--detect-language=yes", JFK],          # a flag takes no value
        ["transcribe", "--model", MODEL, "--task", "translate", JFK],  # needs multilingual
        ["transcribe", "--model", MODEL, "--detect-language", JFK],    # needs multilingual
        ["transcribe", "--model", "base", "--language", "yue", JFK],   # no <|yue|> before large-v3
        ["transcribe", "--weights", "q8_0", "--path", "faithful", JFK],  # quantized: fast path only
        ["transcribe", "--path", "faithful", "--weights", "q4_1", JFK],
        ["transcribe", "--weights", "q8_0", "--compute-type", "float32", JFK],  # they disagree
        ["transcribe", "--compute-type", "float32", "--weights", "f16", JFK],
        ["transcribe", "--path", "faithful", "--weights", "f16", JFK],  # faithful is float32
        ["transcribe", "--compute-type", "float16", "--path", "faithful", JFK],
        ["serve", "--path", "faithful", "--weights", "q8_0", "--port", "0"],
    ]
    for args in bad:
        rc, out, err, ctx = run(args)
        check(rc == 2, "expected usage error (exit 2)" + ctx)
        check(err.strip() != "", "usage error should say something on stderr" + ctx)
        if "translate" in args or "--detect-language" in args:
            check(len(err.strip().splitlines()) == 1 and "multilingual" in err,
                  "expected one line naming the need for a multilingual model" + ctx)
            check(out == "", "nothing on stdout" + ctx)


@case
def transcription_option_values_exit_2():
    # malformed values of the decoding options: one line naming the option, exit 2, before any
    # audio is read (the vocabulary check needs the model, so it comes after loading it, which
    # happens once the first file has decoded)
    bad = [
        ("--clip-timestamps", "1,x"), ("--clip-timestamps", "5,2"), ("--clip-timestamps", "-1"),
        ("--clip-timestamps", "1,,2"), ("--clip-timestamps", "0,nan"), ("--clip-timestamps", "2,1,3"),
        ("--suppress-tokens", "a,1"), ("--suppress-tokens", "-2"), ("--suppress-tokens", "1.5"),
        ("--suppress-tokens", "-1,51864"), ("--suppress-tokens", "99999999"),
        ("--suppress-blank", "maybe"), ("--without-timestamps", "2"),
        ("--carry-initial-prompt", "yes please"),
    ]
    for opt, val in bad:
        rc, out, err, ctx = run(transcribe_args(opt, val, JFK))
        expect_one_line_error(rc, err, ctx, [opt], rc_want=2)


@case
def help_and_version():
    for args in (["--help"], ["transcribe", "--help"], ["--version"]):
        rc, out, err, ctx = run(args)
        check(rc == 0, "expected exit 0" + ctx)
        check(out.strip() != "", "expected output on stdout" + ctx)
    rc, out, err, ctx = run(["--version"])
    check(re.fullmatch(r"steno \d+\.\d+\.\d+\n", out) is not None, "version line %r" % out)


@case
def options_with_underscores_and_none():
    # openai-whisper spellings are accepted; None disables a threshold / the fallback.
    rc, out, err, ctx = run(["transcribe", "--model", MODEL, "--output_dir", "-",
                             "--output_format", "txt", "--temperature_increment_on_fallback",
                             "None", "--logprob_threshold", "None", "--no_speech_threshold",
                             "None", "--compression_ratio_threshold", "None",
                             "--condition_on_previous_text", "False", "--threads", "1",
                             "--language", "en", JFK])
    check(rc == 0, "openai-style options failed" + ctx)
    check("ask not what your country" in out.lower(), "unexpected transcript %r" % out)


def main():
    try:
        for fn in CASES:
            run_case(fn)
        n_fail = sum(1 for _, ok, _ in results if not ok)
        n_pass = len(results) - n_fail
        if n_fail:
            print("\nfailed cases:", file=sys.stderr)
            for name, ok, msg in results:
                if not ok:
                    print("  %s: %s" % (name, msg), file=sys.stderr)
        print("%d passed, %d failed" % (n_pass, n_fail), flush=True)
        return 1 if n_fail else 0
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
