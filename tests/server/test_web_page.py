"""test_web_page.py — drives steno serve's web page (server/web/index.html) in headless Chromium.

Server A (tiny.en + the stories260K llama2.c model): the page lists the models, transcribes
jfk.wav streamed segment by segment to the CLI's text, offers SRT/VTT/TXT/JSON downloads built from
the segments (the SRT equals the CLI's), shows the chat panel, and shows the server's error in plain
words when the model has no chat template. Server B (tiny.en + smollm2): a chat message gets a
non-empty streamed reply, and the second turn sends the whole history. Screenshots go to
${STENO_TEST_ARTIFACTS:-<build dir>/test-artifacts}/web_page*.png.

Needs Debian's chromium and chromium-driver (scripts/install_deps.sh) and selenium (the venv of
scripts/server_venv.sh); a missing browser is a failure, never a skip. Every wait is bounded.
"""
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serverlib  # noqa: E402
from serverlib import SHARED, Checks, Server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
JFK = os.path.realpath(serverlib.audio("jfk.wav"))  # chromedriver wants a canonical path
STORIES = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")
TRANSCRIBE_TIMEOUT = 120
CHAT_TIMEOUT = 120

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError as e:
    print(f"FAIL: selenium is not importable ({e}); run scripts/server_venv.sh and use its python")
    print("0 passed, 1 failed")
    sys.exit(1)

for path, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
    if not os.access(path, os.X_OK):
        print(f"FAIL: {path} is missing: install Debian's {pkg} (scripts/install_deps.sh)")
        print("0 passed, 1 failed")
        sys.exit(1)

ARTIFACTS = os.environ.get("STENO_TEST_ARTIFACTS") or os.path.join(
    os.path.dirname(os.path.abspath(serverlib.BIN)), "test-artifacts")
os.makedirs(ARTIFACTS, exist_ok=True)

c = Checks()


def norm(text):
    return " ".join(text.split())


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,1500",
              "--disable-gpu", "--no-first-run", "--disable-extensions",
              "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"):  # a beeping microphone
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(60)
    d.set_script_timeout(30)
    return d


def wait(d, cond, timeout, what):
    """Waits for cond(d) to be truthy; a timeout is a failed check (returns None)."""
    try:
        return WebDriverWait(d, timeout, poll_frequency=0.1).until(lambda drv: cond(drv))
    except TimeoutException:
        c.check(False, f"timed out after {timeout} s waiting for {what}")
        return None


def text_of(d, id_):
    return d.find_element(By.ID, id_).text.strip()


def fetch_blob(d, url):
    return d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0]).then(r => r.text()).then(done, e => done('FETCH-ERROR ' + e));", url)


def console_errors(d):
    return [e["message"] for e in d.get_log("browser") if e.get("level") == "SEVERE"]


def open_page(d, s):
    d.get(s.url + "/")
    c.check(d.title == "steno", f"page title is 'steno' (got {d.title!r})")
    return wait(d, lambda drv: "models:" in text_of(drv, "models"), 30, "the model list")


def transcribe(d, path, expect="done"):
    """Picks path in the file input (None: keeps the chosen source), clicks transcribe and waits
    for the status to settle; checks it reads expect."""
    if path:
        d.find_element(By.ID, "file").send_keys(path)
        wait(d, lambda drv: os.path.basename(path) in text_of(drv, "chosen"), 10, "the chosen file's name")
    d.find_element(By.ID, "transcribe").click()  # the handler sets "uploading…" before it returns
    ok = wait(d, lambda drv: text_of(drv, "status") in ("done", "error"), TRANSCRIBE_TIMEOUT, f"status '{expect}'")
    status = text_of(d, "status")
    c.check(status == expect, f"status reads {expect!r} (got {status!r}; error box: {text_of(d, 'error')!r})")
    return ok and status == expect


def check_translate_error(d):
    """tiny.en is English-only: translate is refused with 400, shown in plain words."""
    Select(d.find_element(By.ID, "task")).select_by_value("translate")
    if transcribe(d, JFK, expect="error"):
        err = text_of(d, "error")
        c.check("multilingual" in err and "{" not in err, f"the server's refusal is shown in plain words ({err!r})")
        c.check(not d.find_elements(By.CSS_SELECTOR, "#transcript .segment"), "no segments after a refusal")
        c.check(not d.find_element(By.ID, "downloads").is_displayed(), "no downloads after a refusal")
    Select(d.find_element(By.ID, "task")).select_by_value("transcribe")


def check_words(d, cli_txt):
    """Word timestamps (a verbose_json request, not streamed): each word a span with its times."""
    d.find_element(By.ID, "words").click()
    if transcribe(d, None):
        words = d.find_elements(By.CSS_SELECTOR, "#transcript .segment .word")
        c.check(len(words) == len(cli_txt.split()), f"one span per word ({len(words)} vs {len(cli_txt.split())})")
        c.check(words and all(re.fullmatch(r"\d\d:\d\d\.\d{3} → \d\d:\d\d\.\d{3}", w.get_attribute("title"))
                              for w in words), "every word carries its times")
        joined = " ".join(w.text for w in words)
        c.check(norm(joined) == norm(cli_txt), f"the words are the CLI's text ({joined!r})")
    d.find_element(By.ID, "words").click()


def check_recording(d):
    """Records ~2 s from Chromium's fake microphone (a beep) and transcribes the recorded blob."""
    d.find_element(By.ID, "record").click()
    if not wait(d, lambda drv: text_of(drv, "status") == "recording…" or text_of(drv, "error"), 15, "the recording"):
        return
    c.check(text_of(d, "status") == "recording…", f"recording starts (error box: {text_of(d, 'error')!r})")
    time.sleep(2)
    d.find_element(By.ID, "record").click()
    if wait(d, lambda drv: text_of(drv, "chosen").startswith("recording."), 15, "the recorded clip"):
        c.check(d.find_element(By.ID, "file").get_attribute("value") == "", "the file input no longer shows jfk.wav")
        if transcribe(d, None):
            name = d.find_element(By.ID, "download-txt").get_attribute("download")
            c.check(name.startswith("recording."), f"the downloads are named after the recording ({name!r})")
            print("  recording:", text_of(d, "chosen"), "->",
                  len(d.find_elements(By.CSS_SELECTOR, "#transcript .segment")), "segments")


SRT_BLOCK = re.compile(r"(\d+)\n(\d\d):(\d\d):(\d\d),(\d\d\d) --> (\d\d):(\d\d):(\d\d),(\d\d\d)\n(.+?)\n\n", re.S)
TS = re.compile(r"\[(\d\d):(\d\d)\.(\d\d\d) → (\d\d):(\d\d)\.(\d\d\d)\]")


def check_transcription(d, cli_txt):
    cli_srt = serverlib.cli_transcribe(JFK, "srt")
    if not transcribe(d, JFK):
        return
    segs = d.find_elements(By.CSS_SELECTOR, "#transcript .segment")
    c.check(len(segs) >= 1, f"the transcript has segments (got {len(segs)})")
    texts = [e.find_element(By.CSS_SELECTOR, ".text").text for e in segs]
    stamps = [e.find_element(By.CSS_SELECTOR, ".ts").text for e in segs]
    c.check(norm(" ".join(texts)) == norm(cli_txt),
            f"the page's transcript equals the CLI's:\n  page: {norm(' '.join(texts))!r}\n  cli:  {norm(cli_txt)!r}")
    c.check(any(TS.fullmatch(t) for t in stamps), f"a segment shows a timestamp [mm:ss.mmm → mm:ss.mmm] ({stamps})")
    c.check(all(TS.fullmatch(t) for t in stamps), f"every segment shows its timestamps ({stamps})")

    c.check(d.find_element(By.ID, "downloads").is_displayed(), "the downloads are shown once done")
    links = {}
    for ext in ("srt", "vtt", "txt", "json"):
        a = d.find_element(By.ID, "download-" + ext)
        href, name = a.get_attribute("href") or "", a.get_attribute("download") or ""
        c.check(href.startswith("blob:"), f"{ext} download's href is a blob: URL (got {href!r})")
        c.check(name == "jfk." + ext, f"{ext} download is named jfk.{ext} (got {name!r})")
        links[ext] = fetch_blob(d, href) if href.startswith("blob:") else ""

    srt = links["srt"]
    blocks = SRT_BLOCK.findall(srt)
    c.check("".join(m.group(0) for m in SRT_BLOCK.finditer(srt)) == srt and blocks,
            f"the SRT is well formed:\n{srt!r}")
    c.check([int(b[0]) for b in blocks] == list(range(1, len(blocks) + 1)), "the SRT's cues are numbered 1..N")
    c.check([b[9] for b in blocks] == [t.strip() for t in texts], "the SRT's cues are the page's segments")
    for b, st in zip(blocks, stamps):
        m = TS.fullmatch(st)
        if m:
            h1, m1, s1, ms1, h2, m2, s2, ms2 = (int(x) for x in b[1:9])
            c.check((h1 * 60 + m1, s1, ms1, h2 * 60 + m2, s2, ms2) == tuple(int(x) for x in m.groups()),
                    f"SRT cue {b[0]} has the segment's times ({st})")
    c.check(srt == cli_srt, f"the SRT equals the CLI's:\n  page: {srt!r}\n  cli:  {cli_srt!r}")

    vtt = links["vtt"]
    c.check(vtt.startswith("WEBVTT\n\n") and vtt.count(" --> ") == len(segs), f"the VTT is well formed: {vtt!r}")
    c.check(links["txt"] == "".join(t.strip() + "\n" for t in texts), f"the TXT is one segment a line: {links['txt']!r}")
    try:
        j = json.loads(links["json"])
        c.check(norm(j.get("text", "")) == norm(cli_txt), "the JSON's text is the transcript")
        c.check(len(j.get("segments", [])) == len(segs) and all("start" in s and "end" in s for s in j["segments"]),
                "the JSON has the segments with their times")
        c.check(j.get("language") == "english", f"the JSON names the language (got {j.get('language')!r})")
    except ValueError:
        c.check(False, f"the JSON download parses: {links['json']!r}")


def send_chat(d, message):
    """Types message, sends it and waits until the chat status settles; returns the status."""
    box = d.find_element(By.ID, "chat-input")
    box.clear()
    box.send_keys(message)
    before = len(d.find_elements(By.CSS_SELECTOR, "#chat-log .msg"))
    d.find_element(By.ID, "chat-send").click()
    wait(d, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#chat-log .msg")) > before and
         text_of(drv, "chat-status") in ("done", "error"), CHAT_TIMEOUT, "the chat reply")
    return text_of(d, "chat-status")


RECORD_FETCH = """
window.__chatBodies = [];
const orig = window.fetch;
window.fetch = function (url, init) {
  if (String(url).includes('/v1/chat/completions') && init && init.body) window.__chatBodies.push(JSON.parse(init.body));
  return orig.apply(this, arguments);
};
"""

# ------------------------------------------------------------------ A: tiny.en + stories260K
d = browser()
try:
    with Server(["--whisper-model", "tiny.en", "--llm-model", STORIES]) as s:
        if open_page(d, s):
            models = text_of(d, "models")
            c.check("tiny.en" in models and "stories260K" in models, f"the page lists both models ({models!r})")
        c.check(not d.find_element(By.ID, "auth").is_displayed(), "no API-key field when the server needs none")
        cli_txt = serverlib.cli_transcribe(JFK, "txt")
        check_translate_error(d)
        check_transcription(d, cli_txt)
        check_words(d, cli_txt)
        check_recording(d)
        c.check(d.find_element(By.ID, "chat").is_displayed(), "the chat panel is shown when an LLM is loaded")
        status = send_chat(d, "Hello")
        errs = d.find_elements(By.CSS_SELECTOR, "#chat-log .msg.error")
        c.check(status == "error" and errs and errs[-1].text.strip(),
                f"a model without a chat template: the server's error is shown (status {status!r})")
        if errs:
            print("  chat error shown:", errs[-1].text.strip())
        d.save_screenshot(os.path.join(ARTIFACTS, "web_page_stories.png"))
        bad = console_errors(d)
        expected = ("/v1/audio/translations", "/v1/chat/completions")  # the two refusals above
        c.check(not [m for m in bad if not (any(p in m for p in expected) and "status of 400" in m)],
                f"no errors in the browser's console but the expected 400s ({bad})")

    # -------------------------------------------------------------- B: tiny.en + smollm2
    with Server(["--whisper-model", "tiny.en", "--llm-model", "smollm2"]) as s:
        open_page(d, s)
        wait(d, lambda drv: drv.find_element(By.ID, "chat").is_displayed(), 10, "the chat panel")
        d.execute_script(RECORD_FETCH)
        transcribe(d, JFK)
        d.find_element(By.ID, "chat-temperature").send_keys("0")
        d.find_element(By.ID, "chat-max-tokens").send_keys("20")
        status = send_chat(d, "What is the capital of France?")
        replies = d.find_elements(By.CSS_SELECTOR, "#chat-log .msg.assistant")
        first = replies[-1].text.strip() if replies else ""
        c.check(status == "done" and first, f"smollm2 streams a non-empty reply (status {status!r}, {first!r})")
        print("  smollm2 replied:", repr(first))
        status = send_chat(d, "And of Italy?")
        replies = d.find_elements(By.CSS_SELECTOR, "#chat-log .msg.assistant")
        c.check(status == "done" and len(replies) == 2 and replies[-1].text.strip(),
                f"a second turn gets a reply (status {status!r})")
        bodies = d.execute_script("return window.__chatBodies") or []
        c.check(len(bodies) == 2, f"two chat requests were sent (got {len(bodies)})")
        if len(bodies) == 2:
            b0, b1 = bodies
            c.check(b0.get("model") == "smollm2" and b0.get("stream") is True and b0.get("temperature") == 0
                    and b0.get("max_tokens") == 20, f"the chat request: model, stream, temperature, max_tokens ({b0})")
            roles = [m["role"] for m in b1.get("messages", [])]
            c.check(roles == ["user", "assistant", "user"] and b1["messages"][1]["content"] == first,
                    f"the second request carries the conversation ({roles})")
        bad = console_errors(d)
        c.check(not bad, f"no errors in the browser's console ({bad})")
        shot = os.path.join(ARTIFACTS, "web_page.png")
        d.save_screenshot(shot)
        c.check(os.path.getsize(shot) > 10000, f"a screenshot was saved to {shot}")

    # ---------------------------------------------- C: --api-key: a 401 asks for the key
    # GET / itself needs the key (every endpoint but /health does), so the page is loaded with the
    # header added by the browser (CDP); then the page's own requests go without it until the key
    # is typed into its field.
    key = "web-page-test-key"
    with Server(["--whisper-model", "tiny.en", "--api-key", key]) as s:
        d.execute_cdp_cmd("Network.enable", {})
        d.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": "Bearer " + key}})
        d.get(s.url + "/")
        wait(d, lambda drv: "models:" in text_of(drv, "models"), 30, "the model list")
        d.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})
        d.execute_script("sessionStorage.clear()")
        if transcribe(d, JFK, expect="error"):
            c.check(d.find_element(By.ID, "auth").is_displayed(), "a 401 shows the API-key field")
            c.check("API key" in text_of(d, "error"), f"the 401 is explained ({text_of(d, 'error')!r})")
        d.find_element(By.ID, "api-key").send_keys("wrong")
        d.find_element(By.ID, "api-key-save").click()
        wait(d, lambda drv: text_of(drv, "auth-error"), 15, "the wrong key to be refused")
        c.check("not accepted" in text_of(d, "auth-error"), f"a wrong key is refused ({text_of(d, 'auth-error')!r})")
        d.find_element(By.ID, "api-key").clear()
        d.find_element(By.ID, "api-key").send_keys(key)
        d.find_element(By.ID, "api-key-save").click()
        wait(d, lambda drv: "models:" in text_of(drv, "models") and not text_of(drv, "auth-error"), 15,
             "the right key to be accepted")
        if transcribe(d, None):
            segs = d.find_elements(By.CSS_SELECTOR, "#transcript .segment .text")
            c.check(norm(" ".join(e.text for e in segs)) == norm(cli_txt), "with the key the transcript is the CLI's")
        d.save_screenshot(os.path.join(ARTIFACTS, "web_page_api_key.png"))
except Exception as e:  # a crash is a failure with its reason, never a silent pass
    c.check(False, f"{type(e).__name__}: {e}")
finally:
    d.quit()

c.finish()
