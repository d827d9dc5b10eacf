"""whisper.py — speech-to-text: ``steno.WhisperModel``, faster-whisper's interface over steno's C API.

Usage::

    from steno import WhisperModel

    model = WhisperModel("tiny.en", cpu_threads=4)      # a name in the model cache, or a directory
    segments, info = model.transcribe("talk.mp3", beam_size=5)
    print(info.language, info.duration)
    for s in segments:                                  # a generator: segments arrive as decoded
        print("[%.2fs -> %.2fs] %s" % (s.start, s.end, s.text))

``WhisperModel(...)`` and ``transcribe(...)`` take faster-whisper 1.2.1's arguments, in its order
and with its defaults; what steno does not implement raises UnsupportedError (never ignored
silently) unless left at faster-whisper's default. Exact behaviour of
``WhisperModel(model, threads=N).transcribe(audio)`` (batch code relies on it):

* ``model``: a CTranslate2 Whisper directory, or a name resolved as the CLI's ``--model`` does
  (cli/model_path.c): ``<root>/<name>`` where root is ``download_root`` / ``model_dir``, else
  ``$STENO_MODELS_DIR``, else ``$XDG_CACHE_HOME/steno/models``, else ``~/.cache/steno/models``; a
  value containing "/" (or an existing directory when the cache has no such model) is used as a
  path. steno never downloads. The model is loaded once in the constructor (StenoError on a
  missing or malformed model) and is read-only afterwards.
* ``threads`` (= faster-whisper's ``cpu_threads``): CPU threads of each transcription (0 = all
  online CPUs).
* ``audio``: a path (``str`` / ``os.PathLike``; any file FFmpeg decodes, via steno_audio_load;
  ``"-"`` reads standard input), a binary file object (anything with ``.read()``: ``open(p, "rb")``,
  ``io.BytesIO``) or the bytes of a whole file (``bytes`` / ``bytearray`` / ``memoryview``, via
  steno_audio_load_memory), or a 1-D NumPy floating array of 16 kHz mono samples in [-1, 1]
  (float64 / float16 are converted to float32; integer dtypes raise TypeError, other shapes
  ValueError, NaN or infinite samples ValueError). The audio is decoded eagerly, inside
  ``transcribe()``: an unreadable or non-audio input raises StenoError there, with the library's
  message (``"x.txt: ..."``).
* Returns ``(segments, info)`` at once. ``info`` (TranscriptionInfo) is complete: for a
  multilingual model without ``language`` the language is detected eagerly (faster-whisper's
  detect_language: the first 30-s window from the first clip start, up to
  ``language_detection_segments`` windows until one is above ``language_detection_threshold``).
  ``segments`` is a generator of Segment; the transcription runs in a worker thread
  (steno_transcribe_with_state on a state of its own) and each segment is yielded as soon as the C
  library reports it, before the rest of the audio is decoded. Nothing runs until the generator is
  first iterated. Closing it early (``break`` then garbage collection, ``.close()``, or an
  exception such as KeyboardInterrupt in the loop) tells C to stop before its next 30-s window and
  waits for the worker. The consumer waits with a timeout, so Ctrl-C is handled at once. A failure
  during decoding raises StenoError from the iteration.
* Thread-safety: one WhisperModel may be used by any number of threads at once; each
  transcription gets its own decoding state (reused from a pool), the weights are shared. The GIL
  is released while C runs, so the transcriptions really run in parallel (at most ``num_workers``
  at once when it is given). ``close()`` frees the model once the running transcriptions have
  ended; every call after it raises StenoError("WhisperModel is closed").
* Defaults are faster-whisper's (``beam_size=5, best_of=5``, the temperature ladder 0.0 .. 1.0,
  thresholds 2.4 / -1.0 / 0.6, ...). The ``steno transcribe`` CLI decodes greedily by default: pass
  ``beam_size=1, best_of=1`` for the CLI's defaults and its exact output.
* ``vad_filter=True`` raises UnsupportedError (VAD is not in steno yet, issue #14).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
import os
import queue
import threading
import warnings
from ctypes import POINTER, byref, c_double, c_int, c_void_p, cast
from dataclasses import dataclass
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Tuple,
    Union,
)

from . import _lib
from ._lib import StenoError, UnsupportedError, lib
from ._args import (  # noqa: F401  (re-exported: LANGUAGES, resolve_model)
    LANGUAGES,
    TO_LANGUAGE_CODE,
    models_root,
    _MODEL_DIR_HINT,
    resolve_model,
    _PATHS,
    _WEIGHTS,
    _TASKS,
    _COMPUTE_TYPES,
    _CT2_KWARGS,
    _DONE,
    _is_num,
    _float,
    _opt_float,
    _int,
    _opt_str,
    _temperatures,
    _clip_timestamps,
    _language_code,
    _bytes_decoder,
    _Progress,
)
from ._audio import (  # noqa: F401  (re-exported: load_audio)
    _Samples,
    _warn_partial,
    _load_samples,
    AudioInput,
    Float32Array,
    _numpy_or_none,
    load_audio,
)


__all__ = [
    "WhisperModel",
    "Segment",
    "Word",
    "TranscriptionInfo",
    "TranscriptionOptions",
    "LANGUAGES",
    "load_audio",
    "resolve_model",
]

logger = logging.getLogger("steno")

SAMPLE_RATE = _lib.SAMPLE_RATE
N_SAMPLES = 30 * SAMPLE_RATE  # one Whisper window

#: faster-whisper's default temperature ladder (the CLI's 0, 0.2, ... 1.0).
DEFAULT_TEMPERATURES: Tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
DEFAULT_PREPEND_PUNCTUATIONS = "\"'\u201c\u00bf([{-"
DEFAULT_APPEND_PUNCTUATIONS = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001"

class _TupleLike:
    """Segment and Word were named tuples in steno 0.1: keep ``_asdict()``, unpacking and
    indexing working on the dataclasses (faster-whisper 1.2.1 uses dataclasses)."""

    def _asdict(self) -> Dict[str, Any]:
        obj: Any = self
        return dict(dataclasses.asdict(obj))

    def __iter__(self) -> Iterator[Any]:
        obj: Any = self
        return iter([getattr(self, f.name) for f in dataclasses.fields(obj)])

    def __getitem__(self, i: int) -> Any:
        return tuple(self)[i]


@dataclass
class Word(_TupleLike):
    start: float
    end: float
    word: str
    probability: float


@dataclass
class Segment(_TupleLike):
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
    temperature: Optional[float]


@dataclass
class TranscriptionOptions:
    """faster-whisper 1.2.1's TranscriptionOptions (the options a transcription ran with), plus
    steno's carry_initial_prompt and seed."""

    beam_size: int
    best_of: int
    patience: float
    length_penalty: float
    repetition_penalty: float
    no_repeat_ngram_size: int
    log_prob_threshold: Optional[float]
    no_speech_threshold: Optional[float]
    compression_ratio_threshold: Optional[float]
    condition_on_previous_text: bool
    prompt_reset_on_temperature: float
    temperatures: List[float]
    initial_prompt: Optional[Union[str, List[int]]]
    prefix: Optional[str]
    suppress_blank: bool
    suppress_tokens: Optional[List[int]]
    without_timestamps: bool
    max_initial_timestamp: float
    word_timestamps: bool
    prepend_punctuations: str
    append_punctuations: str
    multilingual: bool
    max_new_tokens: Optional[int]
    clip_timestamps: Union[str, List[float]]
    hallucination_silence_threshold: Optional[float]
    hotwords: Optional[str]
    carry_initial_prompt: bool = False
    seed: int = 0


@dataclass
class TranscriptionInfo:
    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    all_language_probs: Optional[List[Tuple[str, float]]]
    transcription_options: TranscriptionOptions
    vad_options: Any  # faster-whisper's: the vad_parameters given (None here unless passed)


# --- the model ----------------------------------------------------------------------------------


class WhisperModel(_lib.HandleOwner):
    """A loaded Whisper model (CTranslate2 directory), shared by any number of transcriptions.

    faster-whisper 1.2.1's constructor, on the CPU:

    Args:
        model_size_or_path: a model name in the model cache ("tiny.en", "base") or a model
            directory. steno never downloads (fetch models with scripts/fetch_model.sh).
        device: "auto" or "cpu" (steno runs on the CPU; anything else raises UnsupportedError).
        device_index: 0 (the CPU).
        compute_type: "default", "auto" or "float16": f16 decoder weights (steno's default);
            "float32": f32 weights. Quantized types ("int8", "int8_float16", ...) and "bfloat16"
            raise UnsupportedError (issue #18).
        cpu_threads: CPU threads per transcription (0: all online CPUs; faster-whisper's 0 means
            4 or $OMP_NUM_THREADS). ``threads`` is the same option.
        num_workers: None (steno's default): any number of transcriptions decode at once, each on
            a state of its own; n >= 1: at most n at once (n decoding states are made up front,
            further transcriptions wait for one), faster-whisper's meaning.
        download_root: where named models are looked up (the CLI's --model-dir; = model_dir).
        local_files_only: accepted and ignored: steno only reads local files.
        files, revision, use_auth_token: not supported (UnsupportedError unless None).
        **model_kwargs: CTranslate2 options; only their defaults are accepted.

    steno's own options (keyword-only):
        threads: = cpu_threads.
        path: "fast" (default: fused attention, f16 weights) or "faithful" (openai-whisper's math
            op for op, float32).
        weights: fast path decoder weights, "f16" or "f32" (= compute_type "float16" / "float32").
        audio_ctx: encoder positions (0 = the model's 1500; fewer is a Lab approximation, fast
            path only).
        model_dir: = download_root.
    """

    _closed_what = "WhisperModel"

    def __init__(
        self,
        model_size_or_path: Union[str, "os.PathLike[str]"],
        device: str = "auto",
        device_index: Union[int, List[int]] = 0,
        compute_type: str = "default",
        cpu_threads: int = 0,
        num_workers: Optional[int] = None,
        download_root: Optional[str] = None,
        local_files_only: bool = False,
        files: Optional[Dict[str, Any]] = None,
        revision: Optional[str] = None,
        use_auth_token: Optional[Union[str, bool]] = None,
        *,
        threads: Optional[int] = None,
        path: str = "fast",
        weights: Optional[str] = None,
        audio_ctx: int = 0,
        model_dir: Optional[str] = None,
        **model_kwargs: Any,
    ) -> None:
        self._h: Optional[_lib.Handle] = None
        # -- faster-whisper's arguments --
        if not isinstance(device, str):
            raise TypeError(
                "device: expected 'auto' or 'cpu', got %r (the number of threads is cpu_threads= or threads=)" % (device,)
            )
        if device not in ("auto", "cpu"):
            raise UnsupportedError(
                "device=%r: steno runs Whisper on the CPU only (device='cpu' or 'auto'; threads with cpu_threads=)"
                % (device,)
            )
        if device_index not in (0, [0]):
            raise UnsupportedError("device_index=%r: steno runs on the CPU (device_index=0)" % (device_index,))
        if not isinstance(compute_type, str):
            raise TypeError("compute_type: expected a string, got %r" % (compute_type,))
        if compute_type not in _COMPUTE_TYPES:
            raise ValueError(
                "compute_type=%r: unknown; steno takes 'default', 'auto', 'float16' (f16 weights) or 'float32'"
                % (compute_type,)
            )
        ct_weights = _COMPUTE_TYPES[compute_type]
        if ct_weights is None:
            raise UnsupportedError(
                "compute_type=%r: steno stores Whisper weights as f16 (compute_type='default', 'auto' or "
                "'float16') or f32 ('float32'); quantized (int8/int16) and bfloat16 weights are not in steno yet "
                "(issue #18): use compute_type='default' or 'float32'" % (compute_type,)
            )
        if weights is not None and compute_type not in ("default", "auto") and weights != ct_weights:
            raise ValueError("weights=%r contradicts compute_type=%r" % (weights, compute_type))
        weights = weights if weights is not None else ct_weights
        cpu_threads = _int("cpu_threads", cpu_threads, 0, 256)
        if threads is not None:
            threads = _int("threads", threads, 0, 256)
            if cpu_threads and threads != cpu_threads:
                raise ValueError("threads=%d and cpu_threads=%d disagree (they are the same option)" % (threads, cpu_threads))
            cpu_threads = threads
        if num_workers is not None:
            num_workers = _int("num_workers", num_workers, 1, 1024)
        for name, value in (("download_root", download_root), ("model_dir", model_dir)):
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise TypeError("%s: expected a directory path, got %r" % (name, value))
        if download_root is not None and model_dir is not None and os.fspath(download_root) != os.fspath(model_dir):
            raise ValueError("download_root and model_dir disagree (they are the same option)")
        root = download_root if download_root is not None else model_dir
        hub: List[Tuple[str, Any]] = [("files", files), ("revision", revision), ("use_auth_token", use_auth_token)]
        for opt, given in hub:
            if given is not None:
                raise UnsupportedError(
                    "%s=%r: not supported: steno loads a local model directory (no in-memory files, no Hugging "
                    "Face Hub)" % (opt, given if opt != "use_auth_token" else "...")
                )
        for name, value in model_kwargs.items():
            if name not in _CT2_KWARGS:
                raise TypeError("WhisperModel() got an unexpected keyword argument %r" % name)
            if value != _CT2_KWARGS[name]:
                raise UnsupportedError("%s=%r: a CTranslate2 option steno does not have" % (name, value))
        # -- steno's --
        if path not in _PATHS:
            raise ValueError("path: expected 'fast' or 'faithful', got %r" % (path,))
        if weights not in _WEIGHTS:
            raise ValueError("weights: expected 'f16' or 'f32', got %r" % (weights,))
        audio_ctx = _int("audio_ctx", audio_ctx, 0, 1500)
        self.model_path = resolve_model(model_size_or_path, os.fspath(root) if root is not None else None)
        self.threads = cpu_threads
        self.num_workers = num_workers
        self.compute_type = "float32" if weights == "f32" else "float16"
        opts = lib.steno_whisper_default_options()
        opts.n_threads = cpu_threads
        opts.path = _PATHS[path]
        opts.weights = _WEIGHTS[weights]
        opts.audio_ctx = audio_ctx
        w = c_void_p()
        _lib.check(lib.steno_whisper_load_ex(os.fsencode(self.model_path), byref(opts), byref(w)))
        assert w.value is not None
        self._states: List[int] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(num_workers) if num_workers else None
        self._vocab: Optional[List[str]] = None
        self.is_multilingual = bool(lib.steno_whisper_is_multilingual(w.value))
        self.n_vocab = int(lib.steno_whisper_n_vocab(w.value))
        self._h = _lib.Handle(w.value, self._free, "WhisperModel")
        if num_workers:
            states = [self._new_state(w.value) for _ in range(num_workers)]
            self._states.extend(states)

    # -- lifetime --
    def _free(self, w: int) -> None:
        with self._lock:
            states, self._states = self._states, []
        for s in states:
            lib.steno_whisper_state_free(s)
        lib.steno_whisper_free(w)


    def __enter__(self) -> "WhisperModel":
        return self


    # -- states (one per concurrent transcription; the caller holds a use of the model) --
    def _new_state(self, w: int) -> int:
        s = c_void_p()
        _lib.check(lib.steno_whisper_state_new(w, self.threads, byref(s)))
        assert s.value is not None
        return s.value

    def _take_state(self, w: int) -> int:
        with self._lock:
            if self._states:
                return self._states.pop()
        return self._new_state(w)

    def _give_state(self, s: int) -> None:
        with self._lock:
            if not self.closed:
                self._states.append(s)
                return
        lib.steno_whisper_state_free(s)

    # -- languages --
    def has_language(self, code: str) -> bool:
        """Whether the model has the language code ("en", "de", ...)."""
        if not isinstance(code, str):
            raise TypeError("code: expected str, got %s" % type(code).__name__)
        w = self._acquire()
        try:
            return bool(lib.steno_whisper_has_language(w, code.encode("utf-8")))
        finally:
            self._release()

    @property
    def supported_languages(self) -> List[str]:
        """The language codes the model has (["en"] for an English-only model)."""
        if not self.is_multilingual:
            self._acquire()
            self._release()
            return ["en"]
        return [c for c in LANGUAGES if self.has_language(c)]

    def _check_language(self, language: Optional[str]) -> Optional[str]:
        language = _opt_str("language", language)
        if language is None or language.strip().lower() == "auto":
            return None
        code = _language_code(language)
        if not self.is_multilingual:
            if code != "en":
                msg = (
                    "The current model is English-only but the language parameter is set to %r; using 'en' instead."
                    % language
                )
                logger.warning(msg)
                warnings.warn(msg, stacklevel=3)
                code = "en"
        elif not self.has_language(code):
            raise ValueError("language %r: not a language of this model (see model.supported_languages)" % language)
        return code

    # -- language detection --
    def detect_language(
        self,
        audio: Optional["AudioInput"] = None,
        features: Any = None,
        vad_filter: bool = False,
        vad_parameters: Any = None,
        language_detection_segments: int = 1,
        language_detection_threshold: float = 0.5,
    ) -> Tuple[str, float, List[Tuple[str, float]]]:
        """faster-whisper's detect_language: ``(language, language_probability,
        all_language_probs)``, all_language_probs being every language of the model as
        (code, probability), most probable first (steno_detect_language on the first 30-s window;
        up to language_detection_segments windows until one's top probability is above
        language_detection_threshold, else the language most often on top). An English-only
        model returns ("en", 1.0, [("en", 1.0)]). ``features`` (log-Mel input) and
        ``vad_filter=True`` raise UnsupportedError."""
        if features is not None:
            raise UnsupportedError("detect_language(features=...): steno takes audio, not log-Mel features")
        if vad_filter:
            raise UnsupportedError("vad_filter=True: voice activity detection is not yet in steno (issue #14)")
        if audio is None:
            raise ValueError("detect_language: pass audio")
        segs = _int("language_detection_segments", language_detection_segments, 1, 1 << 20)
        thr = _float("language_detection_threshold", language_detection_threshold)
        samples = _load_samples(audio)
        try:
            return self._detect_fw(samples, 0, segs, thr)
        finally:
            samples.close()

    def _detect(self, w: int, ptr: Any, n: int, cap: int) -> List[Tuple[str, float]]:
        out = (_lib.steno_language_prob * cap)()
        count = c_int(0)
        state = self._take_state(w)
        try:
            st = lib.steno_detect_language_with_state(w, state, ptr, n, out, cap, byref(count))
            _lib.check(st)
        finally:
            self._give_state(state)
        return [(out[i].code.decode("ascii"), float(out[i].probability)) for i in range(count.value)]

    def _detect_fw(
        self, samples: _Samples, start: int, segments: int, threshold: float
    ) -> Tuple[str, float, List[Tuple[str, float]]]:
        w = self._acquire()
        try:
            if not self.is_multilingual:
                return "en", 1.0, [("en", 1.0)]
            votes: Dict[str, List[float]] = {}
            all_probs: List[Tuple[str, float]] = []
            n_windows = max(1, -(-min(samples.n - start, segments * N_SAMPLES) // N_SAMPLES))
            for i in range(n_windows):
                ptr, n = samples.window(start + i * N_SAMPLES, N_SAMPLES)
                all_probs = self._detect(w, ptr, n, 200)
                lang, prob = all_probs[0]
                if prob > threshold:
                    return lang, prob, all_probs
                votes.setdefault(lang, []).append(prob)
            lang = max(votes, key=lambda k: len(votes[k]))
            return lang, max(votes[lang]), all_probs
        finally:
            self._release()

    def _decode_prompt_tokens(self, tokens: Iterable[Any]) -> str:
        """initial_prompt given as token ids (faster-whisper): their text, from the model's
        vocabulary.txt (byte-level BPE); steno tokenizes it again (the same ids for any that came
        from tokenizing text)."""
        ids = list(tokens)
        if not all(isinstance(t, numbers.Integral) and not isinstance(t, bool) for t in ids):
            raise TypeError("initial_prompt: expected a string or an iterable of token ids, got %r" % (ids[:8],))
        if self._vocab is None:
            vocab_path = os.path.join(self.model_path, "vocabulary.txt")
            try:
                with open(vocab_path, encoding="utf-8") as f:
                    self._vocab = f.read().split("\n")
            except OSError as e:
                raise UnsupportedError(
                    "initial_prompt as token ids needs the model's vocabulary.txt (%s); pass the prompt as text" % e
                ) from None
        vocab = self._vocab
        eot = vocab.index("<|endoftext|>") if "<|endoftext|>" in vocab else len(vocab)
        dec = _bytes_decoder()
        out = bytearray()
        for t in ids:
            t = int(t)
            if not 0 <= t < eot:
                raise ValueError("initial_prompt: token %d is not a text token (0..%d)" % (t, eot - 1))
            out += bytes(dec[ch] for ch in vocab[t] if ch in dec)
        return out.decode("utf-8", "replace")

    # -- transcription --
    def transcribe(
        self,
        audio: "AudioInput",
        language: Optional[str] = None,
        task: str = "transcribe",
        log_progress: bool = False,
        beam_size: int = 5,
        best_of: int = 5,
        patience: float = 1,
        length_penalty: float = 1,
        repetition_penalty: float = 1,
        no_repeat_ngram_size: int = 0,
        temperature: Union[float, List[float], Tuple[float, ...]] = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],  # noqa: B006
        compression_ratio_threshold: Optional[float] = 2.4,
        log_prob_threshold: Optional[float] = -1.0,
        no_speech_threshold: Optional[float] = 0.6,
        condition_on_previous_text: bool = True,
        prompt_reset_on_temperature: float = 0.5,
        initial_prompt: Optional[Union[str, Iterable[int]]] = None,
        prefix: Optional[str] = None,
        suppress_blank: bool = True,
        suppress_tokens: Optional[List[int]] = [-1],  # noqa: B006
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
        *,
        carry_initial_prompt: bool = False,
        seed: int = 0,
    ) -> Tuple[Iterator[Segment], TranscriptionInfo]:
        """Transcribes audio; faster-whisper 1.2.1's WhisperModel.transcribe signature (the same
        order) and defaults.

        Returns (segments, info): segments is a generator of Segment (decoded in a worker thread
        and yielded as they come), info a TranscriptionInfo. See the module docstring for the
        exact behaviour. log_progress=True writes a progress line to stderr. initial_prompt may be
        token ids (decoded to text with the model's vocabulary). steno-only options
        (keyword-only): carry_initial_prompt (openai-whisper), seed (the sampler's RNG at
        temperature > 0). Not in steno (UnsupportedError unless left at the default):
        vad_filter=True (issue #14), repetition_penalty, no_repeat_ngram_size,
        prompt_reset_on_temperature, multilingual=True on a multilingual model, max_new_tokens,
        chunk_length other than 30."""
        w = self._acquire()  # "WhisperModel is closed" before any work
        self._release()
        is_ml = self.is_multilingual
        # faster-whisper options steno does not implement: an error unless left at the default.
        if multilingual and not is_ml:
            msg = "The current model is English-only but the multilingual parameter is set to True; setting to False instead."
            logger.warning(msg)
            warnings.warn(msg, stacklevel=2)
            multilingual = False
        if vad_filter and clip_timestamps == "0":
            raise UnsupportedError(
                "vad_filter=True: voice activity detection is not yet in steno (issue #14); "
                "transcribe without it, or pass clip_timestamps"
            )
        unsupported = [
            ("repetition_penalty", repetition_penalty, 1),
            ("no_repeat_ngram_size", no_repeat_ngram_size, 0),
            ("prompt_reset_on_temperature", prompt_reset_on_temperature, 0.5),
            ("multilingual", multilingual, False),
            ("max_new_tokens", max_new_tokens, None),
        ]
        for name, value, default in unsupported:
            if value != default:
                raise UnsupportedError(
                    "%s=%r: not implemented in steno (only faster-whisper's default %r is)" % (name, value, default)
                )
        if chunk_length is not None and chunk_length != 30:
            raise UnsupportedError("chunk_length=%r: steno decodes 30-s windows (chunk_length None or 30)" % (chunk_length,))
        ldt = _opt_float("language_detection_threshold", language_detection_threshold)
        ldt = 0.5 if ldt is None else ldt
        lds = _int("language_detection_segments", language_detection_segments, 1, 1 << 20)

        # --- arguments -> steno_transcribe_params (validated here, before any work) ---
        if task not in _TASKS:
            raise ValueError("task: expected 'transcribe' or 'translate', got %r" % (task,))
        language = self._check_language(language)
        if not is_ml and task == "translate":
            raise ValueError("task='translate' needs a multilingual model; this one is English-only")
        beam_size = _int("beam_size", beam_size, 1, 64)
        best_of = _int("best_of", best_of, 1, 64)
        patience_f = _opt_float("patience", patience)
        length_penalty_f = _opt_float("length_penalty", length_penalty)
        patience_f = 1.0 if patience_f is None else patience_f
        length_penalty_f = 1.0 if length_penalty_f is None else length_penalty_f
        if not (math.isfinite(patience_f) and patience_f > 0):
            raise ValueError("patience: expected a number > 0, got %r" % (patience,))
        if not (math.isfinite(length_penalty_f) and length_penalty_f >= 0):
            raise ValueError("length_penalty: expected a number >= 0, got %r" % (length_penalty,))
        if beam_size >= 2 and not (0.5 <= beam_size * patience_f < 4096.5):
            raise ValueError("patience x beam_size must round to 1..4096 finished hypotheses")
        temps = _temperatures(temperature)
        crt = _opt_float("compression_ratio_threshold", compression_ratio_threshold)
        lpt = _opt_float("log_prob_threshold", log_prob_threshold)
        nst = _opt_float("no_speech_threshold", no_speech_threshold)
        hst = _opt_float("hallucination_silence_threshold", hallucination_silence_threshold)
        if hst is not None and not hst >= 0:
            raise ValueError("hallucination_silence_threshold: expected a number >= 0 or None")
        if hst is not None and not word_timestamps:
            raise ValueError("hallucination_silence_threshold requires word_timestamps=True")
        prompt_opt: Optional[Union[str, List[int]]]
        if initial_prompt is None or isinstance(initial_prompt, str):
            prompt_text, prompt_opt = initial_prompt, initial_prompt
        elif isinstance(initial_prompt, (bytes, bytearray)) or not isinstance(initial_prompt, Iterable):
            raise TypeError(
                "initial_prompt: expected a string or an iterable of token ids, got %s" % type(initial_prompt).__name__
            )
        else:
            ids: List[Any] = list(initial_prompt)
            prompt_text = self._decode_prompt_tokens(ids)
            prompt_opt = [int(t) for t in ids]
        prefix = _opt_str("prefix", prefix)
        hotwords = _opt_str("hotwords", hotwords)
        prepend = _opt_str("prepend_punctuations", prepend_punctuations)
        append = _opt_str("append_punctuations", append_punctuations)
        for name, sv in (("initial_prompt", prompt_text), ("prefix", prefix), ("hotwords", hotwords),
                         ("prepend_punctuations", prepend), ("append_punctuations", append)):
            if sv is not None and "\0" in sv:
                raise ValueError("%s: contains a NUL character" % name)
        mit = _float("max_initial_timestamp", max_initial_timestamp)
        if not (mit >= 0 and math.isfinite(mit)):
            raise ValueError("max_initial_timestamp: expected a number >= 0, got %r" % (max_initial_timestamp,))
        seed = _int("seed", seed, 0, 2**64 - 1)
        if suppress_tokens is None:
            sup: List[int] = []
        else:
            if isinstance(suppress_tokens, (str, bytes)) or not isinstance(suppress_tokens, Iterable):
                raise TypeError("suppress_tokens: expected a list of token ids or None, got %r" % (suppress_tokens,))
            sup = list(suppress_tokens)
            if not all(isinstance(t, numbers.Integral) and not isinstance(t, bool) for t in sup):
                raise TypeError("suppress_tokens: expected a list of token ids or None, got %r" % (suppress_tokens,))
            sup = [int(t) for t in sup]
            for t in sup:
                if t < -1 or t >= self.n_vocab:
                    raise ValueError("suppress_tokens: token id %d is outside -1, 0..%d" % (t, self.n_vocab - 1))
        clips = _clip_timestamps(clip_timestamps)
        detect_from = clips[0] if clips else 0.0
        if clips == [0.0]:
            clips = []
        log_progress = bool(log_progress)

        options = TranscriptionOptions(
            beam_size=beam_size,
            best_of=best_of,
            patience=patience_f,
            length_penalty=length_penalty_f,
            repetition_penalty=repetition_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size,
            log_prob_threshold=lpt,
            no_speech_threshold=nst,
            compression_ratio_threshold=crt,
            condition_on_previous_text=bool(condition_on_previous_text),
            prompt_reset_on_temperature=prompt_reset_on_temperature,
            temperatures=temps,
            initial_prompt=prompt_opt,
            prefix=prefix,
            suppress_blank=bool(suppress_blank),
            suppress_tokens=None if suppress_tokens is None else sup,
            without_timestamps=bool(without_timestamps),
            max_initial_timestamp=mit,
            word_timestamps=bool(word_timestamps),
            prepend_punctuations=prepend if prepend is not None else DEFAULT_PREPEND_PUNCTUATIONS,
            append_punctuations=append if append is not None else DEFAULT_APPEND_PUNCTUATIONS,
            multilingual=False,
            max_new_tokens=None,
            clip_timestamps=clip_timestamps,
            hallucination_silence_threshold=hst,
            hotwords=hotwords,
            carry_initial_prompt=bool(carry_initial_prompt),
            seed=seed,
        )

        samples = _load_samples(audio)
        duration = samples.n / SAMPLE_RATE
        all_probs: Optional[List[Tuple[str, float]]] = None
        if language is not None:
            lang, lang_prob = language, 1.0
        elif not is_ml:
            lang, lang_prob = "en", 1.0
        else:
            start = int(detect_from * SAMPLE_RATE)
            lang, lang_prob, all_probs = self._detect_fw(samples, start if start < samples.n else 0, lds, ldt)
            logger.info("Detected language '%s' with probability %.2f", lang, lang_prob)

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
        p.initial_prompt = _lib.utf8(prompt_text)
        p.suppress_blank = int(bool(suppress_blank))
        if sup != [-1]:
            s_arr = (c_int * max(1, len(sup)))(*sup)
            keep.append(s_arr)
            p.suppress_tokens = cast(s_arr, POINTER(c_int))  # non-NULL even when empty
            p.n_suppress_tokens = len(sup)
        p.without_timestamps = int(bool(without_timestamps))
        p.max_initial_timestamp = mit
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
        keep += [p.initial_prompt, p.prefix, p.hotwords, p.language]

        info = TranscriptionInfo(
            language=lang,
            language_probability=lang_prob,
            duration=duration,
            duration_after_vad=duration,
            all_language_probs=all_probs,
            transcription_options=options,
            vad_options=vad_parameters,
        )
        progress = _Progress(duration) if log_progress else None
        del w
        return self._segments(samples, p, keep, bool(word_timestamps), progress), info

    def _segments(
        self, samples: _Samples, p: Any, keep: List[Any], with_words: bool, progress: Optional[_Progress]
    ) -> Iterator[Segment]:
        w = self._acquire()  # released by the worker when C has returned (or here if it never starts)
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

        def on_progress(user: Any, fraction: float) -> None:
            try:
                if progress is not None and not stop.is_set():
                    progress.update(fraction)
            except BaseException:
                pass

        # The callbacks, the parameters and the samples belong to the worker: they stay alive until
        # C has returned even when the consumer has gone (KeyboardInterrupt, a dropped generator).
        cbs = [_lib.ON_SEGMENT(on_segment), _lib.SHOULD_ABORT(should_abort)]
        p.on_segment = cbs[0]
        p.should_abort = cbs[1]
        if progress is not None:
            cbs.append(_lib.ON_PROGRESS(on_progress))
            p.on_progress = cbs[2]

        def work(w: int, samples: _Samples, p: Any, keep: List[Any], cbs: List[Any]) -> None:
            state = None
            got_slot = False
            res = POINTER(_lib.steno_result)()
            try:
                if self._slots is not None:  # num_workers: wait for a free slot, or the stop
                    while not stop.is_set() and not got_slot:
                        got_slot = self._slots.acquire(timeout=0.1)
                    if not got_slot:
                        return
                state = self._take_state(w)
                st = lib.steno_transcribe_with_state(w, state, samples.ptr, samples.n, byref(p), byref(res))
                if st != _lib.STENO_OK and not (st == _lib.STENO_E_ABORTED and stop.is_set()):
                    _lib.check(st)  # reads steno_errmsg() on this (the failing) thread
            except BaseException as e:
                q.put(e)
            finally:
                try:
                    if res:
                        lib.steno_result_free(res)
                    if state is not None:
                        self._give_state(state)
                    if got_slot and self._slots is not None:
                        self._slots.release()
                    samples.close()
                finally:
                    self._release()
                    q.put(_DONE)

        worker = threading.Thread(target=work, args=(w, samples, p, keep, cbs), name="steno-transcribe", daemon=True)
        try:
            worker.start()
        except BaseException:
            self._release()
            raise
        del samples, p, keep, cbs
        try:
            while True:
                try:
                    item = q.get(timeout=0.1)  # a timeout, so that signals (Ctrl-C) are handled at once
                except queue.Empty:
                    continue
                if item is _DONE:
                    if progress is not None:
                        progress.update(1.0)
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            while worker.is_alive():
                worker.join(0.1)
            if progress is not None:
                progress.finish()


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
