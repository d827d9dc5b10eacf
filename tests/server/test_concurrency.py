"""test_concurrency.py — many clients at once: 16 concurrent transcriptions of different dev clips
each return their own text (equal to the CLI's), concurrent chat completions on two slots return
what each returns alone, and with --parallel 2 the wall time of 8 concurrent requests against 8×
one request is measured and printed (never asserted: timings are for benchmarks); 8 different dev
clips at once on --parallel 8 equal the CLI's, their aggregate audio seconds per second printed
against the same 8 one after another.
"""
import concurrent.futures as cf
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import SANITIZE, Checks, Server, audio, cli_transcribe  # noqa: E402

import openai  # noqa: E402

t = Checks()
CLIPS = ["jfk.wav", "ls_test-clean_1089-134686-0001.wav", "ls_test-clean_1221-135766-0002.wav",
         "ls_dev-clean_1272-141231-0000.flac", "ls_dev-clean_1272-128104-0001.flac", "ls_dev-clean_1272-128104-0000.wav",
         "ls_dev-clean_251-137823-0002.wav", "ls_dev-clean_251-137823-0003.wav", "ls_dev-clean_251-118436-0001.wav",
         "librivox_sense_and_sensibility_01_austen_64kb-0880.wav", "librivox_sense_and_sensibility_01_austen_64kb-0890.wav",
         "librivox_sense_and_sensibility_01_austen_64kb-0930.wav", "arctic_aew_a0001.wav", "arctic_aew_a0002.wav",
         "arctic_aew_a0003.wav", "timit_LDC93S1.wav"]
if SANITIZE:
    CLIPS = CLIPS[:6]


def norm(s):
    return " ".join(s.split())


refs = {c: norm(cli_transcribe(audio(c), "txt")) for c in CLIPS}

with Server(["--whisper-model", "tiny.en", "--llm-model", "smollm2", "--parallel", "2", "--threads", "1"]) as s:
    client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=900)

    def transcribe(clip):
        with open(audio(clip), "rb") as f:
            return clip, client.audio.transcriptions.create(model="whisper-1", file=f, response_format="text")

    with cf.ThreadPoolExecutor(len(CLIPS)) as ex:
        results = list(ex.map(transcribe, CLIPS))
    for clip, text in results:
        t.check(norm(text) == refs[clip], f"{clip} concurrent: {text!r} vs CLI {refs[clip]!r}")
    print(f"{len(CLIPS)} concurrent transcriptions: {sum(norm(x) == refs[c] for c, x in results)} equal the CLI's")

    # chat: each prompt alone, then all at once on two slots
    prompts = ["What is the capital of France?", "Name three colors.", "What is 2 plus 2?", "Say hello in Spanish."]

    def chat(p):
        r = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": p}],
                                           temperature=0, max_tokens=24)
        return r.choices[0].message.content

    alone = [chat(p) for p in prompts]
    with cf.ThreadPoolExecutor(len(prompts)) as ex:
        together = list(ex.map(chat, prompts * 2))
    t.check(together == alone * 2, f"concurrent chat differs from solo:\n{together}\n{alone}")

    # 8 requests at once vs one alone, --parallel 2 (printed, not asserted)
    JFK = "jfk.wav"
    transcribe(JFK)  # warm
    t0 = time.time()
    transcribe(JFK)
    one = time.time() - t0
    t0 = time.time()
    with cf.ThreadPoolExecutor(8) as ex:
        eight = list(ex.map(transcribe, [JFK] * 8))
    wall = time.time() - t0
    t.check(all(norm(x) == refs[JFK] for _, x in eight), "8 concurrent jfk transcriptions")
    print(f"--parallel 2: one request {one:.2f} s; 8 concurrent {wall:.2f} s = {wall / one:.2f}x one request "
          f"(8x would be {8 * one:.2f} s)")

# 8 different dev clips at once on --parallel 8 (--threads 1 each) against the same 8 one after
# another on --parallel 1 (all CPUs for each): each text equals the CLI's; aggregate audio seconds
# per second of each (printed, not asserted). The 8 slots' decoder steps are batched across
# requests and their encoder passes share one pool (--whisper-batch on, the default;
# test_whisper_xbatch.py covers it in depth).
if not SANITIZE:
    DEV = [c for c in CLIPS if c.startswith("ls_dev-clean")] + ["ls_test-clean_1089-134686-0001.wav",
                                                                 "ls_test-clean_1221-135766-0002.wav"]
    DEV = DEV[:8]

    def run_clips(args, concurrent):
        with Server(["--whisper-model", "tiny.en"] + args) as s:
            client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=900)

            def transcribe_v(clip):
                with open(audio(clip), "rb") as f:
                    r = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json")
                return clip, r.text, r.duration

            transcribe_v(DEV[0])  # warm
            t0 = time.time()
            if concurrent:
                with cf.ThreadPoolExecutor(len(DEV)) as ex:
                    out = list(ex.map(transcribe_v, DEV))
            else:
                out = [transcribe_v(c) for c in DEV]
            return out, time.time() - t0

    seq, t_seq = run_clips(["--parallel", "1"], False)
    par, t_par = run_clips(["--parallel", "8", "--threads", "1"], True)
    total = sum(d for _, _, d in par)
    for clip, text, _ in seq + par:
        t.check(norm(text) == refs[clip], f"{clip} (--parallel 1 / 8): {text!r} vs CLI {refs[clip]!r}")
    print(f"{len(DEV)} dev clips ({total:.1f} s of audio): one after another on --parallel 1 {t_seq:.2f} s = "
          f"{total / t_seq:.1f} audio s/s; all at once on --parallel 8 (decoder steps batched across requests) {t_par:.2f} s = {total / t_par:.1f} audio s/s "
          f"({t_seq / t_par:.2f}x)")

t.finish()
