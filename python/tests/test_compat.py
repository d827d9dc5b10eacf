"""faster-whisper 1.2.1 compatibility of steno.WhisperModel (constructor, transcribe and
detect_language signatures, audio inputs, languages, dataclasses), option validation messages,
and the model's lifetime: close() during a running transcription, Ctrl-C in the consumer."""

from __future__ import annotations

import dataclasses
import inspect
import io
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

import steno
from steno.whisper import _clip_timestamps, models_root
from conftest import AUDIO, THREADS

JFK = str(AUDIO / "jfk.wav")
SHORT = str(AUDIO / "timit_LDC93S1.wav")  # 2.9 s
GREEDY = dict(beam_size=1, best_of=1)

PUNCT_PRE = "\"'\u201c\u00bf([{-"
PUNCT_APP = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001"

# faster_whisper/transcribe.py of faster-whisper 1.2.1 (pip download faster-whisper==1.2.1):
# WhisperModel.__init__, .transcribe and .detect_language, parameter names in order, defaults.
FW_INIT = [
    ("model_size_or_path", inspect.Parameter.empty), ("device", "auto"), ("device_index", 0),
    ("compute_type", "default"), ("cpu_threads", 0), ("num_workers", 1), ("download_root", None),
    ("local_files_only", False), ("files", None), ("revision", None), ("use_auth_token", None),
]  # fmt: skip
FW_TRANSCRIBE = [
    ("audio", inspect.Parameter.empty), ("language", None), ("task", "transcribe"), ("log_progress", False),
    ("beam_size", 5), ("best_of", 5), ("patience", 1), ("length_penalty", 1), ("repetition_penalty", 1),
    ("no_repeat_ngram_size", 0), ("temperature", [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    ("compression_ratio_threshold", 2.4), ("log_prob_threshold", -1.0), ("no_speech_threshold", 0.6),
    ("condition_on_previous_text", True), ("prompt_reset_on_temperature", 0.5), ("initial_prompt", None),
    ("prefix", None), ("suppress_blank", True), ("suppress_tokens", [-1]), ("without_timestamps", False),
    ("max_initial_timestamp", 1.0), ("word_timestamps", False), ("prepend_punctuations", PUNCT_PRE),
    ("append_punctuations", PUNCT_APP), ("multilingual", False), ("vad_filter", False),
    ("vad_parameters", None), ("max_new_tokens", None), ("chunk_length", None), ("clip_timestamps", "0"),
    ("hallucination_silence_threshold", None), ("hotwords", None), ("language_detection_threshold", 0.5),
    ("language_detection_segments", 1),
]  # fmt: skip
FW_DETECT = [
    ("audio", None), ("features", None), ("vad_filter", False), ("vad_parameters", None),
    ("language_detection_segments", 1), ("language_detection_threshold", 0.5),
]  # fmt: skip


def positional(fn):
    ps = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    return [(p.name, p.default) for p in ps if p.kind == p.POSITIONAL_OR_KEYWORD]


def test_signatures_match_faster_whisper():
    init = positional(steno.WhisperModel.__init__)
    # num_workers: None (steno: no limit) where faster-whisper has 1; the rest is identical
    assert [n for n, _ in init] == [n for n, _ in FW_INIT]
    assert [d for n, d in init if n != "num_workers"] == [d for n, d in FW_INIT if n != "num_workers"]
    tr = positional(steno.WhisperModel.transcribe)
    assert tr == FW_TRANSCRIBE
    temps = dict(tr)["temperature"]
    assert temps == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0] and temps[3] == 0.6  # literals, not k * 0.2
    assert positional(steno.WhisperModel.detect_language) == FW_DETECT
    kw = {p.name for p in inspect.signature(steno.WhisperModel.transcribe).parameters.values()
          if p.kind == p.KEYWORD_ONLY}
    assert kw == {"carry_initial_prompt", "seed"}


def test_constructor_options(tiny):
    with pytest.raises(steno.UnsupportedError, match="#18") as e:
        steno.WhisperModel("tiny.en", compute_type="int8")
    assert "#18" in str(e.value) and "'default'" in str(e.value) and "'float32'" in str(e.value)
    for ct in ("int8_float16", "int8_float32", "int16", "bfloat16"):
        with pytest.raises(steno.UnsupportedError, match="f16"):
            steno.WhisperModel("tiny.en", compute_type=ct)
    with pytest.raises(ValueError, match="compute_type"):
        steno.WhisperModel("tiny.en", compute_type="fp8")
    with pytest.raises(steno.UnsupportedError, match="CPU"):
        steno.WhisperModel("tiny.en", device="cuda")
    with pytest.raises(steno.UnsupportedError, match="CPU"):
        steno.WhisperModel("tiny.en", "cpu", 1)
    with pytest.raises(ValueError, match="cpu_threads"):
        steno.WhisperModel("tiny.en", cpu_threads=2, threads=3)
    for kw in (dict(files={}), dict(revision="main"), dict(use_auth_token=True), dict(flash_attention=True)):
        with pytest.raises(steno.UnsupportedError):
            steno.WhisperModel("tiny.en", **kw)
    with pytest.raises(TypeError, match="unexpected keyword"):
        steno.WhisperModel("tiny.en", thread=2)
    with pytest.raises(ValueError, match="num_workers"):
        steno.WhisperModel("tiny.en", num_workers=0)
    # faster-whisper's positional form; download_root is the model cache (= model_dir)
    m = steno.WhisperModel("tiny.en", "cpu", 0, "float32", THREADS, 2, models_root(), True, max_queued_batches=0)
    assert m.threads == THREADS and m.compute_type == "float32" and m.num_workers == 2
    assert len(m._states) == 2  # the pool is made up front
    m.close()
    assert tiny.compute_type == "float16"


def test_model_path_is_a_file(tmp_path):
    with pytest.raises(steno.StenoError) as e:
        steno.WhisperModel(JFK)
    assert str(e.value).startswith(JFK + ": is a file, not a model directory") and "model.bin" in str(e.value)
    (tmp_path / "x.wav").write_bytes(b"RIFF")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(steno.StenoError, match=r"^x\.wav: is a file, not a model directory"):
            steno.WhisperModel("x.wav")
    finally:
        os.chdir(cwd)
    with pytest.raises(steno.StenoError, match="Hugging Face"):
        steno.WhisperModel("Systran/faster-whisper-no-such-model")


def test_audio_inputs(tiny):
    # (transcripts of a file object and of a float64 array: test_whisper.py's input test)
    arr = steno.load_audio(SHORT)
    with open(SHORT, "rb") as f:
        assert np.array_equal(steno.load_audio(io.BytesIO(f.read())), arr)
    _, info = tiny.transcribe(arr.astype(np.float16))
    assert info.duration == pytest.approx(arr.size / 16000)
    with open(SHORT, "r", encoding="latin-1") as f:
        with pytest.raises(TypeError, match="binary mode"):
            tiny.transcribe(f)


def test_languages_on_english_model(tiny):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _, info = tiny.transcribe(JFK, language="de", multilingual=True)
    assert info.language == "en" and info.transcription_options.multilingual is False
    msgs = [str(x.message) for x in w]
    assert any("English-only" in m and "'en'" in m for m in msgs)
    assert any("multilingual" in m for m in msgs)
    assert tiny.transcribe(JFK, language="English")[1].language == "en"
    for bad in ("xx", "klingon"):
        with pytest.raises(ValueError, match="unknown language '%s'" % bad):
            tiny.transcribe(JFK, language=bad)
    assert tiny.supported_languages == ["en"]
    assert tiny.detect_language(JFK) == ("en", 1.0, [("en", 1.0)])
    with pytest.raises(steno.UnsupportedError):
        tiny.detect_language(features=np.zeros((80, 3000), dtype=np.float32))
    with pytest.raises(steno.UnsupportedError, match="#14"):
        tiny.detect_language(JFK, vad_filter=True)


@pytest.fixture(scope="module")
def base():
    if not os.path.isfile(os.path.join(models_root(), "base", "model.bin")):
        pytest.fail("the multilingual base model is not in the model cache: run scripts/fetch_model.sh base")
    return steno.WhisperModel("base", threads=THREADS)


def test_languages_on_multilingual_model(base):
    de = str(AUDIO / "picovoice_leopard_test_de.wav")
    langs = base.supported_languages
    assert langs[:3] == ["en", "zh", "de"] and len(langs) >= 99
    lang, prob, probs = base.detect_language(de)
    assert lang == "de" and prob > 0.5 and probs[0] == (lang, prob) and len(probs) == len(langs)
    _, info = base.transcribe(steno.load_audio(de), language_detection_segments=2)
    assert (info.language, info.language_probability) == (lang, prob) and info.all_language_probs == probs
    assert base.transcribe(de, language="german")[1].language == "de"
    with pytest.raises(steno.UnsupportedError, match="multilingual"):
        base.transcribe(de, multilingual=True)
    with pytest.raises(ValueError, match="unknown language 'xx'"):
        base.transcribe(de, language="xx")


def test_initial_prompt_token_ids(tiny):
    with open(os.path.join(tiny.model_path, "vocabulary.txt"), encoding="utf-8") as f:
        vocab = f.read().split("\n")
    ids = [vocab.index(t) for t in ("\u0120Ask", "\u0120not", "\u0120what", ".")]  # byte-level BPE: \u0120 = " "
    assert tiny._decode_prompt_tokens(ids) == " Ask not what."
    segs, info = tiny.transcribe(JFK, initial_prompt=iter(ids), **GREEDY)
    assert info.transcription_options.initial_prompt == ids
    assert "country" in "".join(s.text for s in segs)


def test_dataclasses_like_faster_whisper(tiny):
    segs, info = tiny.transcribe(SHORT, word_timestamps=True, **GREEDY)
    s = next(iter(segs))
    assert dataclasses.is_dataclass(s) and dataclasses.is_dataclass(info)
    d = dataclasses.asdict(s)
    assert d == s._asdict() and d["text"] == s.text and d["words"][0]["word"] == s.words[0].word
    sid, seek, start, end, text, *_ = s  # still unpacks like the 0.1 named tuple
    assert (sid, seek, start, end, text) == (s.id, s.seek, s.start, s.end, s.text) and s[4] == s.text
    start, end, word, p = s.words[0]
    assert word == s.words[0].word
    assert dataclasses.asdict(info)["transcription_options"]["beam_size"] == 1


def test_option_forms_and_messages(tiny, capfd):
    with pytest.raises(TypeError, match=r"^temperature: expected a number or a sequence of numbers, got 'hot'$"):
        tiny.transcribe(JFK, temperature="hot")
    with pytest.raises(TypeError, match="^temperature: "):
        tiny.transcribe(JFK, temperature=[0.0, "x"])
    with pytest.raises(ValueError, match=r"^clip_timestamps: .*'a,b'"):
        tiny.transcribe(JFK, clip_timestamps="a,b")
    with pytest.raises(TypeError, match="^max_initial_timestamp: expected a number, got 'x'"):
        tiny.transcribe(JFK, max_initial_timestamp="x")
    with pytest.raises(TypeError, match="^patience: "):
        tiny.transcribe(JFK, patience="1")
    _, info = tiny.transcribe(JFK, temperature=(0.0, 0.5))
    assert info.transcription_options.temperatures == [0.0, 0.5]
    assert tiny.transcribe(JFK, temperature=np.float64(0.3))[1].transcription_options.temperatures == [0.3]
    # vad_parameters without vad_filter, and vad_filter with clip_timestamps, are ignored (faster-whisper)
    _, info = tiny.transcribe(JFK, vad_parameters={"min_silence_duration_ms": 500})
    assert info.vad_options == {"min_silence_duration_ms": 500}
    tiny.transcribe(JFK, vad_filter=True, clip_timestamps="0,5")
    # string and list forms of clip_timestamps are the same; log_progress writes to stderr
    assert _clip_timestamps("0,3.5") == _clip_timestamps([0, 3.5]) == [0.0, 3.5]
    capfd.readouterr()
    segs = list(tiny.transcribe(JFK, clip_timestamps=[0, 3.5], log_progress=True, **GREEDY)[0])
    err = capfd.readouterr().err
    assert "100%" in err and "seconds" in err
    assert segs and segs[-1].end <= 3.6


# --- lifetime -----------------------------------------------------------------------------------


def test_close_while_transcribing():
    m = steno.WhisperModel("tiny.en", threads=THREADS)
    segments, _ = m.transcribe(str(AUDIO / "asterisk_en_demo-instruct.wav"), **GREEDY)  # 73 s, 3 windows
    it = iter(segments)
    first = next(it)
    m.close()  # the worker still decodes: the model is freed when it ends
    assert m.closed
    later = next(s for s in it if s.seek > first.seek)  # a window decoded after close()
    assert later.text
    it.close()
    assert m._h._ptr is None  # freed by the last user
    for call in (lambda: m.has_language("en"), lambda: m.supported_languages, lambda: m.transcribe(JFK),
                 lambda: m.detect_language(JFK)):
        with pytest.raises(steno.StenoError, match="WhisperModel is closed"):
            call()
    m.close()  # twice is fine
    # a generator made before close() but not started does not run
    m = steno.WhisperModel("tiny.en", threads=1)
    segments, _ = m.transcribe(JFK)
    m.close()
    with pytest.raises(steno.StenoError, match="closed"):
        next(segments)


def _workers():
    return [t for t in threading.enumerate() if t.name == "steno-transcribe"]


def test_ctrl_c_in_consumer():
    if threading.current_thread() is not threading.main_thread():
        pytest.fail("this test sends itself SIGINT: pytest must run it on the main thread")
    # Python's own SIGINT handler, whatever was inherited: a shell running the suite in the
    # background starts it with SIGINT ignored, and the signal would then never arrive (a hang).
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_in_consumer()
    finally:
        signal.signal(signal.SIGINT, old_handler)


def _ctrl_c_in_consumer():
    # The worker waits for the one slot (num_workers=1), held here: no segment ever comes. A SIGINT
    # must still raise KeyboardInterrupt in the loop at once and stop and join the worker.
    m = steno.WhisperModel("tiny.en", threads=1, num_workers=1)
    m._slots.acquire()
    segments, _ = m.transcribe(JFK, **GREEDY)
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.3, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in segments:
                pass
        assert time.monotonic() - sent[0] < 1.0
        assert not _workers()
    finally:
        timer.cancel()
        m._slots.release()
    # while decoding: the worker stops at its next window and is joined; the model still works
    segments, _ = m.transcribe(JFK, **GREEDY)
    threading.Timer(0.05, interrupt).start()
    with pytest.raises(KeyboardInterrupt):
        for _ in segments:
            pass
    assert not _workers()
    assert "country" in "".join(s.text for s in m.transcribe(JFK, **GREEDY)[0])
    m.close()
