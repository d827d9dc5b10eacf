"""steno — Python bindings (ctypes) of steno, a local speech-to-text (Whisper) and LLM engine.

    >>> import steno
    >>> model = steno.WhisperModel("tiny.en", threads=4)
    >>> segments, info = model.transcribe("talk.wav")
    >>> for s in segments: print(s.start, s.end, s.text)

    >>> llm = steno.LLM("smollm2")
    >>> llm.chat([{"role": "user", "content": "Hi!"}], temperature=0)

The bindings call the C library libsteno.so.3 (bundled in the wheel; $STENO_LIBRARY overrides it).
See docs/PYTHON.md.
"""

from ._lib import LIBRARY_PATH, StenoError, UnsupportedError
from .llm import LLM, LLMInfo
from .whisper import (
    Segment,
    TranscriptionInfo,
    TranscriptionOptions,
    WhisperModel,
    Word,
    load_audio,
    resolve_model,
)

__version__ = "3.0.0"

__all__ = [
    "LIBRARY_PATH",
    "LLM",
    "LLMInfo",
    "Segment",
    "StenoError",
    "TranscriptionInfo",
    "TranscriptionOptions",
    "UnsupportedError",
    "WhisperModel",
    "Word",
    "load_audio",
    "resolve_model",
    "__version__",
]
