"""steno.WhisperModel against the `steno transcribe` CLI (tiny.en): the same segments (text,
timestamps, tokens, statistics) and words; audio as a path, bytes and a NumPy array; streaming
(segments arrive before the transcription ends, early close stops it); concurrent transcriptions
on one model (equal texts, and the GIL is released while C runs); errors."""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import steno
from conftest import AUDIO, REPO, cli_json, english_clips

CLIPS = english_clips()
GREEDY = dict(beam_size=1, best_of=1)  # the CLI's default decoding (greedy, best_of 1)


def test_installed_package_is_used():
    # the tests run against the installed wheel, not the repository's python/ folder
    assert not Path(steno.__file__).resolve().is_relative_to((REPO / "python").resolve()), steno.__file__
    assert Path(steno.LIBRARY_PATH).name == "libsteno.so.3"
    if not os.environ.get("STENO_LIBRARY"):
        assert Path(steno.LIBRARY_PATH).parent.name == "_native", steno.LIBRARY_PATH


def assert_segments_equal(py, js, words=False):
    assert len(py) == len(js["segments"]), ([s.text for s in py], [s["text"] for s in js["segments"]])
    for s, j in zip(py, js["segments"]):
        assert isinstance(s, steno.Segment)
        assert s.text == j["text"]
        assert (s.id, s.seek, s.start, s.end, s.tokens) == (j["id"], j["seek"], j["start"], j["end"], j["tokens"])
        assert s.temperature == j["temperature"]
        for k in ("avg_logprob", "compression_ratio", "no_speech_prob"):
            assert math.isclose(getattr(s, k), j[k], rel_tol=1e-12, abs_tol=1e-12), k
        if words:
            assert s.words is not None and len(s.words) == len(j["words"])
            for w, jw in zip(s.words, j["words"]):
                assert isinstance(w, steno.Word)
                assert (w.word, w.start, w.end) == (jw["word"], jw["start"], jw["end"])
                assert math.isclose(w.probability, jw["probability"], rel_tol=1e-6)
        else:
            assert s.words is None


@pytest.fixture(scope="module")
def cli_greedy(tmp_path_factory):
    return cli_json(CLIPS, tmp_path_factory.mktemp("cli"))


def test_clips_selected():
    assert len(CLIPS) >= 8
    assert all(os.path.isfile(c) for c in CLIPS)


def test_transcripts_equal_cli(tiny, cli_greedy):
    for clip in CLIPS:
        segments, info = tiny.transcribe(clip, **GREEDY)
        assert isinstance(info, steno.TranscriptionInfo)
        assert info.language == "en" and info.language_probability == 1.0
        assert info.all_language_probs is None
        assert info.transcription_options.beam_size == 1
        segs = list(segments)
        assert_segments_equal(segs, cli_greedy[clip])
        assert "".join(s.text for s in segs) == cli_greedy[clip]["text"]
        assert info.duration == pytest.approx(info.duration_after_vad)


def test_bytes_and_numpy_input_equal_path(tiny, cli_greedy):
    clip = min(CLIPS, key=os.path.getsize)
    with open(clip, "rb") as f:
        data = f.read()
    with open(clip, "rb") as f:  # a binary file object (faster-whisper's BinaryIO)
        for audio in (data, memoryview(data), f, steno.load_audio(clip)):
            segments, info = tiny.transcribe(audio, **GREEDY)
            assert_segments_equal(list(segments), cli_greedy[clip])
    arr = steno.load_audio(clip)
    assert arr.dtype == np.float32 and arr.ndim == 1
    assert info.duration == pytest.approx(arr.size / 16000)
    # a strided (non-contiguous) float64 view is converted to float32, not misread
    wide = np.zeros(arr.size * 2, dtype=np.float64)
    wide[::2] = arr
    segments, _ = tiny.transcribe(wide[::2], **GREEDY)
    assert_segments_equal(list(segments), cli_greedy[clip])


def test_word_timestamps_equal_cli(tiny, tmp_path):
    clip = str(AUDIO / "jfk.wav")
    js = cli_json([clip], tmp_path, "--word-timestamps", "True")[clip]
    segments, info = tiny.transcribe(clip, word_timestamps=True, **GREEDY)
    assert_segments_equal(list(segments), js, words=True)
    assert info.transcription_options.word_timestamps


def test_beam_search_equals_cli(tiny, tmp_path):
    # faster-whisper's defaults (beam_size=5, best_of=5) = the CLI's --beam-size 5 --best-of 5
    clip = CLIPS[0]
    js = cli_json([clip], tmp_path, "--beam-size", "5", "--best-of", "5")[clip]
    segments, info = tiny.transcribe(clip)
    assert info.transcription_options.beam_size == 5
    assert_segments_equal(list(segments), js)


def test_segments_stream():
    model = steno.WhisperModel("tiny.en", threads=2)
    clip = str(AUDIO / "tedlium_long_120s.flac")
    t0 = time.monotonic()
    segments, info = model.transcribe(clip, **GREEDY)
    assert info.duration == pytest.approx(120.0, abs=0.1)
    t_returned = time.monotonic() - t0
    arrivals = []
    got = []
    for s in segments:
        arrivals.append(time.monotonic() - t0)
        got.append(s)
    total = time.monotonic() - t0
    assert len(got) >= 10
    assert [s.id for s in got] == list(range(len(got)))
    assert got[-1].end > 90
    # the first segment came after the first 30-s window, long before the 120 s were decoded
    assert arrivals[0] < 0.6 * total, (arrivals[0], total)
    assert arrivals[-1] - arrivals[0] > 0.3 * total, (arrivals[0], arrivals[-1], total)
    assert t_returned < 0.3 * total  # transcribe() itself only decodes the audio

    # closing the generator early stops the transcription within a window
    t0 = time.monotonic()
    segments, _ = model.transcribe(clip, **GREEDY)
    first = next(segments)
    segments.close()
    early = time.monotonic() - t0
    assert first == got[0]
    assert early < 0.6 * total, (early, total)
    # the model (and its pooled state) still works afterwards
    segments, _ = model.transcribe(str(AUDIO / "jfk.wav"), **GREEDY)
    assert "country" in "".join(s.text for s in segments)


def test_generator_not_started_runs_nothing(tiny):
    segments, info = tiny.transcribe(str(AUDIO / "jfk.wav"), **GREEDY)
    del segments  # never iterated: no worker, no leak, no error


def test_two_threads_one_model(tiny):
    clips = [str(AUDIO / "asterisk_en_basic-pbx-ivr-main.wav"), str(AUDIO / "picovoice_diarization_test.wav")]
    single = {c: [s.text for s in tiny.transcribe(c, **GREEDY)[0]] for c in clips}
    results = {}
    callbacks = [0]
    errors = []
    done = threading.Event()

    def work(c):
        try:
            out = []
            for s in tiny.transcribe(c, **GREEDY)[0]:
                callbacks[0] += 1
                out.append(s.text)
            results[c] = out
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,)) for c in clips]
    for t in threads:
        t.start()
    # While both threads are inside C, this thread must keep running: ctypes releases the GIL.
    ticks = 0
    while any(t.is_alive() for t in threads):
        time.sleep(0.002)
        ticks += 1
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == single
    # were the GIL held during the C calls, this loop would only run between segment callbacks
    assert ticks >= 50 + 3 * callbacks[0], (ticks, callbacks[0])


def test_thread_pool_of_transcriptions(tiny, cli_greedy):
    from concurrent.futures import ThreadPoolExecutor

    clips = CLIPS[:4]
    expect = [[s["text"] for s in cli_greedy[c]["segments"]] for c in clips]
    with ThreadPoolExecutor(2) as ex:
        got = list(ex.map(lambda c: [s.text for s in tiny.transcribe(c, **GREEDY)[0]], clips))
    assert got == expect


# --- errors -------------------------------------------------------------------------------------


def test_missing_file(tiny, tmp_path):
    p = tmp_path / "nope.wav"
    with pytest.raises(steno.StenoError) as e:
        tiny.transcribe(str(p))
    assert str(p) in str(e.value) and e.value.status_name == "IO"
    assert isinstance(e.value, RuntimeError)


def test_text_file_as_audio(tiny, tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("this is not audio\n" * 50)
    with pytest.raises(steno.StenoError) as e:
        tiny.transcribe(p)  # os.PathLike
    assert "notes.txt" in str(e.value)
    with pytest.raises(steno.StenoError) as e:
        tiny.transcribe(p.read_bytes())
    assert str(e.value)


def test_bad_model_dir(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(steno.StenoError) as e:
        steno.WhisperModel(str(tmp_path))
    assert str(tmp_path) in str(e.value)
    with pytest.raises(steno.StenoError) as e:
        steno.WhisperModel("no-such-model-name")
    assert "no-such-model-name" in str(e.value) and "not found" in str(e.value)


def test_bad_arrays(tiny):
    with pytest.raises(TypeError, match="float32"):
        tiny.transcribe(np.zeros(16000, dtype=np.int16))
    with pytest.raises(ValueError, match="NaN or infinite"):
        tiny.transcribe(np.array([0.0, np.nan, 0.1], dtype=np.float32))
    with pytest.raises(ValueError, match="NaN or infinite"):
        tiny.transcribe(np.array([0.0, np.inf], dtype=np.float64))
    with pytest.raises(ValueError, match="1-D"):
        tiny.transcribe(np.zeros((2, 16000), dtype=np.float32))
    with pytest.raises(TypeError):
        tiny.transcribe(12345)
    with pytest.raises(TypeError):
        tiny.transcribe([0.0] * 100)


def test_vad_filter_is_an_error(tiny):
    with pytest.raises(steno.UnsupportedError) as e:
        tiny.transcribe(str(AUDIO / "jfk.wav"), vad_filter=True)
    assert "VAD" in str(e.value) or "voice activity" in str(e.value)
    assert "#14" in str(e.value)
    assert isinstance(e.value, NotImplementedError) and isinstance(e.value, steno.StenoError)
    with pytest.raises(steno.UnsupportedError):
        tiny.transcribe(str(AUDIO / "jfk.wav"), repetition_penalty=1.2)


def test_bad_options(tiny):
    jfk = str(AUDIO / "jfk.wav")
    with pytest.raises(ValueError, match="unknown language 'xx'"):
        tiny.transcribe(jfk, language="xx")
    with pytest.raises(ValueError):
        tiny.transcribe(jfk, task="translate")
    with pytest.raises(ValueError):
        tiny.transcribe(jfk, task="summarize")
    with pytest.raises(ValueError):
        tiny.transcribe(jfk, beam_size=0)
    with pytest.raises(ValueError):
        tiny.transcribe(jfk, suppress_tokens=[10**6])
    with pytest.raises(ValueError):
        tiny.transcribe(jfk, hallucination_silence_threshold=2.0)  # needs word_timestamps
    with pytest.raises(TypeError, match="initial_prompt"):
        tiny.transcribe(jfk, initial_prompt=b"bytes")
    with pytest.raises(ValueError, match="initial_prompt: token 50257"):
        tiny.transcribe(jfk, initial_prompt=[1, 50257])
    with pytest.raises(ValueError):
        steno.WhisperModel("tiny.en", path="quick")


def test_empty_audio(tiny):
    segments, info = tiny.transcribe(np.zeros(0, dtype=np.float32))
    assert list(segments) == [] and info.duration == 0.0


def test_truncated_file_warns(tiny, tmp_path):
    # a WAV cut in the middle of its data: what is there is transcribed, with steno's warning
    data = (AUDIO / "jfk.wav").read_bytes()
    k = data.find(b"data")
    cut = tmp_path / "cut.wav"
    cut.write_bytes(data[: k + 8 + (len(data) - k - 8) // 2])
    for audio in (str(cut), cut.read_bytes()):
        with pytest.warns(UserWarning, match=r"truncated: the header declares 11\.0 s of audio, 5\.5 s decoded"):
            segments, info = tiny.transcribe(audio, **GREEDY)
        assert "fellow americans" in "".join(s.text for s in segments).lower()
