"""_audio.py — audio for steno.WhisperModel: paths, bytes, file objects and NumPy arrays to 16 kHz
float32 samples (steno_audio_load*), with steno's partial-decode warnings."""

from __future__ import annotations

import logging
import os
import warnings
from ctypes import POINTER, addressof, byref, c_float, c_size_t, c_void_p, cast
from typing import TYPE_CHECKING, Any, BinaryIO, Tuple, Union

from . import _lib
from ._lib import lib

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    #: Everything transcribe() / detect_language() / load_audio() accept as audio.
    AudioInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO, npt.NDArray[Any]]
    Float32Array = npt.NDArray[np.float32]
else:
    AudioInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO, "numpy.typing.NDArray[Any]"]
    Float32Array = "numpy.typing.NDArray[numpy.float32]"


logger = logging.getLogger("steno")

SAMPLE_RATE = _lib.SAMPLE_RATE
N_SAMPLES = 30 * SAMPLE_RATE  # one Whisper window

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

    def window(self, start: int, n: int) -> Tuple[Any, int]:
        """(pointer, count) of samples[start : start + n] (no copy)."""
        start = max(0, min(start, self.n))
        n = max(0, min(n, self.n - start))
        if n == 0 or not self.ptr:
            return POINTER(c_float)(), 0
        return cast(c_void_p(addressof(self.ptr.contents) + 4 * start), POINTER(c_float)), n

    def numpy(self) -> "Float32Array":
        import numpy as np

        if self.n == 0:
            return np.zeros(0, dtype=np.float32)
        return np.ctypeslib.as_array(self.ptr, shape=(self.n,)).copy()


def _warn_partial() -> None:
    """A file that decoded only in part (truncated, a read error): what was decoded is used, and
    steno's warning becomes a Python warning (UserWarning), as the CLI prints it on stderr."""
    w = _lib.warnmsg()
    if w:
        warnings.warn(w, stacklevel=4)


def _load_samples(audio: "AudioInput") -> _Samples:
    if isinstance(audio, (str, os.PathLike)):
        path = os.fspath(audio)
        path_b = os.fsencode(path)
        ptr = POINTER(c_float)()
        n = c_size_t(0)
        _lib.check(lib.steno_audio_load(path_b, byref(ptr), byref(n)))
        _warn_partial()
        return _Samples(ptr, n.value, c_owned=True)
    name = b"memory"
    if not isinstance(audio, (bytes, bytearray, memoryview)) and callable(getattr(audio, "read", None)):
        reader: Any = audio
        fname = getattr(reader, "name", None)
        if isinstance(fname, str) and fname:
            name = os.fsencode(fname)
        data_r = reader.read()
        if not isinstance(data_r, (bytes, bytearray, memoryview)):
            raise TypeError(
                "audio: the file object's read() returned %s, not bytes; open the file in binary mode ('rb')"
                % type(data_r).__name__
            )
        audio = data_r
    if isinstance(audio, (bytes, bytearray, memoryview)):
        data = audio if isinstance(audio, bytes) else bytes(audio)
        ptr = POINTER(c_float)()
        n = c_size_t(0)
        _lib.check(lib.steno_audio_load_memory(data, len(data), name, byref(ptr), byref(n)))
        _warn_partial()
        return _Samples(ptr, n.value, c_owned=True)
    np = _numpy_or_none()
    if np is not None and isinstance(audio, np.ndarray):
        if not np.issubdtype(audio.dtype, np.floating):
            raise TypeError(
                "audio: a NumPy array must hold floating-point samples (16 kHz mono in [-1, 1]), got %s; "
                "for 16-bit PCM use (audio / 32768).astype(numpy.float32)" % audio.dtype
            )
        if audio.ndim != 1:
            raise ValueError("audio: a NumPy array must be 1-D (mono samples), got shape %s" % (audio.shape,))
        arr = np.ascontiguousarray(audio, dtype=np.float32)
        if arr.size and not np.isfinite(arr).all():
            raise ValueError("audio contains NaN or infinite samples")
        ptr = arr.ctypes.data_as(POINTER(c_float)) if arr.size else POINTER(c_float)()
        return _Samples(ptr, int(arr.size), owner=arr)
    raise TypeError(
        "audio: expected a path (str/os.PathLike), a binary file object, file bytes "
        "(bytes/bytearray/memoryview) or a 1-D float NumPy array, got %s" % type(audio).__name__
    )


def _numpy_or_none() -> Any:
    try:
        import numpy

        return numpy
    except ImportError:
        return None


def load_audio(audio: "AudioInput") -> "Float32Array":
    """Decodes a file (a path, "-" for standard input, a binary file object or the bytes of a
    file) to a 1-D float32 NumPy array of 16 kHz mono samples (steno_audio_load /
    steno_audio_load_memory); an array is returned as float32. Needs numpy."""
    s = _load_samples(audio)
    try:
        return s.numpy()
    finally:
        s.close()
