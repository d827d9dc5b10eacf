"""llm.py — text generation: ``steno.LLM`` over steno_llm.h (GGUF and llama2.c models).

Usage::

    from steno import LLM

    llm = LLM("smollm2", threads=4)                      # a known name, or a .gguf / .bin path
    print(llm.generate("Once upon a time", max_tokens=64, temperature=0))
    for piece in llm.chat([{"role": "user", "content": "Name three colours."}], stream=True):
        print(piece, end="", flush=True)

Generation follows `steno generate` / `steno chat` exactly (cli/generate_cmd.c, cli/chat_cmd.c):
the prompt is tokenized (with BOS where the tokenizer wants one; an empty prompt is just BOS),
evaluated, then tokens are sampled with llama.cpp's chain (steno_sampler) until an
end-of-generation token, ``max_tokens``, or a full context. With ``temperature=0`` (greedy) the text
equals the CLI's for the same model and prompt; with a seed, sampled text equals the CLI's
``--seed``. ``stream=True`` returns an iterator of str pieces as they are generated: pieces are
decoded incrementally, so a UTF-8 character split over several tokens comes out whole, in one
piece; joining the pieces gives the text ``stream=False`` returns.

Thread-safety: one LLM may be used from several threads at once; each generation takes its own
context (KV cache) from a pool, the weights are shared, and the GIL is released while C computes.
"""

from __future__ import annotations

import codecs
import os
import random
import threading
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_void_p, cast, create_string_buffer, string_at
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import _lib
from ._lib import StenoError, lib

__all__ = ["LLM", "LLMInfo", "resolve"]


class LLMInfo(NamedTuple):
    arch: str
    name: str
    format: str
    n_vocab: int
    n_ctx_train: int
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    sliding_window: int
    bos: int
    eos: int
    eot: int
    weight_bytes: int


def resolve(model: Union[str, "os.PathLike[str]"]) -> str:
    """steno_llm_resolve: an existing path as is, a known name ("smollm2", "gemma3") as its file in
    the model cache. StenoError (with the library's message on how to fetch it) otherwise."""
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError("model: expected a model name or a file path, got %s" % type(model).__name__)
    buf = create_string_buffer(8192)
    _lib.check(lib.steno_llm_resolve(os.fsencode(os.fspath(model)), buf, len(buf)))
    return os.fsdecode(buf.value)


def _s(b: Optional[bytes]) -> str:
    return b.decode("utf-8", "replace") if b else ""


class LLM:
    """A loaded LLM (GGUF: Llama family, Gemma 3; or a llama2.c checkpoint).

    Args:
        model: a .gguf / llama2.c file or a known name (steno_llm_resolve).
        n_ctx: positions a generation may hold (0: the model's training context).
        threads: CPU threads per generation (0: all online CPUs).
        n_batch: prompt tokens per forward pass (0: the library's default, 256).
        tokenizer: llama2.c models only: the tokenizer file (default: beside the model).
    """

    def __init__(
        self,
        model: Union[str, "os.PathLike[str]"],
        n_ctx: int = 0,
        threads: int = 0,
        n_batch: int = 0,
        tokenizer: Optional[str] = None,
    ) -> None:
        self._m: Optional[int] = None
        for name, v in (("n_ctx", n_ctx), ("threads", threads), ("n_batch", n_batch)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError("%s: expected an integer >= 0, got %r" % (name, v))
        self.model_path = resolve(model)
        lp = lib.steno_llm_default_load_params()
        if tokenizer is not None:
            lp.tokenizer_path = os.fsencode(tokenizer)
        m = c_void_p()
        _lib.check(lib.steno_llm_load(os.fsencode(self.model_path), byref(lp), byref(m)))
        self._m = m.value
        raw = _lib.steno_llm_info()
        lib.steno_llm_get_info(self._m, byref(raw))
        self.info = LLMInfo(
            arch=_s(raw.arch),
            name=_s(raw.name),
            format=_s(raw.format),
            n_vocab=raw.n_vocab,
            n_ctx_train=raw.n_ctx_train,
            n_embd=raw.n_embd,
            n_layer=raw.n_layer,
            n_head=raw.n_head,
            n_head_kv=raw.n_head_kv,
            head_dim=raw.head_dim,
            n_ff=raw.n_ff,
            sliding_window=raw.sliding_window,
            bos=raw.bos,
            eos=raw.eos,
            eot=raw.eot,
            weight_bytes=raw.weight_bytes,
        )
        self._ctx_params = lib.steno_llm_ctx_default_params()
        self._ctx_params.n_threads = threads
        if n_ctx:
            self._ctx_params.n_ctx = n_ctx
        if n_batch:
            self._ctx_params.n_batch = n_batch
        self._ctxs: List[int] = []
        self._lock = threading.Lock()
        c = self._take_ctx()  # fails now (not at the first generation) on bad parameters
        self.n_ctx = int(lib.steno_llm_ctx_get_params(c).n_ctx)
        self._give_ctx(c)

    # -- contexts --
    def _take_ctx(self) -> int:
        with self._lock:
            if self._m is None:
                raise StenoError("LLM is closed")
            if self._ctxs:
                return self._ctxs.pop()
        c = c_void_p()
        _lib.check(lib.steno_llm_ctx_new(self._m, byref(self._ctx_params), byref(c)))
        assert c.value is not None
        return c.value

    def _give_ctx(self, c: int) -> None:
        with self._lock:
            if self._m is not None:
                self._ctxs.append(c)
                return
        lib.steno_llm_ctx_free(c)

    def close(self) -> None:
        with self._lock:
            ctxs, self._ctxs = self._ctxs, []
            m, self._m = self._m, None
        for c in ctxs:
            lib.steno_llm_ctx_free(c)
        if m:
            lib.steno_llm_free(m)

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- tokens --
    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = False) -> List[int]:
        """steno_llm_tokenize: BOS (and EOS) as the tokenizer asks when add_special; control tokens
        written in the text become tokens when parse_special."""
        if not isinstance(text, str):
            raise TypeError("text: expected str, got %s" % type(text).__name__)
        if self._m is None:
            raise StenoError("LLM is closed")
        data = text.encode("utf-8")
        toks = POINTER(c_int)()
        n = c_int(0)
        _lib.check(lib.steno_llm_tokenize(self._m, data, len(data), int(add_special), int(parse_special), byref(toks), byref(n)))
        try:
            return [toks[i] for i in range(n.value)]
        finally:
            _lib.libc.free(cast(toks, c_void_p))

    def _piece(self, tok: int, prev: int, buf: Any) -> bytes:
        n = lib.steno_llm_token_piece(self._m, tok, prev, 0, buf, len(buf))
        if n < 0:
            buf = create_string_buffer(-n)
            n = lib.steno_llm_token_piece(self._m, tok, prev, 0, buf, len(buf))
        return bytes(buf.raw[: max(n, 0)])

    def detokenize_bytes(self, tokens: Sequence[int], prev: int = -1) -> bytes:
        """The bytes of tokens' text (steno_llm_token_piece; control tokens omitted): a single
        token may hold an incomplete UTF-8 sequence. prev: the token before them, or -1."""
        if self._m is None:
            raise StenoError("LLM is closed")
        buf = create_string_buffer(256)
        out = bytearray()
        for t in tokens:
            t = int(t)
            if not 0 <= t < self.info.n_vocab:
                raise ValueError("token %d is outside the vocabulary (0..%d)" % (t, self.info.n_vocab - 1))
            out += self._piece(t, prev, buf)
            prev = t
        return bytes(out)

    def detokenize(self, tokens: Sequence[int]) -> str:
        """The text of tokens (as generation prints them; control tokens omitted)."""
        return self.detokenize_bytes(tokens).decode("utf-8", "replace")

    def format_chat(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> str:
        """The conversation in the model's chat template (steno_llm_chat_format). UnsupportedError
        when the model has no known template."""
        if self._m is None:
            raise StenoError("LLM is closed")
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise TypeError('messages: expected a list of {"role": ..., "content": ...} dicts')
        arr = (_lib.steno_chat_msg * max(1, len(messages)))()
        keep = []
        for i, msg in enumerate(messages):
            if not isinstance(msg, Mapping) or not isinstance(msg.get("content"), str):
                raise TypeError('messages[%d]: expected {"role": str, "content": str}' % i)
            role = msg.get("role", "user")
            if not isinstance(role, str):
                raise TypeError("messages[%d].role: expected str" % i)
            r, c = role.encode("utf-8"), msg["content"].encode("utf-8")
            keep += [r, c]
            arr[i].role = r
            arr[i].content = c
        out = c_void_p()
        _lib.check(lib.steno_llm_chat_format(self._m, arr, len(messages), int(add_generation_prompt), byref(out)))
        try:
            return string_at(out.value).decode("utf-8", "replace") if out.value else ""
        finally:
            _lib.libc.free(out)

    # -- generation --
    def _sampler_params(
        self,
        temperature: float,
        top_k: int,
        top_p: float,
        min_p: float,
        repeat_penalty: float,
        repeat_last_n: int,
        presence_penalty: float,
        frequency_penalty: float,
        seed: Optional[int],
        logit_bias: Optional[Mapping[int, float]],
    ) -> Any:
        sp = lib.steno_sampler_default_params()
        sp.temperature = float(temperature)
        sp.top_k = int(top_k)
        sp.top_p = float(top_p)
        sp.min_p = float(min_p)
        sp.repeat_penalty = float(repeat_penalty)
        sp.penalty_last_n = int(repeat_last_n)
        sp.presence_penalty = float(presence_penalty)
        sp.frequency_penalty = float(frequency_penalty)
        if seed is None:
            seed = random.SystemRandom().getrandbits(64)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError("seed: expected an integer in 0..2**64-1 or None, got %r" % (seed,))
        sp.seed = seed
        keep: List[Any] = []
        if logit_bias:
            b = (_lib.steno_logit_bias * len(logit_bias))()
            for i, (t, v) in enumerate(logit_bias.items()):
                b[i].token = int(t)
                b[i].bias = float(v)
            sp.logit_bias = cast(b, POINTER(_lib.steno_logit_bias))
            sp.n_logit_bias = len(logit_bias)
            keep.append(b)
        return sp, keep

    def _run(self, tokens: List[int], max_tokens: Optional[int], sp: Any, keep: List[Any]) -> Iterator[str]:
        """Evaluates tokens, then samples (steno_llm_generate's loop), yielding decoded text."""
        n_predict = -1 if max_tokens is None or max_tokens < 0 else int(max_tokens)
        ctx = self._take_ctx()
        sampler = c_void_p()
        try:
            lib.steno_llm_reset(ctx)
            _lib.check(lib.steno_sampler_new(byref(sp), self.info.n_vocab, byref(sampler)))
            logits = (c_float * self.info.n_vocab)()
            arr = (c_int * len(tokens))(*tokens)
            _lib.check(lib.steno_llm_eval(ctx, arr, len(tokens), logits, 0))
            dec = codecs.getincrementaldecoder("utf-8")("replace")
            buf = create_string_buffer(256)
            prev = tokens[-1]
            one = c_int(0)
            i = 0
            while n_predict < 0 or i < n_predict:
                tok = lib.steno_sampler_sample(sampler, logits, None, None)
                if lib.steno_llm_is_eog(self._m, tok):
                    break
                text = dec.decode(self._piece(tok, prev, buf))
                prev = tok
                if text:
                    yield text
                if n_predict >= 0 and i + 1 >= n_predict:
                    break
                if lib.steno_llm_n_past(ctx) + 1 > self.n_ctx:
                    break
                one.value = tok
                _lib.check(lib.steno_llm_eval(ctx, byref(one), 1, logits, 0))
                i += 1
            tail = dec.decode(b"", final=True)
            if tail:
                yield tail
        finally:
            if sampler.value:
                lib.steno_sampler_free(sampler)
            self._give_ctx(ctx)
            del keep

    def _finish(self, gen: Iterator[str], stream: bool) -> Union[str, Iterator[str]]:
        return gen if stream else "".join(gen)

    def generate(
        self,
        prompt: str,
        max_tokens: Optional[int] = None,
        temperature: float = 0.8,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        seed: Optional[int] = None,
        logit_bias: Optional[Mapping[int, float]] = None,
        stream: bool = False,
        add_bos: bool = True,
        special: bool = False,
    ) -> Union[str, Iterator[str]]:
        """Continues prompt, as `steno generate -p PROMPT` (defaults are the CLI's: --temp 0.8,
        --top-k 40, --top-p 0.95, --min-p 0.05; max_tokens None = until the end of text or a full
        context; seed None = random). Returns the text, or with stream=True an iterator of pieces.
        add_bos=False is --no-bos, special=True is --special (control tokens in the prompt)."""
        if not isinstance(prompt, str):
            raise TypeError("prompt: expected str, got %s" % type(prompt).__name__)
        sp, keep = self._sampler_params(temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
                                        presence_penalty, frequency_penalty, seed, logit_bias)
        toks = self.tokenize(prompt, add_special=add_bos, parse_special=special)
        if not toks:
            if self.info.bos < 0:
                raise StenoError("empty prompt and the model has no BOS token", _lib.STENO_E_INVALID_ARG)
            toks = [self.info.bos]
        return self._finish(self._run(toks, max_tokens, sp, keep), stream)

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        max_tokens: Optional[int] = 512,
        temperature: float = 0.8,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        seed: Optional[int] = None,
        logit_bias: Optional[Mapping[int, float]] = None,
        stream: bool = False,
    ) -> Union[str, Iterator[str]]:
        """The assistant's reply to messages ([{"role": "system"|"user"|"assistant", "content":
        str}, ...]), formatted with the model's chat template, as `steno chat` answers a
        conversation (max_tokens 512 per reply by default, -n). Returns the text, or with
        stream=True an iterator of pieces. UnsupportedError when the model has no chat template."""
        sp, keep = self._sampler_params(temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
                                        presence_penalty, frequency_penalty, seed, logit_bias)
        text = self.format_chat(messages, add_generation_prompt=True)
        toks = self.tokenize(text, add_special=True, parse_special=True)
        if not toks:
            raise StenoError("chat: the formatted conversation is empty", _lib.STENO_E_INVALID_ARG)
        return self._finish(self._run(toks, max_tokens, sp, keep), stream)
