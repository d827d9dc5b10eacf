"""_lib.py — ctypes bindings of steno's C API (include/steno.h, include/steno_llm.h).

Every structure below mirrors its C declaration field for field, in order and with the C names
(python/tests/test_struct_layout.py compiles a C program that prints sizeof/offsetof of each one
and compares them with ctypes). Defaults are never hard-coded here: the *_default_params()
functions of the library are called and their result adjusted.

The shared library is found in this order:
  1. $STENO_LIBRARY (a path to libsteno.so.3, or any name ctypes.CDLL accepts);
  2. the copy bundled in the wheel: steno/_native/libsteno.so.3;
  3. the system loader's libsteno.so.3 (LD_LIBRARY_PATH, ldconfig).

ctypes.CDLL releases the GIL around every foreign call, so a transcription or a generation running
in one Python thread lets other Python threads run (and call into steno) at the same time.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_size_t,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Type

__all__ = ["lib", "libc", "LIBRARY_PATH", "STRUCTS", "StenoError", "UnsupportedError", "check", "errmsg"]

# --- status codes (enum steno_status) ---------------------------------------------------------
STENO_OK = 0
STENO_E_INVALID_ARG = 1
STENO_E_IO = 2
STENO_E_FORMAT = 3
STENO_E_NOMEM = 4
STENO_E_UNSUPPORTED = 5
STENO_E_ABORTED = 6

STATUS_NAMES = {
    STENO_OK: "OK",
    STENO_E_INVALID_ARG: "INVALID_ARG",
    STENO_E_IO: "IO",
    STENO_E_FORMAT: "FORMAT",
    STENO_E_NOMEM: "NOMEM",
    STENO_E_UNSUPPORTED: "UNSUPPORTED",
    STENO_E_ABORTED: "ABORTED",
}

SAMPLE_RATE = 16000

STENO_PATH_FAST = 0
STENO_PATH_FAITHFUL = 1
STENO_WEIGHTS_F16 = 0
STENO_WEIGHTS_F32 = 1
STENO_TASK_TRANSCRIBE = 0
STENO_TASK_TRANSLATE = 1


class StenoError(RuntimeError):
    """A steno library call failed. ``str(e)`` is steno_errmsg()'s message (it names the input and
    the reason, e.g. ``"talk.mp3: no audio stream"``); ``e.status`` the steno_status code (0 when
    the error was raised by the Python layer itself)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status

    @property
    def status_name(self) -> str:
        return STATUS_NAMES.get(self.status, str(self.status))


class UnsupportedError(StenoError, NotImplementedError):
    """A valid request steno does not implement (yet), e.g. ``vad_filter=True``."""

    def __init__(self, message: str, status: int = STENO_E_UNSUPPORTED) -> None:
        super().__init__(message, status)


# --- structures -------------------------------------------------------------------------------


class steno_word(Structure):
    _fields_ = [
        ("word", c_char_p),
        ("start", c_double),
        ("end", c_double),
        ("probability", c_double),
    ]


class steno_whisper_options(Structure):
    _fields_ = [
        ("n_threads", c_int),
        ("path", c_int),  # enum steno_path
        ("weights", c_int),  # enum steno_weights
        ("audio_ctx", c_int),
    ]


class steno_segment(Structure):
    _fields_ = [
        ("id", c_int),
        ("seek", c_int),
        ("start", c_double),
        ("end", c_double),
        ("text", c_char_p),
        ("tokens", POINTER(c_int)),
        ("n_tokens", c_int),
        ("temperature", c_double),
        ("avg_logprob", c_double),
        ("compression_ratio", c_double),
        ("no_speech_prob", c_double),
        ("words", POINTER(steno_word)),
        ("n_words", c_int),
    ]


ON_SEGMENT = CFUNCTYPE(c_int, c_void_p, POINTER(steno_segment))
ON_PROGRESS = CFUNCTYPE(None, c_void_p, c_double)
SHOULD_ABORT = CFUNCTYPE(c_int, c_void_p)


class steno_transcribe_params(Structure):
    _fields_ = [
        ("temperatures", POINTER(c_double)),
        ("n_temperatures", c_int),
        ("compression_ratio_threshold", c_double),
        ("logprob_threshold", c_double),
        ("no_speech_threshold", c_double),
        ("condition_on_previous_text", c_int),
        ("initial_prompt", c_char_p),
        ("suppress_blank", c_int),
        ("suppress_tokens", POINTER(c_int)),
        ("n_suppress_tokens", c_int),
        ("without_timestamps", c_int),
        ("max_initial_timestamp", c_double),
        ("prefix", c_char_p),
        ("hotwords", c_char_p),
        ("carry_initial_prompt", c_int),
        ("clip_timestamps", POINTER(c_double)),
        ("n_clip_timestamps", c_int),
        ("seed", c_uint64),
        ("language", c_char_p),
        ("task", c_int),
        ("beam_size", c_int),
        ("patience", c_double),
        ("length_penalty", c_double),
        ("best_of", c_int),
        ("verbose", c_int),
        ("word_timestamps", c_int),
        ("prepend_punctuations", c_char_p),
        ("append_punctuations", c_char_p),
        ("hallucination_silence_threshold", c_double),
        ("on_segment", ON_SEGMENT),
        ("on_progress", ON_PROGRESS),
        ("user", c_void_p),
        ("should_abort", SHOULD_ABORT),
        # speculative decoding (include/steno.h; the binding leaves them at their defaults)
        ("draft_kind", c_int),  # enum steno_whisper_draft
        ("num_draft_tokens", c_int),
        ("draft_layers", c_int),
        ("draft_weights", c_int),  # enum steno_weights
        ("draft_model", c_void_p),  # const steno_whisper *
        ("ngram_min", c_int),
        ("ngram_max", c_int),
        ("decode_stats", c_void_p),  # steno_decode_stats *
    ]


class steno_result(Structure):
    _fields_ = [
        ("text", c_char_p),
        ("language", c_char * 16),
        ("language_probability", c_double),
        ("segments", POINTER(steno_segment)),
        ("n_segments", c_int),
        ("duration", c_double),
        ("word_timestamps", c_int),
    ]


class steno_language_prob(Structure):
    _fields_ = [
        ("code", c_char * 16),
        ("probability", c_double),
    ]


class steno_writer_options(Structure):
    _fields_ = [
        ("max_line_width", c_int),
        ("max_line_count", c_int),
        ("max_words_per_line", c_int),
        ("highlight_words", c_int),
    ]


class steno_llm_load_params(Structure):
    _fields_ = [("tokenizer_path", c_char_p)]


class steno_llm_info(Structure):
    _fields_ = [
        ("arch", c_char_p),
        ("name", c_char_p),
        ("format", c_char_p),
        ("n_vocab", c_int),
        ("n_ctx_train", c_int),
        ("n_embd", c_int),
        ("n_layer", c_int),
        ("n_head", c_int),
        ("n_head_kv", c_int),
        ("head_dim", c_int),
        ("n_ff", c_int),
        ("sliding_window", c_int),
        ("bos", c_int),
        ("eos", c_int),
        ("eot", c_int),
        ("weight_bytes", c_size_t),
    ]


class steno_llm_ctx_params(Structure):
    _fields_ = [
        ("n_threads", c_int),
        ("n_ctx", c_int),
        ("n_batch", c_int),
        ("kv_type", c_int),  # enum steno_kv_type
        ("max_kv_size", c_int),
        ("keep", c_int),
        ("kv_reserve", c_int),
        ("kv_quant", c_int),  # enum steno_kv_quant
        ("kv_group", c_int),
        ("kv_quant_start", c_int),
        ("kv_key_bits", c_int),
        ("compute", c_int),  # enum steno_llm_compute
        ("kv_sink", c_int),
        ("kv_rotate", c_int),
        ("kv_center", c_int),
    ]


class steno_logit_bias(Structure):
    _fields_ = [("token", c_int), ("bias", c_float)]


class steno_sampler_params(Structure):
    _fields_ = [
        ("temperature", c_float),
        ("top_k", c_int),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repeat_penalty", c_float),
        ("presence_penalty", c_float),
        ("frequency_penalty", c_float),
        ("penalty_last_n", c_int),
        ("seed", c_uint64),
        ("logit_bias", POINTER(steno_logit_bias)),
        ("n_logit_bias", c_int),
        ("n_probs", c_int),
    ]


class steno_token_logprob(Structure):
    _fields_ = [("token", c_int), ("logprob", c_float)]


class steno_gen_stats(Structure):
    _fields_ = [
        ("n_prompt", c_int),
        ("n_generated", c_int),
        ("prompt_seconds", c_double),
        ("decode_seconds", c_double),
        ("stop_reason", c_int),  # enum steno_stop_reason
    ]


class steno_chat_msg(Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


#: Every mirrored structure by its C name (typedef name), for the layout test.
STRUCTS: Dict[str, Type[Structure]] = {
    cls.__name__: cls
    for cls in (
        steno_word,
        steno_whisper_options,
        steno_segment,
        steno_transcribe_params,
        steno_result,
        steno_language_prob,
        steno_writer_options,
        steno_llm_load_params,
        steno_llm_info,
        steno_llm_ctx_params,
        steno_logit_bias,
        steno_sampler_params,
        steno_token_logprob,
        steno_gen_stats,
        steno_chat_msg,
    )
}

# --- loading ----------------------------------------------------------------------------------

_BUNDLED = Path(__file__).resolve().parent / "_native" / "libsteno.so.3"


_SSE_ONLY_CORES = {"prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "atom",
                   "katmai", "coppermine", "northwood", "banias"}


def _openblas_core() -> None:
    """The rule of the CLI (src/core/blas_core.h): OpenBLAS picks its kernels from the CPU model when
    it loads, and falls back to SSE3 ("Prescott") on a model it does not know although the CPU has
    AVX2/AVX-512. Before libsteno (and with it OpenBLAS) loads, ask a child process which kernels
    OpenBLAS would choose here; if SSE-only, set OPENBLAS_CORETYPE as the CLI does, so that the
    library computes with the kernels the CLI uses (same results, ~1.4x faster encoder). Nothing
    is done when OPENBLAS_CORETYPE or STENO_NO_AVX2 is set, in a frozen app, or when OpenBLAS is
    already loaded. The variable stays in os.environ, so child processes inherit it (as the CLI's).
    The probe costs ~50-100 ms once, at import."""
    import subprocess
    import sys

    # a frozen app's sys.executable is the app itself (it would start copies of itself); the
    # marker keeps a probe from ever probing again
    if ("OPENBLAS_CORETYPE" in os.environ or "STENO_NO_AVX2" in os.environ or "STENO_BLAS_PROBE" in os.environ
            or getattr(sys, "frozen", False)):
        return
    try:
        with open("/proc/self/maps") as f:
            if "libopenblas" in f.read():
                return
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
        if not {"avx2", "fma", "f16c"} <= set(flags):
            return
        probe = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
                 "l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())")
        r = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, OPENBLAS_NUM_THREADS="1", STENO_BLAS_PROBE="1"))
    except (OSError, ValueError, subprocess.SubprocessError):
        return
    if r.returncode != 0 or r.stdout.strip().lower() not in _SSE_ONLY_CORES:
        return
    skx = {"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"} <= set(flags)
    os.environ["OPENBLAS_CORETYPE"] = "SkylakeX" if skx else "Haswell"


def _load() -> "tuple[ctypes.CDLL, str]":
    _openblas_core()
    env = os.environ.get("STENO_LIBRARY")
    tried: List[str] = []
    candidates: List[str] = []
    if env:
        candidates.append(env)
    else:
        if _BUNDLED.exists():
            candidates.append(str(_BUNDLED))
        candidates.append("libsteno.so.3")
    for c in candidates:
        try:
            return ctypes.CDLL(c), c
        except OSError as e:
            tried.append("%s (%s)" % (c, e))
    raise ImportError(
        "steno: cannot load the steno shared library; tried: "
        + "; ".join(tried)
        + ". Set STENO_LIBRARY to the path of libsteno.so.3, or install the steno wheel "
        "(scripts/build_wheel.sh), which bundles it. Its dependencies are Debian packages "
        "(scripts/install_deps.sh: FFmpeg's libav*, OpenBLAS, cJSON, PCRE2, libcrypto)."
    )


lib, LIBRARY_PATH = _load()
libc = ctypes.CDLL(None)
libc.free.argtypes = [c_void_p]
libc.free.restype = None

c_int_p = POINTER(c_int)
c_float_p = POINTER(c_float)
c_double_p = POINTER(c_double)


def _fn(name: str, restype: Any, *argtypes: Any) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


# steno.h
_fn("steno_errmsg", c_char_p)
_fn("steno_warnmsg", c_char_p)
_fn("steno_audio_load", c_int, c_char_p, POINTER(c_float_p), POINTER(c_size_t))
_fn("steno_audio_load_memory", c_int, c_void_p, c_size_t, c_char_p, POINTER(c_float_p), POINTER(c_size_t))
_fn("steno_whisper_default_options", steno_whisper_options)
_fn("steno_whisper_load", c_int, c_char_p, c_int, POINTER(c_void_p))
_fn("steno_whisper_load_ex", c_int, c_char_p, POINTER(steno_whisper_options), POINTER(c_void_p))
_fn("steno_whisper_free", None, c_void_p)
_fn("steno_whisper_state_new", c_int, c_void_p, c_int, POINTER(c_void_p))
_fn("steno_whisper_state_free", None, c_void_p)
_fn("steno_whisper_is_multilingual", c_int, c_void_p)
_fn("steno_whisper_has_language", c_int, c_void_p, c_char_p)
_fn("steno_whisper_n_vocab", c_int, c_void_p)
_fn("steno_transcribe_default_params", steno_transcribe_params)
_fn(
    "steno_transcribe",
    c_int,
    c_void_p,
    c_float_p,
    c_size_t,
    POINTER(steno_transcribe_params),
    POINTER(POINTER(steno_result)),
)
_fn(
    "steno_transcribe_with_state",
    c_int,
    c_void_p,
    c_void_p,
    c_float_p,
    c_size_t,
    POINTER(steno_transcribe_params),
    POINTER(POINTER(steno_result)),
)
_fn("steno_result_free", None, POINTER(steno_result))
_fn(
    "steno_detect_language_with_state",
    c_int,
    c_void_p,
    c_void_p,
    c_float_p,
    c_size_t,
    POINTER(steno_language_prob),
    c_int,
    c_int_p,
)

# steno_llm.h
_fn("steno_llm_default_load_params", steno_llm_load_params)
_fn("steno_llm_resolve", c_int, c_char_p, c_char_p, c_size_t)
_fn("steno_llm_load", c_int, c_char_p, POINTER(steno_llm_load_params), POINTER(c_void_p))
_fn("steno_llm_free", None, c_void_p)
_fn("steno_llm_get_info", None, c_void_p, POINTER(steno_llm_info))
_fn("steno_llm_tokenize", c_int, c_void_p, c_char_p, c_size_t, c_int, c_int, POINTER(c_int_p), c_int_p)
_fn("steno_llm_token_piece", c_int, c_void_p, c_int, c_int, c_int, c_char_p, c_int)
_fn("steno_llm_is_eog", c_int, c_void_p, c_int)
_fn("steno_llm_ctx_default_params", steno_llm_ctx_params)
_fn("steno_llm_ctx_new", c_int, c_void_p, POINTER(steno_llm_ctx_params), POINTER(c_void_p))
_fn("steno_llm_ctx_free", None, c_void_p)
_fn("steno_llm_ctx_get_params", steno_llm_ctx_params, c_void_p)
_fn("steno_llm_eval", c_int, c_void_p, c_int_p, c_int, c_float_p, c_int)
_fn("steno_llm_n_past", c_int, c_void_p)
_fn("steno_llm_reset", None, c_void_p)
_fn("steno_sampler_default_params", steno_sampler_params)
_fn("steno_sampler_new", c_int, POINTER(steno_sampler_params), c_int, POINTER(c_void_p))
_fn("steno_sampler_free", None, c_void_p)
_fn("steno_sampler_sample", c_int, c_void_p, c_float_p, POINTER(steno_token_logprob), c_float_p)
_fn("steno_sampler_accept", None, c_void_p, c_int)
_fn("steno_llm_chat_format", c_int, c_void_p, POINTER(steno_chat_msg), c_int, c_int, POINTER(c_void_p))


def errmsg() -> str:
    """steno_errmsg() of the calling thread (the message is thread-local: call this on the thread
    that made the failing call)."""
    m = lib.steno_errmsg()
    return m.decode("utf-8", "replace") if m else ""


def warnmsg() -> str:
    """steno_warnmsg() of the calling thread: the caveat of its last audio load ("" when none)."""
    m = lib.steno_warnmsg()
    return m.decode("utf-8", "replace") if m else ""


def check(status: int, context: Optional[str] = None) -> None:
    """Raises StenoError (UnsupportedError for STENO_E_UNSUPPORTED) with steno_errmsg() when status
    is not STENO_OK. Must run on the thread that made the call."""
    if status == STENO_OK:
        return
    msg = errmsg() or "steno error %s" % STATUS_NAMES.get(status, status)
    if context and context not in msg:
        msg = "%s: %s" % (context, msg)
    if status == STENO_E_UNSUPPORTED:
        raise UnsupportedError(msg, status)
    raise StenoError(msg, status)


def fsencode(s: str) -> bytes:
    return os.fsencode(s)


def utf8(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode("utf-8")


class Handle:
    """A C object (a model) shared by calls that may still be running when close() is called.

    Every call that uses the pointer holds a use (acquire() ... release()); close() marks the
    handle closed, so that acquire() raises StenoError("<what> is closed") from then on, and frees
    the object at once when no call uses it, otherwise the last release() frees it. A worker thread
    still inside C therefore never sees its model freed under it."""

    def __init__(self, ptr: int, free: Callable[[int], None], what: str) -> None:
        self._ptr: Optional[int] = ptr
        self._free = free
        self.what = what
        self._lock = threading.Lock()
        self._users = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def acquire(self) -> int:
        with self._lock:
            if self._closed or self._ptr is None:
                raise StenoError("%s is closed" % self.what)
            self._users += 1
            return self._ptr

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if not (self._closed and self._users == 0 and self._ptr is not None):
                return
            ptr, self._ptr = self._ptr, None
        self._free(ptr)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._users > 0 or self._ptr is None:
                return
            ptr, self._ptr = self._ptr, None
        self._free(ptr)


class HandleOwner:
    """The lifetime half of a Python model object over a Handle: uses (_acquire/_release), closed,
    close(), the context manager and close on garbage collection. Subclasses set self._h (None
    until the C object exists) and self._closed_what ("LLM", "WhisperModel") before any raise."""

    _h: Optional[Handle] = None
    _closed_what = "model"

    def _acquire(self) -> int:
        if self._h is None:
            raise StenoError("%s is closed" % self._closed_what)
        return self._h.acquire()

    def _release(self) -> None:
        assert self._h is not None
        self._h.release()

    @property
    def closed(self) -> bool:
        return self._h is None or self._h.closed

    def close(self) -> None:
        """Frees the model. Calls still running keep it alive until they end; every call made
        after close() raises StenoError("<model> is closed")."""
        if self._h is not None:
            self._h.close()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
