"""steno.LLM against `steno generate` / `steno chat` (greedy): stories260K (llama2.c, and its
llama2.c golden text) and SmolLM2 (GGUF, by its known name); streaming pieces join to the same
text and keep UTF-8 characters whole; errors."""

from __future__ import annotations

import codecs

import pytest

import steno
from conftest import STORIES, THREADS, run_cli

STORIES_BIN = str(STORIES / "stories260K.bin")


def golden() -> str:
    g = (STORIES / "GOLDEN.txt").read_text(encoding="utf-8")
    return g.split("\n\n", 1)[1].rstrip("\n")


def cli_out(args, stdin=b""):
    p = run_cli(args, stdin=stdin)
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    out = p.stdout.decode("utf-8", "replace")
    assert out.endswith("\n")
    return out[:-1]


@pytest.fixture(scope="module")
def stories():
    return steno.LLM(STORIES_BIN, threads=THREADS)


@pytest.fixture(scope="module")
def smol():
    return steno.LLM("smollm2", threads=THREADS)


def test_stories_generate(stories):
    cli = cli_out(["generate", "-m", STORIES_BIN, "-p", "", "-n", "200", "--temp", "0", "-t", str(THREADS)])
    text = stories.generate("", max_tokens=200, temperature=0)
    assert text == cli == golden()
    pieces = list(stories.generate("", max_tokens=200, temperature=0, stream=True))
    assert len(pieces) > 50 and "".join(pieces) == text
    assert stories.info.format == "llama2c" and stories.info.n_vocab == 512


def test_stories_prompt_and_seed(stories):
    args = ["generate", "-m", STORIES_BIN, "-p", "Once upon a time", "-n", "40", "--temp", "1.0", "--top-k", "0",
            "--top-p", "0.95", "--min-p", "0.02", "--repeat-penalty", "1.1", "--seed", "7", "-t", str(THREADS)]
    text = stories.generate("Once upon a time", max_tokens=40, temperature=1.0, top_k=0, top_p=0.95, min_p=0.02,
                            repeat_penalty=1.1, seed=7)
    assert text == cli_out(args)
    assert text != stories.generate("Once upon a time", max_tokens=40, temperature=1.0, top_k=0, top_p=0.95,
                                    min_p=0.02, repeat_penalty=1.1, seed=8)


def test_stories_has_no_chat_template(stories):
    with pytest.raises(steno.UnsupportedError):
        stories.chat([{"role": "user", "content": "hi"}], temperature=0)


def test_smollm2_generate(smol):
    prompt = "Once upon a time"
    cli = cli_out(["generate", "-m", "smollm2", "-p", prompt, "-n", "48", "--temp", "0", "-t", str(THREADS)])
    text = smol.generate(prompt, max_tokens=48, temperature=0)
    assert text == cli
    assert "".join(smol.generate(prompt, max_tokens=48, temperature=0, stream=True)) == text
    assert smol.info.arch == "llama" and smol.info.format == "gguf"


def test_smollm2_chat(smol):
    msg = "What is the capital of France?"
    cli = cli_out(["chat", "-m", "smollm2", "-n", "48", "--temp", "0", "-t", str(THREADS)], stdin=(msg + "\n").encode())
    messages = [{"role": "user", "content": msg}]
    text = smol.chat(messages, max_tokens=48, temperature=0)
    assert text == cli
    assert "".join(smol.chat(messages, max_tokens=48, temperature=0, stream=True)) == text
    assert "<|im_start|>user\n" + msg in smol.format_chat(messages)


def test_smollm2_utf8_stream(smol):
    # Japanese in a byte-level BPE vocabulary: some tokens hold part of a character's bytes
    messages = [{"role": "user", "content": "Write one sentence in Japanese."}]
    pieces = list(smol.chat(messages, max_tokens=48, temperature=0, stream=True))
    text = smol.chat(messages, max_tokens=48, temperature=0)
    assert "".join(pieces) == text
    assert "\ufffd" not in text and any(ord(ch) > 0x3000 for ch in text)
    # evidence that the test covers split characters: a token of the reply that is not whole UTF-8
    toks = smol.tokenize(text, add_special=False)
    partial = 0
    for t in toks:
        try:
            codecs.decode(smol.detokenize_bytes([t]), "utf-8")
        except UnicodeDecodeError:
            partial += 1
    assert partial > 0
    # each streamed piece is whole text (a split character comes out in one piece)
    for p in pieces:
        p.encode("utf-8")


def test_two_threads_generate(smol):
    import threading

    prompts = ["The sea is", "My favourite food is"]
    expect = {p: smol.generate(p, max_tokens=24, temperature=0) for p in prompts}
    got = {}

    def work(p):
        got[p] = smol.generate(p, max_tokens=24, temperature=0)

    ts = [threading.Thread(target=work, args=(p,)) for p in prompts]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == expect


def test_llm_errors(tmp_path):
    with pytest.raises(steno.StenoError) as e:
        steno.LLM(str(tmp_path / "missing.gguf"))
    assert "missing.gguf" in str(e.value)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\xff" * 64)
    with pytest.raises(steno.StenoError) as e:
        steno.LLM(str(bad))
    assert "bad.gguf" in str(e.value)
    with pytest.raises(TypeError):
        steno.LLM(42)  # type: ignore[arg-type]


def test_bad_messages(smol):
    with pytest.raises(TypeError):
        smol.chat("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        smol.chat([{"role": "user"}])
    with pytest.raises(TypeError):
        smol.generate(b"bytes")  # type: ignore[arg-type]


def test_close_during_stream():
    llm = steno.LLM(STORIES_BIN, threads=1)
    expect = llm.generate("", max_tokens=60, temperature=0)
    pieces = llm.generate("", max_tokens=60, temperature=0, stream=True)
    first = next(pieces)
    llm.close()  # the running generation keeps the model until it ends
    assert llm.closed
    assert first + "".join(pieces) == expect
    assert llm._h._ptr is None
    for call in (lambda: llm.tokenize("a"), lambda: llm.generate("a"), lambda: llm.detokenize([1]),
                 lambda: llm.chat([{"role": "user", "content": "hi"}])):
        with pytest.raises(steno.StenoError, match="LLM is closed"):
            call()
    llm.close()


def test_generation_arguments(stories):
    for bad, exc in (("5", TypeError), (5.5, TypeError), (True, TypeError), (-1, ValueError)):
        with pytest.raises(exc, match="^max_tokens: "):
            stories.generate("Once", max_tokens=bad)
    assert stories.generate("Once", max_tokens=0) == ""
    for name in ("temperature", "top_p", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty"):
        with pytest.raises(ValueError, match="^%s: " % name):
            stories.generate("Once", max_tokens=1, **{name: float("nan")})
    with pytest.raises(ValueError, match="^top_p: "):
        stories.generate("Once", top_p=1.5)
    with pytest.raises(TypeError, match="^top_k: "):
        stories.generate("Once", top_k=2.5)
    with pytest.raises(ValueError, match="^temperature: "):
        stories.chat([{"role": "user", "content": "x"}], temperature=-1)


def test_context_size(stories):
    for bad, exc in (("64", TypeError), (-1, ValueError), (2**31, ValueError), (True, TypeError)):
        with pytest.raises(exc, match="^n_ctx: "):
            steno.LLM(STORIES_BIN, n_ctx=bad)
    assert stories.n_ctx == stories.info.n_ctx_train
    small = steno.LLM(STORIES_BIN, n_ctx=16, threads=1)
    with pytest.raises(steno.StenoError, match="n_ctx 16") as e:
        small.generate("Once upon a time " * 10, max_tokens=4)
    assert "-c/--ctx-size" not in str(e.value) and "n_ctx" in str(e.value)
    with pytest.warns(UserWarning, match="context is full.*n_ctx"):
        text = small.generate("Once", temperature=0)
    assert len(small.tokenize(text, add_special=False)) <= 16
    small.close()


def test_chat_messages(smol):
    with pytest.raises(ValueError, match="empty"):
        smol.chat([])
    with pytest.raises(ValueError, match=r"^messages\[1\]\.role: .*'bot'"):
        smol.chat([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}])
    with pytest.raises(ValueError, match=r"^messages\[0\]\.content: .*NUL"):
        smol.format_chat([{"role": "user", "content": "a\0b"}])
    with pytest.raises(TypeError, match=r"^messages\[0\]"):
        smol.format_chat([{"content": "no role"}])
    text = smol.format_chat([{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                             {"role": "assistant", "content": "A"}])
    assert "<|im_start|>system\nS<|im_end|>" in text and "<|im_start|>assistant\nA<|im_end|>" in text


def test_not_a_model_file():
    jfk = str(STORIES.parent.parent / "audio" / "jfk.wav")
    with pytest.raises(steno.StenoError) as e:
        steno.LLM(jfk)
    assert "jfk.wav" in str(e.value) and "GGUF" in str(e.value)
