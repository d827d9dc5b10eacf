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
``close()`` while a streaming generation is being consumed frees the model when that generation
ends; every call after close() raises StenoError("LLM is closed").
"""

from __future__ import annotations

import codecs
import math
import numbers
import os
import random
import threading
import warnings
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_void_p, cast, create_string_buffer, string_at
from typing import Any, Iterator, List, Literal, Mapping, NamedTuple, Optional, Sequence, Tuple, Union, overload

from . import _lib
from ._args import _int
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


class LLM(_lib.HandleOwner):
    """A loaded LLM (GGUF: Llama family, Gemma 3; or a llama2.c checkpoint).

    Args:
        model: a .gguf / llama2.c file or a known name (steno_llm_resolve).
        n_ctx: positions a generation may hold: 0 (default) = the model's training context
            (``info.n_ctx_train``), else 1..16777216 as the CLI's -c/--ctx-size takes. Like the
            CLI, a value above the training context is allowed (positions past it degrade the
            text); it is not clamped.
        threads: CPU threads per generation (0: all online CPUs; at most 256).
        n_batch: prompt tokens per forward pass (0: the library's default, 256; at most 4096).
        tokenizer: llama2.c models only: the tokenizer file (default: beside the model).

    ``close()`` frees the model once the generations still running (a streaming generator being
    consumed) have ended; every call after it raises StenoError("LLM is closed").
    """

    _closed_what = "LLM"

    def __init__(
        self,
        model: Union[str, "os.PathLike[str]"],
        n_ctx: int = 0,
        threads: int = 0,
        n_batch: int = 0,
        tokenizer: Optional[str] = None,
    ) -> None:
        self._h: Optional[_lib.Handle] = None
        n_ctx = _int("n_ctx", n_ctx, 0, 1 << 24)
        threads = _int("threads", threads, 0, 256)
        n_batch = _int("n_batch", n_batch, 0, 4096)
        if tokenizer is not None and not isinstance(tokenizer, (str, os.PathLike)):
            raise TypeError("tokenizer: expected a file path or None, got %s" % type(tokenizer).__name__)
        self.model_path = resolve(model)
        lp = lib.steno_llm_default_load_params()
        if tokenizer is not None:
            lp.tokenizer_path = os.fsencode(tokenizer)
        m = c_void_p()
        st = lib.steno_llm_load(os.fsencode(self.model_path), byref(lp), byref(m))
        if st != _lib.STENO_OK:
            msg = _lib.errmsg()
            if "not a llama2.c checkpoint (" in msg and not _is_gguf(self.model_path):
                detail = msg.split("not a llama2.c checkpoint (", 1)[1].rstrip(")")
                raise StenoError(
                    "%s: neither GGUF nor a llama2.c checkpoint (no GGUF magic; read as llama2.c: %s)"
                    % (self.model_path, detail),
                    st,
                )
            _lib.check(st)
        assert m.value is not None
        self._ctxs: List[int] = []
        self._lock = threading.Lock()
        self._h = _lib.Handle(m.value, self._free, "LLM")
        raw = _lib.steno_llm_info()
        lib.steno_llm_get_info(m.value, byref(raw))
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
        c = self._take_ctx(m.value)  # fails now (not at the first generation) on bad parameters
        self.n_ctx = int(lib.steno_llm_ctx_get_params(c).n_ctx)
        self._give_ctx(c)

    # -- lifetime --
    def _free(self, m: int) -> None:
        with self._lock:
            ctxs, self._ctxs = self._ctxs, []
        for c in ctxs:
            lib.steno_llm_ctx_free(c)
        lib.steno_llm_free(m)


    def __enter__(self) -> "LLM":
        return self


    # -- contexts (the caller holds a use of the model) --
    def _take_ctx(self, m: int) -> int:
        with self._lock:
            if self._ctxs:
                return self._ctxs.pop()
        c = c_void_p()
        _lib.check(lib.steno_llm_ctx_new(m, byref(self._ctx_params), byref(c)))
        assert c.value is not None
        return c.value

    def _give_ctx(self, c: int) -> None:
        with self._lock:
            if not self.closed:
                self._ctxs.append(c)
                return
        lib.steno_llm_ctx_free(c)

    # -- tokens --
    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = False) -> List[int]:
        """steno_llm_tokenize: BOS (and EOS) as the tokenizer asks when add_special; control tokens
        written in the text become tokens when parse_special."""
        if not isinstance(text, str):
            raise TypeError("text: expected str, got %s" % type(text).__name__)
        m = self._acquire()
        try:
            data = text.encode("utf-8")
            toks = POINTER(c_int)()
            n = c_int(0)
            _lib.check(lib.steno_llm_tokenize(m, data, len(data), int(add_special), int(parse_special), byref(toks), byref(n)))
            try:
                return [toks[i] for i in range(n.value)]
            finally:
                _lib.libc.free(cast(toks, c_void_p))
        finally:
            self._release()

    def _piece(self, m: int, tok: int, prev: int, buf: Any) -> bytes:
        n = lib.steno_llm_token_piece(m, tok, prev, 0, buf, len(buf))
        if n < 0:
            buf = create_string_buffer(-n)
            n = lib.steno_llm_token_piece(m, tok, prev, 0, buf, len(buf))
        return bytes(buf.raw[: max(n, 0)])

    def detokenize_bytes(self, tokens: Sequence[int], prev: int = -1) -> bytes:
        """The bytes of tokens' text (steno_llm_token_piece; control tokens omitted): a single
        token may hold an incomplete UTF-8 sequence. prev: the token before them, or -1."""
        toks = [_int("tokens[%d]" % i, t, 0, self.info.n_vocab - 1) for i, t in enumerate(tokens)]
        m = self._acquire()
        try:
            buf = create_string_buffer(256)
            out = bytearray()
            for t in toks:
                out += self._piece(m, t, prev, buf)
                prev = t
            return bytes(out)
        finally:
            self._release()

    def detokenize(self, tokens: Sequence[int]) -> str:
        """The text of tokens (as generation prints them; control tokens omitted)."""
        return self.detokenize_bytes(tokens).decode("utf-8", "replace")

    def format_chat(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> str:
        """The conversation in the model's chat template (steno_llm_chat_format). UnsupportedError
        when the model has no known template. Each message is {"role": "system" | "user" |
        "assistant", "content": str}; there must be at least one."""
        arr, keep = _messages(messages)
        m = self._acquire()
        try:
            out = c_void_p()
            _lib.check(lib.steno_llm_chat_format(m, arr, len(messages), int(add_generation_prompt), byref(out)))
            try:
                return string_at(out.value).decode("utf-8", "replace") if out.value else ""
            finally:
                _lib.libc.free(out)
        finally:
            self._release()
            del keep

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
        # the CLI's ranges (cli/generate_cmd.c): --temp >= 0, --top-p / --min-p 0..1, ...
        sp = lib.steno_sampler_default_params()
        sp.temperature = _real("temperature", temperature, lo=0.0)
        sp.top_k = _int("top_k", top_k, 0, 1 << 24)
        sp.top_p = _real("top_p", top_p, lo=0.0, hi=1.0)
        sp.min_p = _real("min_p", min_p, lo=0.0, hi=1.0)
        sp.repeat_penalty = _real("repeat_penalty", repeat_penalty, lo=0.0, lo_open=True)
        sp.penalty_last_n = _int("repeat_last_n", repeat_last_n, -1, 1 << 20)
        sp.presence_penalty = _real("presence_penalty", presence_penalty)
        sp.frequency_penalty = _real("frequency_penalty", frequency_penalty)
        if seed is None:
            seed = random.SystemRandom().getrandbits(64)
        sp.seed = _int("seed", seed, 0, 2**64 - 1)
        keep: List[Any] = []
        if logit_bias:
            if not isinstance(logit_bias, Mapping):
                raise TypeError("logit_bias: expected a {token id: bias} mapping, got %s" % type(logit_bias).__name__)
            b = (_lib.steno_logit_bias * len(logit_bias))()
            for i, (t, v) in enumerate(logit_bias.items()):
                b[i].token = _int("logit_bias token", t, 0, self.info.n_vocab - 1)
                b[i].bias = _real("logit_bias[%r]" % (t,), v, allow_inf=True)
            sp.logit_bias = cast(b, POINTER(_lib.steno_logit_bias))
            sp.n_logit_bias = len(logit_bias)
            keep.append(b)
        return sp, keep

    def _check_prompt(self, tokens: List[int], max_tokens: Optional[int]) -> Optional[int]:
        if max_tokens is not None:
            if isinstance(max_tokens, bool) or not isinstance(max_tokens, numbers.Integral):
                raise TypeError("max_tokens: expected an integer or None (no limit), got %r" % (max_tokens,))
            if max_tokens < 0:
                raise ValueError("max_tokens: expected an integer >= 0 or None (no limit), got %d" % max_tokens)
            max_tokens = int(max_tokens)
        if len(tokens) > self.n_ctx:
            raise StenoError(
                "context full: the prompt's %d tokens exceed n_ctx %d (pass a larger n_ctx to LLM(); the model was "
                "trained on %d)" % (len(tokens), self.n_ctx, self.info.n_ctx_train),
                _lib.STENO_E_INVALID_ARG,
            )
        return max_tokens

    def _check(self, status: int) -> None:
        try:
            _lib.check(status)
        except StenoError as e:
            msg = str(e)
            if "-c/--ctx-size" in msg:
                msg = msg.replace("(raise -c/--ctx-size)", "(pass a larger n_ctx to LLM())")
                raise type(e)(msg, e.status) from None
            raise

    def _run(self, tokens: List[int], max_tokens: Optional[int], sp: Any, keep: List[Any]) -> Iterator[str]:
        """Evaluates tokens, then samples (steno_llm_generate's loop), yielding decoded text."""
        n_predict = -1 if max_tokens is None else max_tokens
        m = self._acquire()  # the model stays alive until this generator ends, close() or not
        try:
            ctx = self._take_ctx(m)
            sampler = c_void_p()
            try:
                lib.steno_llm_reset(ctx)
                _lib.check(lib.steno_sampler_new(byref(sp), self.info.n_vocab, byref(sampler)))
                logits = (c_float * self.info.n_vocab)()
                arr = (c_int * len(tokens))(*tokens)
                self._check(lib.steno_llm_eval(ctx, arr, len(tokens), logits, 0))
                dec = codecs.getincrementaldecoder("utf-8")("replace")
                buf = create_string_buffer(256)
                prev = tokens[-1]
                one = c_int(0)
                i = 0
                while n_predict < 0 or i < n_predict:
                    tok = lib.steno_sampler_sample(sampler, logits, None, None)
                    if lib.steno_llm_is_eog(m, tok):
                        break
                    text = dec.decode(self._piece(m, tok, prev, buf))
                    prev = tok
                    if text:
                        yield text
                    if n_predict >= 0 and i + 1 >= n_predict:
                        break
                    if lib.steno_llm_n_past(ctx) + 1 > self.n_ctx:
                        warnings.warn(
                            "stopped: the context is full after %d prompt + %d generated tokens (pass a larger "
                            "n_ctx to LLM())" % (len(tokens), i + 1),
                            stacklevel=2,
                        )
                        break
                    one.value = tok
                    self._check(lib.steno_llm_eval(ctx, byref(one), 1, logits, 0))
                    i += 1
                tail = dec.decode(b"", final=True)
                if tail:
                    yield tail
            finally:
                if sampler.value:
                    lib.steno_sampler_free(sampler)
                self._give_ctx(ctx)
                del keep
        finally:
            self._release()

    @overload
    def generate(
        self,
        prompt: str,
        max_tokens: Optional[int] = ...,
        temperature: float = ...,
        top_p: float = ...,
        top_k: int = ...,
        min_p: float = ...,
        repeat_penalty: float = ...,
        repeat_last_n: int = ...,
        presence_penalty: float = ...,
        frequency_penalty: float = ...,
        seed: Optional[int] = ...,
        logit_bias: Optional[Mapping[int, float]] = ...,
        stream: Literal[False] = ...,
        add_bos: bool = ...,
        special: bool = ...,
    ) -> str: ...

    @overload
    def generate(
        self,
        prompt: str,
        max_tokens: Optional[int] = ...,
        temperature: float = ...,
        top_p: float = ...,
        top_k: int = ...,
        min_p: float = ...,
        repeat_penalty: float = ...,
        repeat_last_n: int = ...,
        presence_penalty: float = ...,
        frequency_penalty: float = ...,
        seed: Optional[int] = ...,
        logit_bias: Optional[Mapping[int, float]] = ...,
        *,
        stream: Literal[True],
        add_bos: bool = ...,
        special: bool = ...,
    ) -> Iterator[str]: ...

    @overload
    def generate(
        self,
        prompt: str,
        max_tokens: Optional[int] = ...,
        temperature: float = ...,
        top_p: float = ...,
        top_k: int = ...,
        min_p: float = ...,
        repeat_penalty: float = ...,
        repeat_last_n: int = ...,
        presence_penalty: float = ...,
        frequency_penalty: float = ...,
        seed: Optional[int] = ...,
        logit_bias: Optional[Mapping[int, float]] = ...,
        stream: bool = ...,
        add_bos: bool = ...,
        special: bool = ...,
    ) -> Union[str, Iterator[str]]: ...

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
        context, an int >= 0 = at most that many tokens; seed None = random). Returns the text, or
        with stream=True an iterator of pieces. add_bos=False is --no-bos, special=True is
        --special (control tokens in the prompt). A prompt longer than n_ctx raises StenoError;
        a generation that fills the context stops with a warning, as the CLI's note."""
        if not isinstance(prompt, str):
            raise TypeError("prompt: expected str, got %s" % type(prompt).__name__)
        sp, keep = self._sampler_params(temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
                                        presence_penalty, frequency_penalty, seed, logit_bias)
        toks = self.tokenize(prompt, add_special=add_bos, parse_special=special)
        if not toks:
            if self.info.bos < 0:
                raise StenoError("empty prompt and the model has no BOS token", _lib.STENO_E_INVALID_ARG)
            toks = [self.info.bos]
        max_tokens = self._check_prompt(toks, max_tokens)
        gen = self._run(toks, max_tokens, sp, keep)
        return gen if stream else "".join(gen)

    @overload
    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        max_tokens: Optional[int] = ...,
        temperature: float = ...,
        top_p: float = ...,
        top_k: int = ...,
        min_p: float = ...,
        repeat_penalty: float = ...,
        repeat_last_n: int = ...,
        presence_penalty: float = ...,
        frequency_penalty: float = ...,
        seed: Optional[int] = ...,
        logit_bias: Optional[Mapping[int, float]] = ...,
        stream: Literal[False] = ...,
    ) -> str: ...

    @overload
    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        max_tokens: Optional[int] = ...,
        temperature: float = ...,
        top_p: float = ...,
        top_k: int = ...,
        min_p: float = ...,
        repeat_penalty: float = ...,
        repeat_last_n: int = ...,
        presence_penalty: float = ...,
        frequency_penalty: float = ...,
        seed: Optional[int] = ...,
        logit_bias: Optional[Mapping[int, float]] = ...,
        *,
        stream: Literal[True],
    ) -> Iterator[str]: ...

    @overload
    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        max_tokens: Optional[int] = ...,
        temperature: float = ...,
        top_p: float = ...,
        top_k: int = ...,
        min_p: float = ...,
        repeat_penalty: float = ...,
        repeat_last_n: int = ...,
        presence_penalty: float = ...,
        frequency_penalty: float = ...,
        seed: Optional[int] = ...,
        logit_bias: Optional[Mapping[int, float]] = ...,
        stream: bool = ...,
    ) -> Union[str, Iterator[str]]: ...

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
        str}, ...], at least one), formatted with the model's chat template, as `steno chat`
        answers a conversation (max_tokens 512 per reply by default, -n). Returns the text, or with
        stream=True an iterator of pieces. UnsupportedError when the model has no chat template."""
        sp, keep = self._sampler_params(temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
                                        presence_penalty, frequency_penalty, seed, logit_bias)
        text = self.format_chat(messages, add_generation_prompt=True)
        toks = self.tokenize(text, add_special=True, parse_special=True)
        if not toks:
            raise StenoError("chat: the formatted conversation is empty", _lib.STENO_E_INVALID_ARG)
        max_tokens = self._check_prompt(toks, max_tokens)
        gen = self._run(toks, max_tokens, sp, keep)
        return gen if stream else "".join(gen)


#: The roles steno's chat templates know (src/text/chat_template.c: ChatML writes the role as
#: given, Gemma maps assistant to "model" and merges system into the first user turn).
ROLES = ("system", "user", "assistant")


def _messages(messages: Any) -> Tuple[Any, List[bytes]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError('messages: expected a list of {"role": ..., "content": ...} dicts, got %s'
                        % type(messages).__name__)
    if not messages:
        raise ValueError("messages: empty conversation (expected at least one message)")
    arr = (_lib.steno_chat_msg * len(messages))()
    keep: List[bytes] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping) or not isinstance(msg.get("content"), str) or "role" not in msg:
            raise TypeError('messages[%d]: expected {"role": str, "content": str}, got %r' % (i, msg))
        role, content = msg["role"], msg["content"]
        if role not in ROLES:
            raise ValueError("messages[%d].role: expected 'system', 'user' or 'assistant', got %r" % (i, role))
        if "\0" in content:
            raise ValueError("messages[%d].content: contains a NUL character" % i)
        r, c = role.encode("utf-8"), content.encode("utf-8")
        keep += [r, c]
        arr[i].role = r
        arr[i].content = c
    return arr, keep


def _is_gguf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False



def _real(
    name: str,
    v: Any,
    lo: Optional[float] = None,
    hi: Optional[float] = None,
    lo_open: bool = False,
    allow_inf: bool = False,
) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("%s: expected a number, got %r" % (name, v))
    f = float(v)
    if math.isnan(f) or (math.isinf(f) and not allow_inf):
        raise ValueError("%s: expected a finite number, got %r" % (name, v))
    if lo is not None and (f < lo or (lo_open and f == lo)):
        raise ValueError("%s: expected a number %s %g, got %r" % (name, ">" if lo_open else ">=", lo, v))
    if hi is not None and f > hi:
        raise ValueError("%s: expected a number <= %g, got %r" % (name, hi, v))
    return f
