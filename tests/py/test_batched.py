#!/usr/bin/env python3
"""test_batched.py — batched long-form transcription (`steno transcribe --batch-size N`,
steno_transcribe_batched; issue #14 item 3, docs/VAD.md "Batched mode").

Inputs (build_inputs, shared with tools/oracle_batched.py so that both see the same samples):
  joined    13 English 16 kHz dev clips with 1-2 s of zeros between them (~110 s, 4 chunks)
  padded    3 s of zeros + jfk.wav + 3 s of zeros (one chunk)
  silence   20 s of zeros (no speech: no segment)

Checks:
  1. batch invariance: on `joined`, every segment's tokens (and text, times) with --batch-size 3
     and 8 equal those with --batch-size 1, with --threads 1 and 2 (greedy rows, --beam-size 1;
     with STENO_TEST_FULL=1 also every batch size x thread count pair, and the same with beam
     search, the batched default); the row step is bit-identical to the single-row one, so any
     difference is a bug. Beam rows are covered in CI by checks 2 and 3 (--batch-size 8 against
     each chunk decoded alone);
  2. solo decoding: each chunk (spans from `steno vad` with the batched VAD options, joined as
     faster-whisper's collect_chunks does) transcribed alone by the sequential driver with the
     batched mode's settings (--beam-size 5 --without-timestamps True, no previous text, no
     fallback, no no-speech skip) gives the same tokens as that chunk in the batched run; with the
     default weights and with --weights q8_0 (--batch-size 8);
  3. parity with faster-whisper 1.2.1's BatchedInferencePipeline (batch_size 8, its defaults,
     ctranslate2 4.8.5, float32, tiny.en): the fixtures tests/fixtures/oracle_batched/*.json
     (tools/oracle_batched.py): segment starts, ends and tokens equal;
  4. bad --batch-size values (0, -1, 65, x, with --word-timestamps True or --vad False) are refused with one
     line and exit 2;
  5. quantized weights (--weights q8_0) in batched mode transcribe `padded` (jfk.wav's words).
Under ASan+UBSan (STENO_SANITIZE=1) checks 1-2 run on `padded` plus the first two chunks of
`joined` (batch sizes 1 and 3, threads 2), check 3 on `padded` and `silence`.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

SR = 16000
JOINED = ["ls_test-clean_1221-135766-0001.wav", "ls_test-clean_1221-135766-0002.wav", "jfk.wav",
          "ls_test-clean_1089-134686-0001.wav", "picovoice_diarization_test.wav",
          "ls_dev-clean_1272-128104-0000.wav", "ls_dev-clean_251-137823-0002.wav",
          "ls_dev-clean_251-137823-0003.wav", "ls_dev-clean_251-118436-0001.wav",
          "librivox_sense_and_sensibility_01_austen_64kb-0870.wav",
          "librivox_sense_and_sensibility_01_austen_64kb-0890.wav", "arctic_aew_a0001.wav",
          "arctic_aew_a0002.wav"]
# the batched mode's VAD (BatchedInferencePipeline.transcribe: VadOptions(max_speech_duration_s=30,
# min_silence_duration_ms=160), the rest default)
VAD_ARGS = ["--max-speech-duration-s", "30", "--min-silence-duration-ms", "160"]


def build_inputs(tmp, names=None):
    """[(name, path)]: 16-bit 16 kHz WAVs in tmp."""
    audio = se.audio_dir()
    joined = []
    for i, f in enumerate(JOINED):
        joined += se.read_wav16k(os.path.join(audio, f)) + [0] * (SR * (1 + i % 2))
    jfk = se.read_wav16k(os.path.join(audio, "jfk.wav"))
    cases = [("joined", joined), ("padded", [0] * (3 * SR) + jfk + [0] * (3 * SR)), ("silence", [0] * (20 * SR))]
    out = []
    for name, samples in cases:
        if names and name not in names:
            continue
        p = os.path.join(tmp, name + ".wav")
        se.write_wav16k(p, samples)
        out.append((name, p))
    return out


def collect_chunks(spans, max_samples=30 * SR):
    """faster_whisper/vad.py collect_chunks over sample spans: [(joined start, length)] of the
    speech joined back to back (a span that does not fit starts the next chunk)."""
    chunks, cur, total, at, cur_at = [], 0, 0, 0, 0
    for s, e in spans:
        if cur + e - s > max_samples:
            chunks.append((cur_at, cur))
            total += cur
            cur_at, cur = at, e - s
        else:
            cur += e - s
        at += e - s
    chunks.append((cur_at, cur))
    return chunks


def batched(path, out_dir, bs, threads, extra=()):
    args = ["--batch-size", str(bs), "--threads", str(threads)] + list(extra)
    res, wall = se.transcribe([path], out_dir, args)
    return res[path], wall


def seg_view(res):
    return [(s["start"], s["end"], s["tokens"], s["text"]) for s in res["segments"]]


def main():
    failures = []
    sanitize = se.sanitize()
    with tempfile.TemporaryDirectory(prefix="steno_batched_") as tmp:
        inputs = dict(build_inputs(tmp))
        wall = {}

        # 1. batch invariance
        if sanitize:
            plans = [("padded", [], [(1, 2), (3, 2)])]
        elif se.full():
            plans = [("joined", [], [(8, 2), (1, 1), (3, 1), (8, 1), (1, 2), (3, 2)]),
                     ("joined", ["--beam-size", "1"], [(1, 1), (3, 1), (8, 1), (1, 2), (3, 2), (8, 2)])]
        else:  # beam rows at the faster-whisper default; greedy rows over batch sizes 1, 3, 8 and threads 1, 2
            plans = [("joined", [], [(8, 2)]),
                     ("joined", ["--beam-size", "1"], [(1, 1), (3, 2), (8, 1)])]
        base = {}
        for name, extra, runs in plans:
            ref = None
            for bs, th in runs:
                res, dt = batched(inputs[name], os.path.join(tmp, "b%d_%d" % (bs, th)), bs, th, extra)
                wall["%s %s bs=%d t=%d" % (name, " ".join(extra) or "beam5", bs, th)] = dt
                if ref is None:
                    ref = res
                    base[(name, tuple(extra))] = res
                    if not res["segments"]:
                        failures.append("%s: no segments at all" % name)
                    continue
                if seg_view(res) != seg_view(ref):
                    a, b = seg_view(ref), seg_view(res)
                    diff = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
                    failures.append("%s %s: --batch-size %d --threads %d differs from --batch-size %d --threads %d "
                                    "at segment %d" % (name, extra, bs, th, runs[0][0], runs[0][1], diff))
            if len(runs) > 1:
                print("%s %s: %d segments, identical for %s" % (name, extra or "(beam 5)", len(ref["segments"]),
                                                                 ", ".join("bs=%d t=%d" % r for r in runs)))

        # 2. each chunk decoded alone by the sequential driver
        name = "padded" if sanitize else "joined"
        path = inputs[name]
        rc, out, err, _ = se.run([se.steno_bin(), "vad", "--output-format", "json", "--threads", "2"] + VAD_ARGS +
                                 [path])
        if rc != 0:
            se.fail("steno vad failed: %s" % err)
        doc = json.loads(out)
        doc = doc[0] if isinstance(doc, list) else doc
        spans = [(s["start_sample"], s["end_sample"]) if "start_sample" in s else (s["start"], s["end"])
                 for s in doc["spans"]]
        samples = se.read_wav16k(path)
        speech = []
        for s, e in spans:
            speech += samples[s:e]
        chunks = collect_chunks(spans)
        if sanitize:
            chunks = chunks[:2]
        solo_paths = []
        for i, (at, n) in enumerate(chunks):
            p = os.path.join(tmp, "chunk%d.wav" % i)
            se.write_wav16k(p, speech[at:at + n])
            solo_paths.append(p)
        # the default float16 weights, and the Lab --weights q8_0 (every product on the x8 kernels,
        # the encoder's too: a batched row takes the very operations of the single-token step)
        for weights in ([], ["--weights", "q8_0"]):
            tag = " ".join(weights) or "f16"
            if weights:
                res = batched(path, os.path.join(tmp, "solo_bq"), 8, 2, weights)[0]
            else:
                res = base[(name, ())] if (name, ()) in base else batched(path, os.path.join(tmp, "solo_b"), 3, 2)[0]
            by_seek = {}
            for s in res["segments"]:
                by_seek.setdefault(s["seek"], []).extend(s["tokens"])
            solo, dt = se.transcribe(solo_paths, os.path.join(tmp, "solo_" + tag.replace(" ", "_")),
                                     ["--threads", "2", "--beam-size", "5", "--without-timestamps", "True",
                                      "--condition-on-previous-text", "False", "--temperature-increment-on-fallback",
                                      "None", "--no-speech-threshold", "None"] + weights)
            wall["solo chunks " + tag] = dt
            offset = 0
            for i, (at, n) in enumerate(chunks):
                seek = int(offset / SR * 100)
                offset += n
                alone = [t for s in solo[solo_paths[i]]["segments"] for t in s["tokens"]]
                got = by_seek.get(seek)
                if got != alone:
                    failures.append("%s %s chunk %d (seek %d): batched tokens %s != alone %s" %
                                    (name, tag, i, seek, got, alone))
            print("%s (%s): %d chunks, each equal to the chunk transcribed alone" % (name, tag, len(chunks)))

        # 3. faster-whisper BatchedInferencePipeline parity
        fx_dir = se.fixtures_dir("oracle_batched")
        names = ["padded", "silence"] if sanitize else ["joined", "padded", "silence"]
        for name in names:
            with open(os.path.join(fx_dir, name + ".json"), encoding="utf-8") as f:
                fx = json.load(f)
            res = base.get((name, ()))
            if res is None or name != "joined":
                res, dt = batched(inputs[name], os.path.join(tmp, "fw_" + name), 8, 2)
            mine = [(round(s["start"], 3), round(s["end"], 3), s["tokens"]) for s in res["segments"]]
            theirs = [(s["start"], s["end"], s["tokens"]) for s in fx["segments"]]
            if mine != theirs:
                failures.append("%s: segments differ from faster-whisper's BatchedInferencePipeline:\n  steno %s\n"
                                "  fw    %s" % (name, mine, theirs))
            else:
                print("%s: %d segments equal faster-whisper's (start, end, tokens)" % (name, len(mine)))

        # 5. quantized weights (--weights q8_0): the row step dequantizes each row's token embedding
        # (it read the quantized blocks as float32 once, and the transcript was "And")
        q = batched(inputs["padded"], os.path.join(tmp, "q8_0"), 2, 2, ["--weights", "q8_0"])[0]
        qtext = " ".join(s["text"] for s in q["segments"]).lower()
        if "what you can do for your country" not in qtext:
            failures.append("--weights q8_0 --batch-size 2 on padded: %r" % qtext)
        print("--weights q8_0 batched: %r" % qtext.strip())

        # 6. a temperature decodes as temperature 0 (faster-whisper passes it to CTranslate2 with
        # sampling_topk 1, whose argmax never reads it) and is reported in the segments
        cold = batched(inputs["padded"], os.path.join(tmp, "t0"), 2, 2, ["--beam-size", "1"])[0]
        for t in ("1", "2"):
            hot = batched(inputs["padded"], os.path.join(tmp, "t" + t), 2, 2, ["--beam-size", "1", "--temperature", t])[0]
            if seg_view(hot) != seg_view(cold) or [s["avg_logprob"] for s in hot["segments"]] != \
                    [s["avg_logprob"] for s in cold["segments"]]:
                failures.append("--batch-size 2 --temperature %s: segments differ from temperature 0" % t)
            if any(s["temperature"] != float(t) for s in hot["segments"]):
                failures.append("--batch-size 2 --temperature %s: segments report %r" %
                                (t, [s["temperature"] for s in hot["segments"]]))
        print("batched --temperature 1, 2: the temperature-0 segments, the temperature reported")

        # 4. bad values
        for bad in (["--batch-size", "0"], ["--batch-size", "-1"], ["--batch-size", "65"], ["--batch-size", "x"],
                    ["--batch-size", "4", "--word-timestamps", "True"], ["--batch-size", "4", "--vad", "False"]):
            rc, out, err, _ = se.run([se.steno_bin(), "transcribe", "--model", se.model_dir(), "-o", "-"] + bad +
                                     [inputs["padded"]])
            lines = [ln for ln in err.splitlines() if ln.strip()]
            if rc != 2 or len(lines) != 1 or "batch" not in lines[0]:
                failures.append("%s: expected one line naming --batch-size and exit 2, got rc %d: %r" % (bad, rc, err))
        # the batched default beam (5) is known when the options are checked: an out-of-range
        # --patience is a usage error before any file, as with an explicit --beam-size
        rc, out, err, _ = se.run([se.steno_bin(), "transcribe", "--model", se.model_dir(), "-o", "-", "--batch-size",
                                  "4", "--patience", "0.0001", inputs["padded"], inputs["padded"]])
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if rc != 2 or len(lines) != 1 or "--patience" not in lines[0]:
            failures.append("--batch-size 4 --patience 0.0001: expected one usage line and exit 2, got rc %d: %r" %
                            (rc, err))
        print("bad --batch-size values refused")
        for k, v in wall.items():
            print("  wall %-40s %.1f s" % (k, v))
    if failures:
        se.fail("\n".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
