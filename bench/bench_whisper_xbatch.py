#!/usr/bin/env python3
"""bench_whisper_xbatch.py — Whisper across requests (issue #12 item 4): the aggregate audio
seconds per second of 8 transcription requests of different dev clips (3 to 30 s; 9 windows)

  seq      one after another on `steno serve --parallel 1 --threads T` (all threads for each)
  p8-off   all at once on `--parallel 8 --threads 1 --whisper-batch off` (8 independent slots)
  p8-on    all at once on `--parallel 8 --threads 1` (decoder steps batched across requests and
           encoder passes on the shared pool of T threads, whisper/decoder/step_batcher.h)

interleaved (the order rotates every repetition), medians and ratios. Every text must equal the
sequential run's (a mismatch is reported and exits 1). Besides the wall time it reports audio
seconds per CPU second of the server process (/proc/PID/stat), which a shared machine's other
load distorts less: there, 8 busy threads simply get a larger share of the cores than 2. For p8-on it also prints the server's
/metrics split: seconds in batched decoder steps and in encoder passes, rows per step. Each
configuration starts its own server; the warm-up request is not timed.
  STENO_BIN=build/steno ~/.cache/steno/venv-server/bin/python bench/bench_whisper_xbatch.py \\
      --model tiny.en --reps 3 [--beam 5]
"""
import argparse
import concurrent.futures as cf
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "server"))
from serverlib import Server, audio  # noqa: E402

import openai  # noqa: E402

CLIPS = ["ls_dev-clean_1272-128104-0004_8k.wav", "ls_dev-clean_1272-141231-0002.flac",
         "ls_dev-clean_1272-141231-0000.flac", "ls_dev-clean_1272-128104-0001.flac",
         "ls_dev-clean_1272-128104-0000.wav", "ls_dev-clean_251-137823-0002.wav",
         "ls_dev-clean_251-118436-0001.wav", "asterisk_en_demo-congrats.wav"]


def metric(s, name):
    m = re.search(rf"^{name} ([0-9.]+)$", s.get("/metrics")[1].decode(), re.M)
    return float(m.group(1)) if m else 0.0


def cpu_seconds(pid):
    """user + system CPU seconds of a process so far (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(model, beam, args, concurrent):
    with Server(["--whisper-model", model, "-q"] + args) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=1800)

        def tr(clip):
            with open(audio(clip), "rb") as f:
                r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                                  extra_body={"beam_size": str(beam)} if beam > 1 else None)
            return clip, " ".join(r.text.split()), r.duration

        tr(CLIPS[2])  # warm
        names = ["steno_whisper_batched_steps_total", "steno_whisper_batched_rows_total",
                 "steno_whisper_batched_step_seconds_total", "steno_whisper_shared_encode_seconds_total"]
        before = [metric(s, n) for n in names]
        cpu0 = cpu_seconds(s.proc.pid)
        t0 = time.time()
        if concurrent:
            with cf.ThreadPoolExecutor(len(CLIPS)) as ex:
                out = list(ex.map(tr, CLIPS))
        else:
            out = [tr(x) for x in CLIPS]
        wall = time.time() - t0
        cpu = cpu_seconds(s.proc.pid) - cpu0
        split = [metric(s, n) - b for n, b in zip(names, before)]
        return out, wall, cpu, split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tiny.en")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--beam", type=int, default=1, help="beam_size of every request (1: greedy)")
    a = ap.parse_args()
    T = str(a.threads)
    configs = {"seq": (["--parallel", "1", "--threads", T], False),
               "p8-off": (["--parallel", "8", "--threads", "1", "--whisper-batch", "off"], True),
               "p8-on": (["--parallel", "8", "--threads", "1"], True)}
    order = list(configs)
    rate = {k: [] for k in configs}
    per_cpu = {k: [] for k in configs}
    texts, bad = {}, 0
    for r in range(a.reps):
        for k in order[r % len(order):] + order[:r % len(order)]:
            out, wall, cpu, split = run(a.model, a.beam, *configs[k])
            audio_s = sum(d for _, _, d in out)
            rate[k].append(audio_s / wall)
            per_cpu[k].append(audio_s / cpu)
            for clip, text, _ in out:
                if texts.setdefault(clip, text) != text:
                    print(f"MISMATCH {k} {clip}: {text!r} vs {texts[clip]!r}")
                    bad += 1
            extra = ""
            if k == "p8-on":
                steps, rows, step_s, enc_s = split
                extra = (f"  [{int(steps)} steps, {rows / max(steps, 1):.2f} rows/step; decoder steps {step_s:.2f} s, "
                         f"encoder passes {enc_s:.2f} s = {100 * enc_s / wall:.0f}% of the wall]")
            print(f"rep {r} {k:7s} {wall:6.2f} s  {audio_s / wall:6.2f} audio s/s  {cpu:6.2f} CPU s = "
                  f"{audio_s / cpu:5.2f} audio s per CPU s{extra}", flush=True)
    med = {k: statistics.median(v) for k, v in rate.items()}
    print(f"{a.model}, beam {a.beam}, {len(CLIPS)} clips, {a.reps} reps, medians (audio s/s): "
          + ", ".join(f"{k} {v:.2f}" for k, v in med.items())
          + f"; p8-on/seq {med['p8-on'] / med['seq']:.2f}x, p8-on/p8-off {med['p8-on'] / med['p8-off']:.2f}x")
    mc = {k: statistics.median(v) for k, v in per_cpu.items()}
    print("  medians (audio s per server CPU s, less sensitive to a shared machine's other load): "
          + ", ".join(f"{k} {v:.2f}" for k, v in mc.items())
          + f"; p8-on/seq {mc['p8-on'] / mc['seq']:.2f}x, p8-on/p8-off {mc['p8-on'] / mc['p8-off']:.2f}x")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
