"""test_openai_api.py — steno serve driven by the official `openai` Python client.

Every answer is compared with the CLI's on the same input and options:
  - transcriptions in every response_format (json, text, srt, vtt, verbose_json), with segment and
    word granularities, a streamed transcription, steno's own options as extra form fields;
  - a translation with the multilingual base model;
  - chat completions (plain, streamed with usage, with logprobs and without, with a stop string) and a
    completion (its legacy logprobs whole and streamed), greedy, against `steno chat` / `steno generate`.
The client is built with max_retries=0 so that no retry hides an error.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import BIN, SANITIZE, Checks, Server, audio, cli_transcribe, multipart  # noqa: E402

import openai  # noqa: E402

t = Checks()


def norm(s):
    return " ".join(s.split())


def client(s):
    return openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=600)


def cli_json(path, extra=()):
    return json.loads(cli_transcribe(path, "json", extra))


def cli_generate(args, stdin=None):
    out = subprocess.run([BIN] + args, input=stdin, capture_output=True, text=True, check=True)
    return out.stdout


JFK = audio("jfk.wav")
SECONDS = {}
with open(audio("manifest.tsv"), encoding="utf-8") as f:
    for line in list(f)[1:]:
        cols = line.split("\t")
        SECONDS[cols[0]] = float(cols[1])
clips = [JFK, audio("ls_test-clean_1089-134686-0001.wav")]
if not SANITIZE:
    clips.append(audio("ljspeech_LJ001-0001.flac"))

with Server(["--whisper-model", "tiny.en", "--llm-model", "smollm2", "--parallel", "1"]) as s:
    c = client(s)
    models = [m.id for m in c.models.list().data]
    t.check(models == ["tiny.en", "smollm2"], f"models.list: {models}")

    # ---- every response_format, against the CLI's writers
    for path in clips:
        name = os.path.basename(path)
        ref_txt = cli_transcribe(path, "txt")
        with open(path, "rb") as f:
            r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="json")
        t.check(norm(r.text) == norm(ref_txt), f"{name} json: {r.text!r} vs CLI {ref_txt!r}")
        with open(path, "rb") as f:
            r = c.audio.transcriptions.create(model="tiny.en", file=f, response_format="text")
        t.check(norm(r) == norm(ref_txt), f"{name} text: {r!r}")
        for fmt in ("srt", "vtt"):
            with open(path, "rb") as f:
                r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format=fmt)
            ref = cli_transcribe(path, fmt)
            t.check(r == ref, f"{name} {fmt} differs from the CLI's file:\n{r!r}\n{ref!r}")
        ref = cli_json(path)
        with open(path, "rb") as f:
            r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                              timestamp_granularities=["segment"])
        t.check(r.language == "english" and r.task == "transcribe", f"{name} verbose_json language/task")
        t.check(abs(r.duration - SECONDS[name]) < 0.01, f"{name} duration {r.duration} vs {SECONDS[name]}")
        segs = [(sg.text, sg.start, sg.end, list(sg.tokens)) for sg in r.segments]
        refs = [(sg["text"], sg["start"], sg["end"], sg["tokens"]) for sg in ref["segments"]]
        t.check(segs == refs, f"{name} verbose_json segments differ from the CLI's json:\n{segs}\n{refs}")
        t.check(all(hasattr(sg, k) for sg in r.segments for k in
                    ("id", "seek", "temperature", "avg_logprob", "compression_ratio", "no_speech_prob")),
                f"{name} verbose_json segment fields")

    # ---- word timestamps: timestamp_granularities[]=word vs the CLI's --word-timestamps True
    ref = cli_json(JFK, ["--word-timestamps", "True"])
    ref_words = [(w["word"].strip(), w["start"], w["end"]) for sg in ref["segments"] for w in sg["words"]]
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                          timestamp_granularities=["word", "segment"])
    words = [(w.word, w.start, w.end) for w in (r.words or [])]
    t.check(words == ref_words and len(words) > 10, f"words differ from the CLI's:\n{words}\n{ref_words}")
    t.check(len(r.segments or []) == len(ref["segments"]), "segments alongside words")

    # ---- steno's own options as extra fields (the CLI's names): beam search
    ref = cli_transcribe(JFK, "txt", ["--beam-size", "5"])
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="text",
                                          extra_body={"beam_size": "5"})
    t.check(norm(r) == norm(ref), f"beam_size=5: {r!r} vs {ref!r}")
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="text",
                                          prompt="Kennedy's inaugural address.", language="en")
    ref = cli_transcribe(JFK, "txt", ["--initial-prompt", "Kennedy's inaugural address.", "--language", "en"])
    t.check(norm(r) == norm(ref), f"prompt: {r!r} vs {ref!r}")

    # ---- a streamed transcription: deltas per segment, then the whole text
    ref_txt = cli_transcribe(JFK, "txt")
    with open(JFK, "rb") as f:
        stream = c.audio.transcriptions.create(model="whisper-1", file=f, stream=True)
        deltas, done = [], None
        for ev in stream:
            if ev.type == "transcript.text.delta":
                deltas.append(ev.delta)
            elif ev.type == "transcript.text.done":
                done = ev.text
    t.check(len(deltas) >= 2, f"stream: {len(deltas)} deltas")
    t.check(done is not None and norm(done) == norm(ref_txt), f"stream done text: {done!r}")
    t.check(norm("".join(deltas)) == norm(ref_txt), f"stream deltas: {deltas!r}")

    # ---- whisper.cpp's /inference, as whisper-server clients send it
    ref_txt = cli_transcribe(JFK, "txt")
    body, ctype = multipart({"temperature": "0.0", "temperature_inc": "0.2", "response_format": "json"},
                            {"file": ("jfk.wav", open(JFK, "rb").read())})
    st, d = s.post_json("/inference", body, {"Content-Type": ctype})
    t.check(st == 200 and norm(json.loads(d)["text"]) == norm(ref_txt), f"/inference json: {st} {d[:200]!r}")
    body, ctype = multipart({"response_format": "srt"}, {"file": ("jfk.wav", open(JFK, "rb").read())})
    st, d = s.post_json("/inference", body, {"Content-Type": ctype})
    t.check(st == 200 and d.decode() == cli_transcribe(JFK, "srt"), f"/inference srt: {st}")

    # ---- chat: greedy, against `steno chat` (one message on stdin)
    msg = "What is the capital of France? Answer in one sentence."
    ref = cli_generate(["chat", "-m", "smollm2", "--temp", "0", "-n", "40"], stdin=msg + "\n").strip()
    r = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": msg}], temperature=0,
                                  max_tokens=40)
    got = r.choices[0].message.content
    t.check(got.strip() == ref, f"chat: {got!r} vs CLI {ref!r}")
    t.check(r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0 and
            r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, f"chat usage {r.usage}")
    t.check(r.choices[0].finish_reason in ("stop", "length"), "finish_reason")
    # turn 2 reuses turn 1's prompt and answer from the slot's cache
    r2 = c.chat.completions.create(model="smollm2", temperature=0, max_tokens=20, messages=[
        {"role": "user", "content": msg}, {"role": "assistant", "content": got},
        {"role": "user", "content": "And of Italy?"}])
    cached = r2.usage.prompt_tokens_details.cached_tokens
    print(f"chat turn 2: {r2.usage.prompt_tokens} prompt tokens, {cached} cached")
    t.check(cached >= r.usage.prompt_tokens, f"turn 2 cached_tokens {cached} < turn 1 prompt {r.usage.prompt_tokens}")
    # streamed, with usage: the same text
    chunks = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": msg}], temperature=0,
                                       max_tokens=40, stream=True, stream_options={"include_usage": True})
    parts, usage, finish = [], None, None
    for ch in chunks:
        if ch.usage:
            usage = ch.usage
        for choice in ch.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
            if choice.finish_reason:
                finish = choice.finish_reason
    t.check("".join(parts) == got, f"streamed chat: {''.join(parts)!r} vs {got!r}")
    t.check(usage is not None and usage.completion_tokens == r.usage.completion_tokens, f"stream usage {usage}")
    t.check(finish == r.choices[0].finish_reason, f"stream finish_reason {finish}")
    # a stop string: the text ends right before it and never contains it
    stop = "Paris"
    r = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": msg}], temperature=0,
                                  max_tokens=40, stop=[stop])
    cut = got.split(stop)[0]
    t.check(r.choices[0].message.content == cut and r.choices[0].finish_reason == "stop",
            f"stop: {r.choices[0].message.content!r} vs {cut!r}")
    chunks = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": msg}], temperature=0,
                                       max_tokens=40, stop=stop, stream=True)
    streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    t.check(streamed == cut and stop not in streamed, f"streamed stop: {streamed!r}")
    # log-probabilities
    r = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": msg}], temperature=0,
                                  max_tokens=8, logprobs=True, top_logprobs=3)
    lp = r.choices[0].logprobs.content
    t.check(len(lp) == r.usage.completion_tokens and all(len(x.top_logprobs) == 3 for x in lp),
            "logprobs: one entry per token, 3 alternatives")
    t.check(all(x.logprob <= 0 and x.top_logprobs[0].logprob >= x.top_logprobs[-1].logprob for x in lp),
            "logprobs are log-probabilities, alternatives sorted")
    t.check(all(x.token == x.top_logprobs[0].token for x in lp), "greedy: the chosen token is the most likely")
    t.check(all(x.logprob == x.top_logprobs[0].logprob for x in lp),
            "the chosen token's logprob equals its own entry among the alternatives")
    # without logprobs the same text, and the field null
    r2 = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": msg}], temperature=0,
                                   max_tokens=8)
    t.check(r2.choices[0].logprobs is None and r2.choices[0].message.content == r.choices[0].message.content,
            "logprobs off: null, the same text")
    # sampling with a seed is reproducible
    a = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Tell me a story."}],
                                  temperature=0.9, seed=42, max_tokens=24).choices[0].message.content
    b = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Tell me a story."}],
                                  temperature=0.9, seed=42, max_tokens=24).choices[0].message.content
    t.check(a == b, f"seed 42 twice: {a!r} vs {b!r}")
    ref = cli_generate(["chat", "-m", "smollm2", "--temp", "0.9", "-s", "42", "-n", "24"],
                       stdin="Tell me a story.\n").strip()
    t.check(a.strip() == ref, f"seeded chat vs CLI: {a!r} vs {ref!r}")

    # ---- completions, against `steno generate`
    ref = cli_generate(["generate", "-m", "smollm2", "-p", "Once upon a time", "--temp", "0", "-n", "30"])
    r = c.completions.create(model="smollm2", prompt="Once upon a time", temperature=0, max_tokens=30)
    t.check(r.choices[0].text == ref.rstrip("\n"), f"completion: {r.choices[0].text!r} vs {ref!r}")
    t.check(r.usage.completion_tokens == 30 and r.choices[0].finish_reason == "length", f"completion usage {r.usage}")
    parts = [ch.choices[0].text for ch in c.completions.create(model="smollm2", prompt="Once upon a time",
                                                                temperature=0, max_tokens=30, stream=True)
             if ch.choices]
    t.check("".join(parts) == r.choices[0].text, "streamed completion")
    # the legacy logprobs layout, whole and streamed (one token per chunk), the same values
    r = c.completions.create(model="smollm2", prompt="Once upon a time", temperature=0, max_tokens=8, logprobs=2)
    whole = r.choices[0].logprobs
    t.check(len(whole.tokens) == 8 and "".join(whole.tokens) == r.choices[0].text and
            all(len(a) >= 1 for a in whole.top_logprobs), f"completion logprobs: {whole}")
    lps, toks, offs = [], [], []
    for ch in c.completions.create(model="smollm2", prompt="Once upon a time", temperature=0, max_tokens=8,
                                   logprobs=2, stream=True):
        if ch.choices and ch.choices[0].logprobs:
            toks += ch.choices[0].logprobs.tokens
            lps += ch.choices[0].logprobs.token_logprobs
            offs += ch.choices[0].logprobs.text_offset
    t.check(toks == whole.tokens and lps == whole.token_logprobs and offs == whole.text_offset,
            f"streamed completion logprobs: {toks} {lps} {offs} vs {whole}")

    # ---- errors the client raises as exceptions
    try:
        c.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
        t.check(False, "unknown model accepted")
    except openai.NotFoundError as e:
        t.check(e.body and e.body.get("code") == "model_not_found", f"unknown model: {e.body}")
    try:
        with open(JFK, "rb") as f:
            c.audio.transcriptions.create(model="whisper-1", file=f, response_format="mp3")
        t.check(False, "unknown response_format accepted")
    except openai.BadRequestError as e:
        t.check(e.body and e.body.get("param") == "response_format", f"response_format: {e.body}")
    try:
        with open(JFK, "rb") as f:
            c.audio.translations.create(model="whisper-1", file=f)
        t.check(False, "translation on an English-only model accepted")
    except openai.BadRequestError as e:
        t.check("multilingual" in str(e.body), f"translation on tiny.en: {e.body}")

# ---- translation with the multilingual model
DE = audio("picovoice_leopard_test_de.wav")
with Server(["--whisper-model", "base"]) as s:
    c = client(s)
    ref = cli_transcribe(DE, "txt", ["--model", "base", "--task", "translate"])
    with open(DE, "rb") as f:
        r = c.audio.translations.create(model="whisper-1", file=f, response_format="verbose_json")
    print(f"translation: {r.text!r}")
    t.check(norm(r.text) == norm(ref), f"translation: {r.text!r} vs CLI {ref!r}")
    t.check(r.task == "translate" and r.language == "german", f"translation task/language: {r.task} {r.language}")
    ref = cli_transcribe(DE, "txt", ["--model", "base", "--language", "de"])
    with open(DE, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, language="de", response_format="text")
    t.check(norm(r) == norm(ref), f"German transcription: {r!r} vs {ref!r}")

t.finish()
