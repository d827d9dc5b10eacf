"""whisper.py — speech-to-text: ``steno.WhisperModel``, faster-whisper's interface over steno's C API.

Usage::

    from steno import WhisperModel

    model = WhisperModel("tiny.en", threads=4)          # a name in the model cache, or a directory
    segments, info = model.transcribe("talk.mp3", beam_size=5)
    print(info.language, info.duration)
    for s in segments:                                  # a generator: segments arrive as decoded
        print("[%.2fs -> %.2fs] %s" % (s.start, s.end, s.text))

Exact behaviour of ``WhisperModel(model, threads=N).transcribe(audio)`` (batch code relies on it):

* ``model``: a CTranslate2 Whisper directory, or a name resolved as the CLI's ``--model`` does
  (cli/model_path.c): ``<root>/<name>`` where root is ``model_dir``, else ``$STENO_MODELS_DIR``,
  else ``$XDG_CACHE_HOME/steno/models``, else ``~/.cache/steno/models``; a value containing "/" (or
  an existing directory when the cache has no such model) is used as a path. The model is loaded
  once in the constructor (StenoError on a missing or malformed model) and is read-only afterwards.
* ``threads``: CPU threads of each transcription (0 = all online CPUs).
* ``audio``: a path (``str`` / ``os.PathLike``; any file FFmpeg decodes, via steno_audio_load),
  the bytes of a whole file (``bytes`` / ``bytearray`` / ``memoryview``, via
  steno_audio_load_memory), or a 1-D NumPy ``float32`` array of 16 kHz mono samples in [-1, 1]
  (other dtypes or shapes raise TypeError / ValueError). The audio is decoded eagerly, inside
  ``transcribe()``: an unreadable or non-audio input raises StenoError there, with the library's
  message (``"x.txt: ..."``).
* Returns ``(segments, info)`` at once. ``info`` (TranscriptionInfo) is complete: for a
  multilingual model without ``language`` the language is detected eagerly on the first 30 s
  (steno_detect_language, the same decision steno_transcribe makes). ``segments`` is a generator
  of Segment named tuples; the transcription runs in a worker thread (steno_transcribe_with_state
  on a state of its own) and each segment is yielded as soon as the C library reports it, before
  the rest of the audio is decoded. Nothing runs until the generator is first iterated. Closing
  it early (``break`` then garbage collection, or ``.close()``) tells C to stop within one 30-s
  window and waits for the worker. A failure during decoding raises StenoError from the iteration.
* Thread-safety: one WhisperModel may be used by any number of threads at once; each
  transcription gets its own decoding state (reused from a pool), the weights are shared. The GIL
  is released while C runs, so the transcriptions really run in parallel.
* Defaults are faster-whisper's (``beam_size=5, best_of=5``, the temperature ladder 0.0 .. 1.0,
  thresholds 2.4 / -1.0 / 0.6, ...). The ``steno transcribe`` CLI decodes greedily by default: pass
  ``beam_size=1, best_of=1`` for the CLI's defaults and its exact output.
* ``vad_filter=True`` raises UnsupportedError (VAD is not in steno yet, issue #14); other
  faster-whisper options steno does not implement raise UnsupportedError when given a value other
  than faster-whisper's default.
"""

from __future__ import annotations

import math
import os
import queue
import threading
from ctypes import POINTER, byref, c_double, c_float, c_int, c_size_t, c_void_p, cast
from typing import Any, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import StenoError, UnsupportedError, lib

__all__ = [
    "WhisperModel",
    "Segment",
    "Word",
    "TranscriptionInfo",
    "TranscriptionOptions",
    "load_audio",
    "resolve_model",
]

SAMPLE_RATE = _lib.SAMPLE_RATE

#: numpy.arange(0, 1 + 1e-6, 0.2), as openai-whisper and the CLI compute it.
DEFAULT_TEMPERATURES: Tuple[float, ...] = tuple(k * 0.2 for k in range(6))
DEFAULT_PREPEND_PUNCTUATIONS = "\"'\u201c\u00bf([{-"
DEFAULT_APPEND_PUNCTUATIONS = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001"


class Word(NamedTuple):
    start: float
    end: float
    word: str
    probability: float


class Segment(NamedTuple):
    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: List[int]
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    words: Optional[List[Word]]
    temperature: float


class TranscriptionOptions(NamedTuple):
    beam_size: int
    best_of: int
    patience: float
    length_penalty: float
    log_prob_threshold: Optional[float]
    no_speech_threshold: Optional[float]
    compression_ratio_threshold: Optional[float]
    condition_on_previous_text: bool
    temperatures: List[float]
    initial_prompt: Optional[str]
    carry_initial_prompt: bool
    prefix: Optional[str]
    suppress_blank: bool
    suppress_tokens: Optional[List[int]]
    without_timestamps: bool
    max_initial_timestamp: float
    word_timestamps: bool
    prepend_punctuations: str
    append_punctuations: str
    hotwords: Optional[str]
    clip_timestamps: Union[str, List[float]]
    hallucination_silence_threshold: Optional[float]
    seed: int


class TranscriptionInfo(NamedTuple):
    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    all_language_probs: Optional[List[Tuple[str, float]]]
    transcription_options: TranscriptionOptions
    vad_options: None


AudioInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


# --- model resolution (cli/model_path.c) --------------------------------------------------------


def models_root(model_dir: Optional[str] = None) -> str:
    """Where named models live: model_dir, $STENO_MODELS_DIR, $XDG_CACHE_HOME/steno/models, or
    ~/.cache/steno/models (steno_cli_models_root)."""
    if model_dir:
        return model_dir
    env = os.environ.get("STENO_MODELS_DIR")
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "steno", "models")
    home = os.environ.get("HOME") or "."
    return os.path.join(home, ".cache", "steno", "models")


def resolve_model(model: Union[str, "os.PathLike[str]"], model_dir: Optional[str] = None) -> str:
    """The directory `steno transcribe --model MODEL` would load (steno_cli_model_path)."""
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError("model: expected a model name or a directory path, got %s" % type(model).__name__)
    name = os.fspath(model)
    if not name:
        raise ValueError("model: empty name")
    root = models_root(model_dir)
    cand = os.path.join(root, name) if not os.path.isabs(name) else name
    if "/" in name or (not os.path.isfile(os.path.join(cand, "model.bin")) and os.path.isdir(name)):
        return name
    if not os.path.isdir(cand):
        raise StenoError(
            "model %s not found in %s; run scripts/fetch_model.sh" % (name, root), _lib.STENO_E_IO
        )
    return cand


# --- audio --------------------------------------------------------------------------------------


class _Samples:
    """16 kHz float32 samples: a C buffer from steno_audio_load* (freed here) or a NumPy array."""

    def __init__(self, ptr: Any, n: int, owner: Any = None, c_owned: bool = False) -> None:
        self.ptr = ptr
        self.n = n
        self.owner = owner
        self._c_owned = c_owned

    def close(self) -> None:
        if self._c_owned and self.ptr:
            _lib.libc.free(cast(self.ptr, c_void_p))
        self.ptr = None
        self._c_owned = False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def numpy(self) -> Any:
        import numpy as np

        if self.n == 0:
            return np.zeros(0, dtype=np.float32)
        return np.ctypeslib.as_array(self.ptr, shape=(self.n,)).copy()


def _load_samples(audio: AudioInput) -> _Samples:
    if isinstance(audio, (str, os.PathLike)):
        path = os.fspath(audio)
        if isinstance(path, str):
            path_b = os.fsencode(path)
        else:
            path_b = bytes(path)
        ptr = POINTER(c_float)()
        n = c_size_t(0)
        _lib.check(lib.steno_audio_load(path_b, byref(ptr), byref(n)))
        return _Samples(ptr, n.value, c_owned=True)
    if isinstance(audio, (bytes, bytearray, memoryview)):
        data = bytes(audio) if not isinstance(audio, bytes) else audio
        ptr = POINTER(c_float)()
        n = c_size_t(0)
        _lib.check(lib.steno_audio_load_memory(data, len(data), b"memory", byref(ptr), byref(n)))
        return _Samples(ptr, n.value, c_owned=True)
    np = _numpy_or_none()
    if np is not None and isinstance(audio, np.ndarray):
        if audio.dtype != np.float32:
            raise TypeError(
                "audio: a NumPy array must be float32 (16 kHz mono samples in [-1, 1]), got %s; "
                "use audio.astype(numpy.float32)" % audio.dtype
            )
        if audio.ndim != 1:
            raise ValueError("audio: a NumPy array must be 1-D (mono samples), got shape %s" % (audio.shape,))
        arr = np.ascontiguousarray(audio)
        ptr = arr.ctypes.data_as(POINTER(c_float)) if arr.size else POINTER(c_float)()
        return _Samples(ptr, int(arr.size), owner=arr)
    raise TypeError(
        "audio: expected a path (str/os.PathLike), file bytes (bytes/bytearray/memoryview) or a "
        "1-D float32 NumPy array, got %s" % type(audio).__name__
    )


def _numpy_or_none() -> Any:
    try:
        import numpy

        return numpy
    except ImportError:
        return None


def load_audio(audio: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]) -> Any:
    """Decodes a file (path or bytes) to a 1-D float32 NumPy array of 16 kHz mono samples
    (steno_audio_load / steno_audio_load_memory). Needs numpy."""
    s = _load_samples(audio)
    try:
        return s.numpy()
    finally:
        s.close()


# --- the model ----------------------------------------------------------------------------------

_PATHS = {"fast": _lib.STENO_PATH_FAST, "faithful": _lib.STENO_PATH_FAITHFUL}
_WEIGHTS = {"f16": _lib.STENO_WEIGHTS_F16, "f32": _lib.STENO_WEIGHTS_F32}
_TASKS = {"transcribe": _lib.STENO_TASK_TRANSCRIBE, "translate": _lib.STENO_TASK_TRANSLATE}
_DONE = object()


def _opt_float(name: str, v: Any) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("%s: expected a number or None, got %r" % (name, v))
    return float(v)


def _int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s: expected an integer, got %r" % (name, v))
    if not lo <= v <= hi:
        raise ValueError("%s: expected an integer in %d..%d, got %d" % (name, lo, hi, v))
    return int(v)


def _opt_str(name: str, v: Any) -> Optional[str]:
    if v is None or isinstance(v, str):
        return v
    raise TypeError("%s: expected a string or None, got %s" % (name, type(v).__name__))


class WhisperModel:
    """A loaded Whisper model (CTranslate2 directory), shared by any number of transcriptions.

    Args:
        model: a model name in the model cache ("tiny.en", "base") or a model directory.
        threads: CPU threads per transcription (0: all online CPUs).
        path: "fast" (default: fused attention, f16 weights) or "faithful" (openai-whisper's math
            op for op, float32).
        weights: fast path decoder weights, "f16" (default) or "f32".
        audio_ctx: encoder positions (0 = the model's 1500; fewer is a Lab approximation, fast
            path only).
        model_dir: where named models are looked up (the CLI's --model-dir).
    """

    def __init__(
        self,
        model: Union[str, "os.PathLike[str]"],
        threads: int = 0,
        path: str = "fast",
        weights: str = "f16",
        audio_ctx: int = 0,
        model_dir: Optional[str] = None,
    ) -> None:
        self._w: Optional[int] = None
        threads = _int("threads", threads, 0, 256)
        if path not in _PATHS:
            raise ValueError("path: expected 'fast' or 'faithful', got %r" % (path,))
        if weights not in _WEIGHTS:
            raise ValueError("weights: expected 'f16' or 'f32', got %r" % (weights,))
        audio_ctx = _int("audio_ctx", audio_ctx, 0, 1500)
        self.model_path = resolve_model(model, model_dir)
        self.threads = threads
        opts = lib.steno_whisper_default_options()
        opts.n_threads = threads
        opts.path = _PATHS[path]
        opts.weights = _WEIGHTS[weights]
        opts.audio_ctx = audio_ctx
        w = c_void_p()
        _lib.check(lib.steno_whisper_load_ex(os.fsencode(self.model_path), byref(opts), byref(w)))
        self._w = w.value
        self._states: List[int] = []
        self._lock = threading.Lock()
        self.is_multilingual = bool(lib.steno_whisper_is_multilingual(self._w))
        self.n_vocab = int(lib.steno_whisper_n_vocab(self._w))

    # -- states (one per concurrent transcription) --
    def _take_state(self) -> int:
        with self._lock:
            if self._w is None:
                raise StenoError("WhisperModel is closed")
            if self._states:
                return self._states.pop()
        s = c_void_p()
        _lib.check(lib.steno_whisper_state_new(self._w, self.threads, byref(s)))
        assert s.value is not None
        return s.value

    def _give_state(self, s: int) -> None:
        with self._lock:
            if self._w is not None:
                self._states.append(s)
                return
        lib.steno_whisper_state_free(s)

    def close(self) -> None:
        """Frees the model. Transcriptions still running keep it alive until they end."""
        with self._lock:
            states, self._states = self._states, []
            w, self._w = self._w, None
        for s in states:
            lib.steno_whisper_state_free(s)
        if w:
            lib.steno_whisper_free(w)

    def __enter__(self) -> "WhisperModel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def has_language(self, code: str) -> bool:
        return bool(lib.steno_whisper_has_language(self._w, code.encode("utf-8")))

    # -- language detection --
    def detect_language(self, audio: AudioInput, top: int = 5) -> List[Tuple[str, float]]:
        """The `top` most probable languages of the first 30 s, as (code, probability), most
        probable first (steno_detect_language). UnsupportedError on an English-only model."""
        top = _int("top", top, 1, 200)
        samples = _load_samples(audio)
        try:
            return self._detect(samples, top)
        finally:
            samples.close()

    def _detect(self, samples: _Samples, cap: int) -> List[Tuple[str, float]]:
        out = (_lib.steno_language_prob * cap)()
        n = c_int(0)
        state = self._take_state()
        try:
            st = lib.steno_detect_language_with_state(self._w, state, samples.ptr, samples.n, out, cap, byref(n))
            _lib.check(st)
        finally:
            self._give_state(state)
        return [(out[i].code.decode("ascii"), float(out[i].probability)) for i in range(n.value)]

    # -- transcription --
    def transcribe(
        self,
        audio: AudioInput,
        language: Optional[str] = None,
        task: str = "transcribe",
        beam_size: int = 5,
        best_of: int = 5,
        patience: float = 1,
        length_penalty: float = 1,
        repetition_penalty: float = 1,
        no_repeat_ngram_size: int = 0,
        temperature: Union[float, Sequence[float]] = DEFAULT_TEMPERATURES,
        compression_ratio_threshold: Optional[float] = 2.4,
        log_prob_threshold: Optional[float] = -1.0,
        no_speech_threshold: Optional[float] = 0.6,
        condition_on_previous_text: bool = True,
        prompt_reset_on_temperature: float = 0.5,
        initial_prompt: Optional[str] = None,
        prefix: Optional[str] = None,
        suppress_blank: bool = True,
        suppress_tokens: Optional[List[int]] = [-1],
        without_timestamps: bool = False,
        max_initial_timestamp: float = 1.0,
        word_timestamps: bool = False,
        prepend_punctuations: str = DEFAULT_PREPEND_PUNCTUATIONS,
        append_punctuations: str = DEFAULT_APPEND_PUNCTUATIONS,
        multilingual: bool = False,
        vad_filter: bool = False,
        vad_parameters: Optional[Any] = None,
        max_new_tokens: Optional[int] = None,
        chunk_length: Optional[int] = None,
        clip_timestamps: Union[str, List[float]] = "0",
        hallucination_silence_threshold: Optional[float] = None,
        hotwords: Optional[str] = None,
        language_detection_threshold: Optional[float] = 0.5,
        language_detection_segments: int = 1,
        carry_initial_prompt: bool = False,
        seed: int = 0,
    ) -> Tuple[Iterator[Segment], TranscriptionInfo]:
        """Transcribes audio; faster-whisper's WhisperModel.transcribe signature and defaults.

        Returns (segments, info): segments is a generator of Segment (decoded in a worker thread
        and yielded as they come), info a TranscriptionInfo. See the module docstring for the
        exact behaviour. steno-only options: carry_initial_prompt (openai-whisper), seed (the
        sampler's RNG at temperature > 0)."""
        if self._w is None:
            raise StenoError("WhisperModel is closed")
        # faster-whisper options steno does not implement: an error unless left at the default.
        if vad_filter:
            raise UnsupportedError(
                "vad_filter=True: voice activity detection is not yet in steno (issue #14); "
                "transcribe without it, or pass clip_timestamps"
            )
        unsupported = [
            ("vad_parameters", vad_parameters, None),
            ("repetition_penalty", repetition_penalty, 1),
            ("no_repeat_ngram_size", no_repeat_ngram_size, 0),
            ("prompt_reset_on_temperature", prompt_reset_on_temperature, 0.5),
            ("multilingual", multilingual, False),
            ("max_new_tokens", max_new_tokens, None),
            ("chunk_length", chunk_length, None),
            ("language_detection_segments", language_detection_segments, 1),
        ]
        for name, value, default in unsupported:
            if value != default:
                raise UnsupportedError(
                    "%s=%r: not implemented in steno (only faster-whisper's default %r is)" % (name, value, default)
                )
        if language_detection_threshold is not None:
            _opt_float("language_detection_threshold", language_detection_threshold)

        # --- arguments -> steno_transcribe_params (validated here, before any work) ---
        if task not in _TASKS:
            raise ValueError("task: expected 'transcribe' or 'translate', got %r" % (task,))
        language = _opt_str("language", language)
        if language is not None:
            language = language.lower()
            if language == "auto":
                language = None
        if not self.is_multilingual:
            if language not in (None, "en"):
                raise ValueError("language=%r: this model is English-only (use 'en' or None)" % language)
            if task == "translate":
                raise ValueError("task='translate' needs a multilingual model; this one is English-only")
        elif language is not None and not self.has_language(language):
            raise ValueError("language=%r: not a language of this model" % language)
        beam_size = _int("beam_size", beam_size, 1, 64)
        best_of = _int("best_of", best_of, 1, 64)
        patience_f = _opt_float("patience", patience)
        length_penalty_f = _opt_float("length_penalty", length_penalty)
        patience_f = 1.0 if patience_f is None else patience_f
        length_penalty_f = 1.0 if length_penalty_f is None else length_penalty_f
        if not (math.isfinite(patience_f) and patience_f > 0):
            raise ValueError("patience: expected a number > 0, got %r" % patience)
        if not (math.isfinite(length_penalty_f) and length_penalty_f >= 0):
            raise ValueError("length_penalty: expected a number >= 0, got %r" % length_penalty)
        if beam_size >= 2 and not (0.5 <= beam_size * patience_f < 4096.5):
            raise ValueError("patience x beam_size must round to 1..4096 finished hypotheses")
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
            temps = [float(temperature)]
        else:
            try:
                temps = [float(t) for t in temperature]
            except TypeError:
                raise TypeError("temperature: expected a number or a sequence of numbers") from None
        if not temps or len(temps) > 64 or any(not (t >= 0 and math.isfinite(t)) for t in temps):
            raise ValueError("temperature: expected 1..64 numbers >= 0, got %r" % (temperature,))
        crt = _opt_float("compression_ratio_threshold", compression_ratio_threshold)
        lpt = _opt_float("log_prob_threshold", log_prob_threshold)
        nst = _opt_float("no_speech_threshold", no_speech_threshold)
        hst = _opt_float("hallucination_silence_threshold", hallucination_silence_threshold)
        if hst is not None and not hst >= 0:
            raise ValueError("hallucination_silence_threshold: expected a number >= 0 or None")
        if hst is not None and not word_timestamps:
            raise ValueError("hallucination_silence_threshold requires word_timestamps=True")
        initial_prompt = _opt_str("initial_prompt", initial_prompt)
        prefix = _opt_str("prefix", prefix)
        hotwords = _opt_str("hotwords", hotwords)
        prepend = _opt_str("prepend_punctuations", prepend_punctuations)
        append = _opt_str("append_punctuations", append_punctuations)
        max_initial_timestamp = float(max_initial_timestamp)
        seed = _int("seed", seed, 0, 2**64 - 1)
        if suppress_tokens is None:
            sup: List[int] = []
        else:
            try:
                sup = [int(t) for t in suppress_tokens]
            except (TypeError, ValueError):
                raise TypeError("suppress_tokens: expected a list of token ids or None") from None
            for t in sup:
                if t < -1 or t >= self.n_vocab:
                    raise ValueError("suppress_tokens: token id %d is outside -1, 0..%d" % (t, self.n_vocab - 1))
        if isinstance(clip_timestamps, str):
            clips = [float(x) for x in clip_timestamps.split(",") if x.strip()] if clip_timestamps.strip() else []
        else:
            clips = [float(x) for x in clip_timestamps]
        for k in range(1, len(clips), 2):
            if clips[k] < clips[k - 1]:
                raise ValueError("clip_timestamps: clip %d ends at %g s, before its start %g s" % (k // 2 + 1, clips[k], clips[k - 1]))
        if any(c < 0 or not math.isfinite(c) for c in clips):
            raise ValueError("clip_timestamps: expected seconds >= 0")
        if clips == [0.0]:
            clips = []

        options = TranscriptionOptions(
            beam_size=beam_size,
            best_of=best_of,
            patience=patience_f,
            length_penalty=length_penalty_f,
            log_prob_threshold=lpt,
            no_speech_threshold=nst,
            compression_ratio_threshold=crt,
            condition_on_previous_text=bool(condition_on_previous_text),
            temperatures=temps,
            initial_prompt=initial_prompt,
            carry_initial_prompt=bool(carry_initial_prompt),
            prefix=prefix,
            suppress_blank=bool(suppress_blank),
            suppress_tokens=None if suppress_tokens is None else sup,
            without_timestamps=bool(without_timestamps),
            max_initial_timestamp=max_initial_timestamp,
            word_timestamps=bool(word_timestamps),
            prepend_punctuations=prepend if prepend is not None else DEFAULT_PREPEND_PUNCTUATIONS,
            append_punctuations=append if append is not None else DEFAULT_APPEND_PUNCTUATIONS,
            hotwords=hotwords,
            clip_timestamps=clip_timestamps,
            hallucination_silence_threshold=hst,
            seed=seed,
        )

        samples = _load_samples(audio)
        duration = samples.n / SAMPLE_RATE
        all_probs: Optional[List[Tuple[str, float]]] = None
        if language is not None:
            lang, lang_prob = language, 1.0
        elif not self.is_multilingual:
            lang, lang_prob = "en", 1.0
        else:
            all_probs = self._detect(samples, 200)
            lang, lang_prob = all_probs[0] if all_probs else ("en", 1.0)

        keep: List[Any] = []  # objects the C struct points into, alive for the whole call
        p = lib.steno_transcribe_default_params()
        t_arr = (c_double * len(temps))(*temps)
        keep.append(t_arr)
        p.temperatures = cast(t_arr, POINTER(c_double))
        p.n_temperatures = len(temps)
        p.compression_ratio_threshold = 0.0 if crt is None else crt
        p.logprob_threshold = -math.inf if lpt is None else lpt
        p.no_speech_threshold = -1.0 if nst is None else nst
        p.condition_on_previous_text = int(bool(condition_on_previous_text))
        p.initial_prompt = _lib.utf8(initial_prompt)
        p.suppress_blank = int(bool(suppress_blank))
        if sup != [-1]:
            s_arr = (c_int * max(1, len(sup)))(*sup)
            keep.append(s_arr)
            p.suppress_tokens = cast(s_arr, POINTER(c_int))  # non-NULL even when empty
            p.n_suppress_tokens = len(sup)
        p.without_timestamps = int(bool(without_timestamps))
        p.max_initial_timestamp = max_initial_timestamp
        p.prefix = _lib.utf8(prefix)
        p.hotwords = _lib.utf8(hotwords)
        p.carry_initial_prompt = int(bool(carry_initial_prompt))
        if clips:
            c_arr = (c_double * len(clips))(*clips)
            keep.append(c_arr)
            p.clip_timestamps = cast(c_arr, POINTER(c_double))
            p.n_clip_timestamps = len(clips)
        p.seed = seed
        p.language = lang.encode("ascii")
        p.task = _TASKS[task]
        p.beam_size = beam_size if beam_size >= 2 else 0
        p.patience = patience_f
        p.length_penalty = length_penalty_f
        p.best_of = best_of
        p.verbose = 0
        p.word_timestamps = int(bool(word_timestamps))
        if prepend is not None and prepend != DEFAULT_PREPEND_PUNCTUATIONS:
            p.prepend_punctuations = prepend.encode("utf-8")
        if append is not None and append != DEFAULT_APPEND_PUNCTUATIONS:
            p.append_punctuations = append.encode("utf-8")
        p.hallucination_silence_threshold = -1.0 if hst is None else hst

        info = TranscriptionInfo(
            language=lang,
            language_probability=lang_prob,
            duration=duration,
            duration_after_vad=duration,
            all_language_probs=all_probs,
            transcription_options=options,
            vad_options=None,
        )
        return self._segments(samples, p, keep, bool(word_timestamps)), info

    def _segments(self, samples: _Samples, p: Any, keep: List[Any], with_words: bool) -> Iterator[Segment]:
        q: "queue.Queue[Any]" = queue.Queue()
        stop = threading.Event()

        def on_segment(user: Any, seg_p: Any) -> int:
            try:
                q.put(_segment(seg_p.contents, with_words))
            except BaseException as e:  # never let an exception unwind into C
                q.put(e)
                return 1
            return 1 if stop.is_set() else 0

        def should_abort(user: Any) -> int:
            return 1 if stop.is_set() else 0

        cb_seg = _lib.ON_SEGMENT(on_segment)
        cb_abort = _lib.SHOULD_ABORT(should_abort)
        p.on_segment = cb_seg
        p.should_abort = cb_abort

        def work() -> None:
            try:
                state = self._take_state()
            except BaseException as e:
                q.put(e)
                q.put(_DONE)
                return
            res = POINTER(_lib.steno_result)()
            try:
                st = lib.steno_transcribe_with_state(self._w, state, samples.ptr, samples.n, byref(p), byref(res))
                if st != _lib.STENO_OK and not (st == _lib.STENO_E_ABORTED and stop.is_set()):
                    try:
                        _lib.check(st)  # reads steno_errmsg() on this (the failing) thread
                    except StenoError as e:
                        q.put(e)
            finally:
                if res:
                    lib.steno_result_free(res)
                self._give_state(state)
                q.put(_DONE)

        worker = threading.Thread(target=work, name="steno-transcribe", daemon=True)
        worker.start()
        try:
            while True:
                item = q.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            worker.join()
            del cb_seg, cb_abort, keep
            samples.close()


def _segment(s: Any, with_words: bool) -> Segment:
    words: Optional[List[Word]] = None
    if with_words:
        words = [
            Word(
                start=float(w.start),
                end=float(w.end),
                word=(w.word or b"").decode("utf-8", "replace"),
                probability=float(w.probability),
            )
            for w in (s.words[i] for i in range(s.n_words))
        ]
    return Segment(
        id=int(s.id),
        seek=int(s.seek),
        start=float(s.start),
        end=float(s.end),
        text=(s.text or b"").decode("utf-8", "replace"),
        tokens=[s.tokens[i] for i in range(s.n_tokens)],
        avg_logprob=float(s.avg_logprob),
        compression_ratio=float(s.compression_ratio),
        no_speech_prob=float(s.no_speech_prob),
        words=words,
        temperature=float(s.temperature),
    )
