"""_args.py — argument checks of steno.WhisperModel (each message names the parameter), model
resolution as the CLI does it (cli/model_path.c), the language tables and the progress line."""

from __future__ import annotations

import logging
import math
import numbers
import os
import sys
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _lib
from ._lib import StenoError



logger = logging.getLogger("steno")

SAMPLE_RATE = _lib.SAMPLE_RATE
N_SAMPLES = 30 * SAMPLE_RATE  # one Whisper window

#: Whisper's languages, code -> name (openai-whisper tokenizer.py LANGUAGES; cli/transcribe_cmd.c).
#: A multilingual model's ``supported_languages`` lists those it has.
LANGUAGES: Dict[str, str] = {
    "en": "english", "zh": "chinese", "de": "german", "es": "spanish", "ru": "russian",
    "ko": "korean", "fr": "french", "ja": "japanese", "pt": "portuguese", "tr": "turkish",
    "pl": "polish", "ca": "catalan", "nl": "dutch", "ar": "arabic", "sv": "swedish",
    "it": "italian", "id": "indonesian", "hi": "hindi", "fi": "finnish", "vi": "vietnamese",
    "he": "hebrew", "uk": "ukrainian", "el": "greek", "ms": "malay", "cs": "czech",
    "ro": "romanian", "da": "danish", "hu": "hungarian", "ta": "tamil", "no": "norwegian",
    "th": "thai", "ur": "urdu", "hr": "croatian", "bg": "bulgarian", "lt": "lithuanian",
    "la": "latin", "mi": "maori", "ml": "malayalam", "cy": "welsh", "sk": "slovak",
    "te": "telugu", "fa": "persian", "lv": "latvian", "bn": "bengali", "sr": "serbian",
    "az": "azerbaijani", "sl": "slovenian", "kn": "kannada", "et": "estonian", "mk": "macedonian",
    "br": "breton", "eu": "basque", "is": "icelandic", "hy": "armenian", "ne": "nepali",
    "mn": "mongolian", "bs": "bosnian", "kk": "kazakh", "sq": "albanian", "sw": "swahili",
    "gl": "galician", "mr": "marathi", "pa": "punjabi", "si": "sinhala", "km": "khmer",
    "sn": "shona", "yo": "yoruba", "so": "somali", "af": "afrikaans", "oc": "occitan",
    "ka": "georgian", "be": "belarusian", "tg": "tajik", "sd": "sindhi", "gu": "gujarati",
    "am": "amharic", "yi": "yiddish", "lo": "lao", "uz": "uzbek", "fo": "faroese",
    "ht": "haitian creole", "ps": "pashto", "tk": "turkmen", "nn": "nynorsk", "mt": "maltese",
    "sa": "sanskrit", "lb": "luxembourgish", "my": "myanmar", "bo": "tibetan", "tl": "tagalog",
    "mg": "malagasy", "as": "assamese", "tt": "tatar", "haw": "hawaiian", "ln": "lingala",
    "ha": "hausa", "ba": "bashkir", "jw": "javanese", "su": "sundanese", "yue": "cantonese",
}  # fmt: skip

#: Language names (and openai-whisper's aliases) -> code, for language="german".
TO_LANGUAGE_CODE: Dict[str, str] = {
    **{name: code for code, name in LANGUAGES.items()},
    "burmese": "my", "valencian": "ca", "flemish": "nl", "haitian": "ht", "letzeburgesch": "lb",
    "pushto": "ps", "panjabi": "pa", "moldavian": "ro", "moldovan": "ro", "sinhalese": "si",
    "castilian": "es", "mandarin": "zh",
}  # fmt: skip



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


_MODEL_DIR_HINT = "steno reads CTranslate2 Whisper directories: model.bin, config.json, vocabulary.txt, tokenizer.json"


def resolve_model(model: Union[str, "os.PathLike[str]"], model_dir: Optional[str] = None) -> str:
    """The directory `steno transcribe --model MODEL` would load (steno_cli_model_path). StenoError
    when it is a file, or a name not in the model cache."""
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError("model: expected a model name or a directory path, got %s" % type(model).__name__)
    name = os.fspath(model)
    if not isinstance(name, str):
        name = os.fsdecode(name)
    if not name:
        raise ValueError("model: empty name")
    root = models_root(model_dir)
    cand = os.path.join(root, name) if not os.path.isabs(name) else name
    if "/" in name or (not os.path.isfile(os.path.join(cand, "model.bin")) and os.path.isdir(name)):
        path = name
    elif os.path.isdir(cand):
        path = cand
    elif os.path.isfile(name):
        path = name
    else:
        raise StenoError(
            "model %s not found in %s; run scripts/fetch_model.sh (steno does not download models)" % (name, root),
            _lib.STENO_E_IO,
        )
    if os.path.isfile(path):
        raise StenoError("%s: is a file, not a model directory (%s)" % (name, _MODEL_DIR_HINT), _lib.STENO_E_IO)
    if not os.path.exists(path) and name.count("/") == 1 and not name.startswith((".", "/", "~")):
        raise StenoError(
            "%s: no such model directory; steno does not download from the Hugging Face Hub: download the "
            "CTranslate2 model (e.g. huggingface-cli download %s --local-dir DIR) and pass DIR" % (name, name),
            _lib.STENO_E_IO,
        )
    return path


# --- argument checks (each message names the parameter) ------------------------------------------

_PATHS = {"fast": _lib.STENO_PATH_FAST, "faithful": _lib.STENO_PATH_FAITHFUL}
_WEIGHTS = {"f16": _lib.STENO_WEIGHTS_F16, "f32": _lib.STENO_WEIGHTS_F32}
_TASKS = {"transcribe": _lib.STENO_TASK_TRANSCRIBE, "translate": _lib.STENO_TASK_TRANSLATE}
#: CTranslate2 compute types -> steno weights (None: not in steno).
_COMPUTE_TYPES: Dict[str, Optional[str]] = {
    "default": "f16",
    "auto": "f16",
    "float16": "f16",
    "float32": "f32",
    "int8": None,
    "int8_float32": None,
    "int8_float16": None,
    "int8_bfloat16": None,
    "int16": None,
    "bfloat16": None,
}
#: CTranslate2 Whisper constructor options (faster-whisper's **model_kwargs) and their defaults.
_CT2_KWARGS: Dict[str, Any] = {"max_queued_batches": 0, "flash_attention": False, "tensor_parallel": False}
_DONE = object()


def _is_num(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _float(name: str, v: Any) -> float:
    if not _is_num(v):
        raise TypeError("%s: expected a number, got %r" % (name, v))
    return float(v)


def _opt_float(name: str, v: Any) -> Optional[float]:
    if v is None:
        return None
    if not _is_num(v):
        raise TypeError("%s: expected a number or None, got %r" % (name, v))
    f = float(v)
    if math.isnan(f):
        raise ValueError("%s: expected a number or None, got nan" % name)
    return f


def _int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("%s: expected an integer, got %r" % (name, v))
    iv = int(v)
    if not lo <= iv <= hi:
        raise ValueError("%s: expected an integer in %d..%d, got %d" % (name, lo, hi, iv))
    return iv


def _opt_str(name: str, v: Any) -> Optional[str]:
    if v is None or isinstance(v, str):
        return v
    raise TypeError("%s: expected a string or None, got %s" % (name, type(v).__name__))


def _temperatures(v: Any) -> List[float]:
    what = "temperature: expected a number or a sequence of numbers, got %r"
    if _is_num(v):
        temps = [float(v)]
    elif isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
        raise TypeError(what % (v,))
    else:
        items = list(v)
        if not all(_is_num(t) for t in items):
            raise TypeError(what % (v,))
        temps = [float(t) for t in items]
    if not temps or len(temps) > 64 or any(not (t >= 0 and math.isfinite(t)) for t in temps):
        raise ValueError("temperature: expected 1..64 numbers >= 0, got %r" % (v,))
    return temps


def _clip_timestamps(v: Any) -> List[float]:
    what = 'clip_timestamps: expected "start,end,..." in seconds (e.g. "0" or "1.5,3") or a list of numbers, got %r'
    if isinstance(v, str):
        clips: List[float] = []
        if v.strip():
            for part in v.split(","):
                try:
                    clips.append(float(part))
                except ValueError:
                    raise ValueError(what % (v,)) from None
    elif isinstance(v, (bytes, bytearray)) or not isinstance(v, Iterable):
        raise TypeError(what % (v,))
    else:
        items = list(v)
        if not all(_is_num(x) for x in items):
            raise TypeError(what % (v,))
        clips = [float(x) for x in items]
    if any(c < 0 or not math.isfinite(c) for c in clips):
        raise ValueError("clip_timestamps: expected seconds >= 0, got %r" % (v,))
    for k in range(1, len(clips), 2):
        if clips[k] < clips[k - 1]:
            raise ValueError(
                "clip_timestamps: clip %d ends at %g s, before its start %g s" % (k // 2 + 1, clips[k], clips[k - 1])
            )
    return clips


def _language_code(language: str) -> str:
    lang = language.strip().lower()
    if lang in LANGUAGES:
        return lang
    if lang in TO_LANGUAGE_CODE:
        return TO_LANGUAGE_CODE[lang]
    raise ValueError(
        "unknown language %r: expected a Whisper language code such as 'en' or 'de' (or a name such as "
        "'german'); steno.whisper.LANGUAGES lists them, model.supported_languages those of a model" % language
    )


def _bytes_decoder() -> Dict[str, int]:
    """GPT-2's byte-level BPE alphabet, char -> byte (openai-whisper / tiktoken bytes_to_unicode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1))
    bs += list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class _Progress:
    """log_progress=True: faster-whisper's tqdm bar, as a plain text line on stderr."""

    def __init__(self, duration: float) -> None:
        self.duration = duration
        self.last = -1
        self.done = False

    def update(self, fraction: float) -> None:
        pct = int(max(0.0, min(1.0, fraction)) * 100)
        if pct == self.last or self.done:
            return
        self.last = pct
        sys.stderr.write(
            "\r%3d%%|%-25s| %.2f/%.2f seconds"
            % (pct, "#" * (pct // 4), self.duration * pct / 100.0, self.duration)
        )
        sys.stderr.flush()

    def finish(self) -> None:
        if not self.done:
            if self.last >= 0:
                sys.stderr.write("\n")
                sys.stderr.flush()
            self.done = True
