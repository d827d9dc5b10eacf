"""test_transcribe_vad.py — `steno transcribe --vad` against faster-whisper 1.2.1's
transcribe(vad_filter=True) (issue #14: the hallucination cases), on inputs this file builds:

  silence_jfk_silence   10 s of zeros + jfk.wav + 10 s of zeros, --word-timestamps True
  two_clips_gap         two dev clips with 3 s of zeros between them
  digital_silence_30s   30 s of zeros
  pink_noise_30s        30 s of pink noise at -50 dBFS RMS (fixed seed)

For each: the tokens (text and timestamp tokens, up to a segment decoded at T > 0 on either side)
equal tests/fixtures/oracle_vad/<name>.json (tools/oracle_vad_transcribe.py); segment times equal
to the 10 ms the mapping rounds to (with words: the word times, within 20 ms, as the word
timestamp gate allows); and the judged properties themselves: silence and noise give an empty
transcript; no segment of silence_jfk_silence starts inside the silences (before 10 s less the
400-ms speech pad, or after the clip's end) and its text equals jfk.wav's alone; 35 s of zeros + the
German dev clip with --model base: the language detected with --vad is de (without it, the leading
silence makes base say en, which is printed). Runs the same under
the sanitizer build (four short inputs). Standard library only.
"""

import json
import math
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

SR = 16000
DE_CLIP = "picovoice_leopard_test_de.wav"


def pink_noise(n, dbfs, seed=20261201):
    """Paul Kellet's economy pink filter over uniform white noise, scaled to dbfs RMS, as int16."""
    rng = random.Random(seed)
    b0 = b1 = b2 = 0.0
    out = []
    for _ in range(n):
        w = rng.uniform(-1.0, 1.0)
        b0 = 0.99765 * b0 + w * 0.0990460
        b1 = 0.96300 * b1 + w * 0.2965164
        b2 = 0.57000 * b2 + w * 1.0526913
        out.append(b0 + b1 + b2 + w * 0.1848)
    rms = math.sqrt(sum(x * x for x in out) / n)
    g = 10 ** (dbfs / 20.0) / rms * 32767.0
    return [int(round(x * g)) for x in out]


def build_inputs(tmp):
    """[(name, path, word_timestamps)]: 16-bit 16 kHz WAVs in tmp."""
    jfk = se.read_wav16k(os.path.join(se.audio_dir(), "jfk.wav"))
    a = se.read_wav16k(os.path.join(se.audio_dir(), "ls_test-clean_1089-134686-0001.wav"))
    b = se.read_wav16k(os.path.join(se.audio_dir(), "arctic_aew_a0002.wav"))
    zeros = lambda s: [0] * int(s * SR)  # noqa: E731
    cases = [("silence_jfk_silence", zeros(10) + list(jfk) + zeros(10), True),
             ("two_clips_gap", list(a) + zeros(3) + list(b), False),
             ("digital_silence_30s", zeros(30), False),
             ("pink_noise_30s", pink_noise(30 * SR, -50.0), False)]
    out = []
    for name, samples, words in cases:
        p = os.path.join(tmp, name + ".wav")
        se.write_wav16k(p, samples)
        out.append((name, p, words))
    return out


def greedy_tokens(segs):
    toks = []
    for s in segs:
        if float(s.get("temperature", 0.0)) > 0.0:
            break
        toks.extend(s["tokens"])
    return toks


def main():
    fx_dir = se.fixtures_dir("oracle_vad")
    failures = []
    with tempfile.TemporaryDirectory(prefix="steno_vadtr_") as tmp:
        inputs = build_inputs(tmp)
        results = {}
        for name, path, words in inputs:
            extra = ["--vad", "True"] + (["--word-timestamps", "True"] if words else [])
            res, wall = se.transcribe([path], os.path.join(tmp, name), extra)
            results[name] = res[path]
        jfk_alone, _ = se.transcribe([os.path.join(se.audio_dir(), "jfk.wav")], os.path.join(tmp, "jfk"))
        jfk_text = jfk_alone[os.path.join(se.audio_dir(), "jfk.wav")]["text"]
        for name, path, words in inputs:
            with open(os.path.join(fx_dir, name + ".json"), encoding="utf-8") as f:
                oracle = json.load(f)
            got = results[name]
            segs, osegs = got.get("segments", []), oracle["segments"]
            same_tokens = greedy_tokens(segs) == greedy_tokens(osegs)
            times_ok = len(segs) == len(osegs)
            tol = 0.02 if words else 0.0051
            for s, o in zip(segs, osegs):
                times_ok &= abs(s["start"] - o["start"]) <= tol and abs(s["end"] - o["end"]) <= tol
                for w, ow in zip(s.get("words", []), o.get("words", [])):
                    times_ok &= w["word"] == ow["word"] and abs(w["start"] - ow["start"]) <= 0.02 and \
                        abs(w["end"] - ow["end"]) <= 0.02
            print("%-22s %d segments (faster-whisper %d), tokens %s, times %s: %r" % (
                name, len(segs), len(osegs), "same" if same_tokens else "DIFFER", "same" if times_ok else "DIFFER",
                got.get("text", "")[:60]))
            if not same_tokens:
                failures.append("%s: tokens differ from faster-whisper's vad_filter run" % name)
            if not times_ok:
                failures.append("%s: segment/word times differ: %s vs %s" % (
                    name, [(s["start"], s["end"]) for s in segs], [(o["start"], o["end"]) for o in osegs]))
        for name in ("digital_silence_30s", "pink_noise_30s"):
            if results[name].get("text", "").strip() or results[name].get("segments"):
                failures.append("%s: --vad should give an empty transcript, got %r" % (name, results[name]["text"]))
        sjs = results["silence_jfk_silence"]
        clip_end = 10.0 + 176000 / SR
        for s in sjs.get("segments", []):
            if s["start"] < 10.0 - 0.4 or s["start"] > clip_end:
                failures.append("silence_jfk_silence: a segment starts at %.2f s, inside the silence" % s["start"])
        if se.normalize_en(sjs.get("text", "")) != se.normalize_en(jfk_text):
            failures.append("silence_jfk_silence: text %r, jfk.wav alone gives %r" % (sjs.get("text"), jfk_text))
        print("silence + jfk.wav + silence: %r; jfk.wav alone: %r" % (sjs.get("text", ""), jfk_text))
        # language detection on the first speech, not on 30 s of leading silence (multilingual base)
        de = os.path.join(tmp, "silence35_de.wav")
        se.write_wav16k(de, [0] * (35 * SR) + se.read_wav16k(os.path.join(se.audio_dir(), DE_CLIP)))
        langs = {}
        for vad in ("False", "True"):
            res, _ = se.transcribe([de], os.path.join(tmp, "de_" + vad), ["--model", "base", "--vad", vad])
            langs[vad] = res[de].get("language")
        print("35 s of zeros + %s, --model base: language %s without --vad, %s with it" % (
            DE_CLIP, langs["False"], langs["True"]))
        if langs["True"] != "de":
            failures.append("35 s of silence + a German clip: --vad detected %r, not de" % langs["True"])
    if failures:
        se.fail("\n  ".join(["--vad:"] + failures))
    print("PASS")


if __name__ == "__main__":
    main()
