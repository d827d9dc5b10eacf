#!/usr/bin/env python3
"""oracle_options.py — writes tests/fixtures/oracle_options/*.json: faster-whisper's output with
the transcription options prefix, hotwords, without_timestamps, suppress_tokens, suppress_blank,
clip_timestamps and initial_prompt, and the decoder prompts of get_prompt (prompts.json).

Oracle settings: those of tools/oracle_faster_whisper.py (tiny.en, CT2 float32, cpu_threads=2,
greedy, the temperature ladder, openai-whisper transcribe() defaults), with one option changed per
case (CASES below). One fixture per case:

  {case, description, steno_args, runs: [{file, options, steno_args, segments: [{id, seek, start,
   end, text, tokens, temperature}], text}], oracle: {...}}

prompts.json holds the prompt construction checked by tests/unit/test_prompt.c:
  * get_prompt: faster-whisper 1.2.1 WhisperModel.get_prompt(tokenizer, previous_tokens,
    without_timestamps, prefix, hotwords) on a few inputs, and its text tokenization;
  * carry: openai-whisper's carry_initial_prompt rule (transcribe.py as of openai/whisper c0d2f62,
    re-stated in carry_reference() below, since faster-whisper has no such option), with the cut
    that DecodingTask._get_initial_tokens applies (prompt[-(n_text_ctx // 2 - 1):]).

CI does not run this script (pip install faster-whisper==1.2.1 ctranslate2==4.8.5).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
sys.path.insert(0, HERE)
import steno_eval  # noqa: E402
from oracle_faster_whisper import OPTIONS, sha256_16, write_json  # noqa: E402

JFK = "jfk.wav"
HESTER = "ls_test-clean_1221-135766-0002.wav"
CHEST = "ls_dev-clean_1272-141231-0002.flac"
ARCTIC = "arctic_aew_a0001.wav"
TED = "tedlium_long_120s.flac"

# (case, description, [(clip, {option: value}, [steno args])])
CASES = [
    ("prefix", "prefix forced after <|0.00|> in the first window", [
        (JFK, {"prefix": "And so my fellow"}, ["--prefix", "And so my fellow"]),
        (HESTER, {"prefix": "Yet these"}, ["--prefix", "Yet these"]),
        (CHEST, {"prefix": "The cut on his chest"}, ["--prefix", "The cut on his chest"]),
        (ARCTIC, {"prefix": "Author of"}, ["--prefix", "Author of"]),
    ]),
    ("prefix_without_timestamps", "prefix after <|notimestamps|>", [
        (JFK, {"prefix": "And so my", "without_timestamps": True},
         ["--prefix", "And so my", "--without-timestamps", "True"]),
        (CHEST, {"prefix": "The cut", "without_timestamps": True},
         ["--prefix", "The cut", "--without-timestamps", "True"]),
    ]),
    ("hotwords", "hotwords after <|startofprev|> in every window", [
        (JFK, {"hotwords": "Kennedy inaugural address"}, ["--hotwords", "Kennedy inaugural address"]),
        (HESTER, {"hotwords": "Hester Prynne"}, ["--hotwords", "Hester Prynne"]),
        (CHEST, {"hotwords": "arena spectators"}, ["--hotwords", "arena spectators"]),
        (TED, {"hotwords": "CO2 energy climate", "clip_timestamps": "40,75"},
         ["--hotwords", "CO2 energy climate", "--clip-timestamps", "40,75"]),
    ]),
    ("without_timestamps", "<|notimestamps|>: one segment per window", [
        (c, {"without_timestamps": True}, ["--without-timestamps", "True"])
        for c in (JFK, HESTER, CHEST, ARCTIC)
    ]),
    ("suppress_tokens", "-1 plus ' the', ' and', ',' and '.'", [
        (c, {"suppress_tokens": [-1, 262, 290, 11, 13]}, ["--suppress-tokens", "-1,262,290,11,13"])
        for c in (JFK, HESTER, CHEST)
    ]),
    ("suppress_blank", "suppress_blank=False", [
        (c, {"suppress_blank": False}, ["--suppress-blank", "False"]) for c in (JFK, HESTER, CHEST, ARCTIC)
    ]),
    ("clip_timestamps", "seek restricted to clips; an odd count ends at the end", [
        (JFK, {"clip_timestamps": "2,7"}, ["--clip-timestamps", "2,7"]),
        (CHEST, {"clip_timestamps": "1.5,6,8"}, ["--clip-timestamps", "1.5,6,8"]),
        (HESTER, {"clip_timestamps": "0.5,2.25,2.5,4.8"}, ["--clip-timestamps", "0.5,2.25,2.5,4.8"]),
        (TED, {"clip_timestamps": "40,75"}, ["--clip-timestamps", "40,75"]),
    ]),
    ("initial_prompt", "initial_prompt in the first window's prompt (with carry_initial_prompt, "
     "which changes nothing in a single window, on one run)", [
        (JFK, {"initial_prompt": "President Kennedy's inaugural address, 1961."},
         ["--initial-prompt", "President Kennedy's inaugural address, 1961."]),
        (HESTER, {"initial_prompt": "Hester Prynne"},
         ["--initial-prompt", "Hester Prynne", "--carry-initial-prompt", "True"]),
        (CHEST, {"initial_prompt": "The arena."}, ["--initial-prompt", "The arena."]),
    ]),
    ("initial_prompt_no_condition", "initial_prompt with condition_on_previous_text=False: the first "
     "window still sees it", [
        (JFK, {"initial_prompt": "President Kennedy's inaugural address, 1961.",
               "condition_on_previous_text": False},
         ["--initial-prompt", "President Kennedy's inaugural address, 1961.",
          "--condition-on-previous-text", "False"]),
        (TED, {"initial_prompt": "A TED talk about energy.", "condition_on_previous_text": False,
               "clip_timestamps": "75,110"},
         ["--initial-prompt", "A TED talk about energy.", "--condition-on-previous-text", "False",
          "--clip-timestamps", "75,110"]),
    ]),
]


def carry_reference(all_tokens, n_initial, prompt_reset_since, n_text_ctx=448):
    """openai-whisper transcribe.py (c0d2f62), carry_initial_prompt=True:
         remaining_prompt_length = n_text_ctx // 2 - 1 - len(initial_prompt_tokens)
         nignored = max(len(initial_prompt_tokens), prompt_reset_since)
         remaining_prompt = all_tokens[nignored:][-remaining_prompt_length:]
         decode_options["prompt"] = initial_prompt_tokens + remaining_prompt
       then decoding.py: prompt_tokens[-(n_ctx // 2 - 1):]."""
    initial = all_tokens[:n_initial]
    remaining = n_text_ctx // 2 - 1 - n_initial
    nignored = max(n_initial, prompt_reset_since)
    prompt = initial + all_tokens[nignored:][-remaining:]
    return prompt[-(n_text_ctx // 2 - 1):]


def plain_reference(all_tokens, prompt_reset_since, n_text_ctx=448):
    return all_tokens[prompt_reset_since:][-(n_text_ctx // 2 - 1):]


def prompts_fixture(model, tokenizer):
    gp = []
    prev_short = [843, 523, 616, 5891, 3399]
    prev_long = list(range(1000, 1300))  # 300 tokens: only the last 223 are kept
    long_text = " ".join(["word%d" % i for i in range(200)])  # > 224 tokens: cut to 223
    inputs = [
        ("plain", [], False, None, None),
        ("previous", prev_short, False, None, None),
        ("previous_long", prev_long, False, None, None),
        ("no_timestamps", prev_short, True, None, None),
        ("prefix", [], False, "And so my", None),
        ("prefix_previous", prev_short, False, "  And so my  ", None),
        ("prefix_no_timestamps", [], True, "And so my", None),
        ("hotwords", [], False, None, "Kennedy, Hester Prynne"),
        ("hotwords_previous", prev_short, False, None, "Kennedy"),
        ("hotwords_and_prefix", prev_short, False, "And so", "Kennedy"),
        ("hotwords_and_prefix_no_previous", [], False, "And so", "Kennedy"),
        ("hotwords_long", prev_long, True, None, long_text),
        ("prefix_long", [], False, long_text, None),
    ]
    for name, prev, nots, prefix, hot in inputs:
        gp.append({
            "name": name, "previous": prev, "without_timestamps": nots, "prefix": prefix,
            "hotwords": hot,
            "prompt": model.get_prompt(tokenizer, prev, without_timestamps=nots, prefix=prefix,
                                       hotwords=hot),
        })
    # carry_initial_prompt: a transcript of windows; prompts seen by each window
    carry = []
    for name, n_initial, windows, resets in [
        ("short_initial", 5, [[10 + i for i in range(60)]] * 6, [False, False, True, False, False, False]),
        ("long_initial", 200, [[3000 + i for i in range(40)]] * 4, [False] * 4),
        ("initial_223", 223, [[4000 + i for i in range(10)]] * 3, [False] * 3),
        ("initial_260", 260, [[5000 + i for i in range(10)]] * 3, [False, True, False]),
        ("no_initial", 0, [[6000 + i for i in range(120)]] * 3, [False] * 3),
    ]:
        all_tokens = [20000 + i for i in range(n_initial)]
        reset = 0
        steps = []
        for w, r in zip(windows, resets):
            steps.append({
                "n_all": len(all_tokens), "prompt_reset_since": reset,
                "carry": carry_reference(all_tokens, n_initial, reset),
                "plain": plain_reference(all_tokens, reset),
            })
            all_tokens = all_tokens + [t + len(all_tokens) for t in w]
            if r:
                reset = len(all_tokens)
        carry.append({"name": name, "n_initial": n_initial, "all_tokens": all_tokens, "steps": steps})
    enc = [{"text": t, "ids": tokenizer.encode(" " + t.strip())}
           for t in ["And so my fellow", "  Kennedy, Hester Prynne \n", "", long_text]]
    return {"tool": "tools/oracle_options.py", "get_prompt": gp, "carry": carry, "encode": enc,
            "sot_sequence": list(tokenizer.sot_sequence), "max_length": model.max_length}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "oracle_options"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases", nargs="*", help="only these cases")
    args = ap.parse_args()
    model_dir = steno_eval.model_dir()

    import ctranslate2
    import faster_whisper
    from faster_whisper import WhisperModel
    from faster_whisper.audio import decode_audio
    from faster_whisper.tokenizer import Tokenizer

    model = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=args.threads)
    tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe",
                          language="en")
    info = {
        "tool": "tools/oracle_options.py", "faster_whisper": faster_whisper.__version__,
        "ctranslate2": ctranslate2.__version__,
        "model_dir": os.path.basename(os.path.normpath(model_dir)),
        "model_sha256_16": sha256_16(os.path.join(model_dir, "model.bin")),
        "device": "cpu", "compute_type": "float32", "cpu_threads": args.threads,
        "base_options": OPTIONS,
    }
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "prompts.json"), prompts_fixture(model, tokenizer))
    rows = {r["file"]: r for r in steno_eval.read_manifest()}
    for case, desc, runs in CASES:
        if args.cases and case not in args.cases:
            continue
        out_runs = []
        for clip, opts, steno_args in runs:
            audio = decode_audio(rows[clip]["path"], sampling_rate=16000)
            o = dict(OPTIONS)
            o.update(opts)
            segments, _ = model.transcribe(audio, **o)
            segs = [{"id": s.id, "seek": s.seek, "start": round(s.start, 3), "end": round(s.end, 3),
                     "text": s.text, "tokens": list(s.tokens), "temperature": s.temperature,
                     "avg_logprob": s.avg_logprob} for s in segments]
            out_runs.append({"file": clip, "options": opts, "steno_args": steno_args,
                             "text": "".join(s["text"] for s in segs), "segments": segs})
            print("%-22s %-40s %2d segs  %s" % (case, clip, len(segs),
                                                out_runs[-1]["text"].strip()[:70]), flush=True)
        write_json(os.path.join(args.out, case + ".json"),
                   {"case": case, "description": desc, "runs": out_runs, "oracle": info})


if __name__ == "__main__":
    main()
