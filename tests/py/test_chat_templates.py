"""test_chat_templates.py — steno's Jinja interpreter (src/text/jinja/) against Python's jinja2.

Every template below is rendered with every conversation twice: by jinja2 exactly as transformers
compiles chat templates (transformers/utils/chat_template_utils.py, _compile_jinja_template:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker,
loopcontrols]), its tojson filter, raise_exception and strftime_now, here at a fixed time) and by
steno's renderer (tests/tools/jinja_render --batch, STENO_JINJA_RENDER: each template compiled
once, rendered with every conversation). The outputs must be byte-equal;
where jinja2 raises, steno must fail too ("error" equals "error").

Templates: the GGUF test models' own (SmolLM2, Qwen2.5-Coder: tokenizer.chat_template, read here
from the file; Gemma 3's file has none) and llama.cpp's models/templates/ (scripts/fetch_chat_templates.sh), Qwen2.5 among them.
Every pair is reported; every template must match on every conversation except those listed in
EXCLUDED with the reason (none today: all 70 of llama-cpp-python 0.3.36's match); REQUIRED names
the families that must be present and fully equal (at least 20), so a smaller template set fails.
In the sanitized build (STENO_SANITIZE=1) only the REQUIRED templates and the GGUFs' run.
Needs: python3-jinja2 (scripts/install_deps.sh). Standard library otherwise.
"""
import calendar
import datetime
import json
import os
import struct
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

RENDER = os.environ.get("STENO_JINJA_RENDER")
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "steno")
TEMPLATES = os.environ.get("STENO_TEMPLATES_DIR") or os.path.join(CACHE, "chat-templates")
MODELS = os.environ.get("STENO_MODELS_DIR") or os.path.join(CACHE, "models")
NOW = datetime.datetime(2024, 7, 26, 10, 30, 15)
NOW_UNIX = calendar.timegm(NOW.timetuple())

# llama.cpp templates that must be present and match jinja2 on every conversation.
REQUIRED = [
    "Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B", "Qwen-QwQ-32B", "Qwen3-Coder",
    "meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.2-3B-Instruct", "meta-llama-Llama-3.3-70B-Instruct",
    "microsoft-Phi-3.5-mini-instruct", "google-gemma-2-2b-it", "ibm-granite-granite-3.3-2B-Instruct",
    "HuggingFaceTB-SmolLM3-3B", "mistralai-Mistral-Nemo-Instruct-2407", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "meetkai-functionary-medium-v3.1", "meetkai-functionary-medium-v3.2",
    "fireworks-ai-llama-3-firefunction-v2", "CohereForAI-c4ai-command-r-plus-tool_use",
]
# llama.cpp templates reported but not required to match, with the reason (none today).
EXCLUDED = {}


class GenerationTags(jinja2.ext.Extension):
    """transformers' AssistantTracker outside training: {% generation %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def jinja2_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTags, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: NOW.strftime(fmt)
    return env


ENV = jinja2_env()

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "City name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Add two integers",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]}}},
]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}

SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello!"}
A1 = {"role": "assistant", "content": "Hi! How can I help you today?"}
U2 = {"role": "user", "content": "What is 2 + 2?"}

CONVERSATIONS = {
    "user": ([U1], True, None),
    "system_user": ([SYS, U1], True, None),
    "multi_turn": ([SYS, U1, A1, U2], True, None),
    "multi_turn_no_sys": ([U1, A1, U2], True, None),
    "ends_assistant": ([SYS, U1, A1], False, None),
    "no_generation_prompt": ([U1], False, None),
    "unicode": ([{"role": "user", "content": "Grüße aus Köln — 東京 🎉 \"quotes\" 'single' \\back\\slash"},
                 {"role": "assistant", "content": "Ça va ? 😀👍🏽"},
                 {"role": "user", "content": "  spaced out \n\n with newlines\t "}], True, None),
    "empty_content": ([{"role": "user", "content": ""}, {"role": "assistant", "content": ""},
                       {"role": "user", "content": "again"}], True, None),
    "tools": ([SYS, {"role": "user", "content": "Weather in Paris?"}], True, TOOLS),
    "tool_calls": ([{"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": "", "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
                     "content": "{\"temperature\": 21, \"unit\": \"celsius\"}"}], True, TOOLS),
    "tool_calls_answered": ([SYS, {"role": "user", "content": "Weather in Paris?"},
                             {"role": "assistant", "content": None, "tool_calls": [CALL]},
                             {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "21 C"},
                             {"role": "assistant", "content": "It is 21 C in Paris."},
                             {"role": "user", "content": "Thanks"}], False, TOOLS),
    "tool_call_string_args": ([{"role": "user", "content": "Add 2 and 3"},
                               {"role": "assistant", "content": "",
                                "tool_calls": [{"id": "call_9", "type": "function",
                                                "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]},
                               {"role": "tool", "tool_call_id": "call_9", "content": "5"}], True, TOOLS),
    "reasoning": ([U1, {"role": "assistant", "content": "Hi!", "reasoning_content": "The user greets me."},
                   U2], True, None),
    "not_alternating": ([{"role": "assistant", "content": "I speak first"}, U1, U2], True, None),
    "braces": ([{"role": "user", "content": "{{ not a template }} {% raw %} <|im_end|> </s>"}], True, None),
}


def context(conv, bos, eos):
    msgs, agp, tools = CONVERSATIONS[conv]
    c = {"messages": msgs, "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos}
    if tools is not None:
        c["tools"] = tools
    return c


def gguf_meta(path, keys):
    """The string/u32 values of keys and the token list of a GGUF file (enough of the format)."""
    out = {}
    with open(path, "rb") as f:
        magic, version, n_tensors, n_kv = struct.unpack("<IIQQ", f.read(24))
        assert magic == 0x46554747, path

        def rstr():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8")
        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
        fmts = {4: "<I", 5: "<i", 0: "<B", 10: "<Q", 11: "<q"}

        def rval(t):
            if t == 8:
                return rstr()
            if t == 9:
                et, n = struct.unpack("<IQ", f.read(12))
                if et == 8:
                    return [rstr() for _ in range(n)]
                f.seek(sizes[et] * n, 1)
                return None
            data = f.read(sizes[t])
            return struct.unpack(fmts[t], data)[0] if t in fmts else None
        for _ in range(n_kv):
            k = rstr()
            (t,) = struct.unpack("<I", f.read(4))
            v = rval(t)
            if k in keys:
                out[k] = v
    return out


def gguf_templates():
    found = []
    for name in ("smollm2", "gemma3", "qwen2.5-coder-0.5b"):
        d = os.path.join(MODELS, name)
        files = [x for x in os.listdir(d) if x.endswith(".gguf")] if os.path.isdir(d) else []
        if not files:
            print("FAIL gguf %s: model missing (scripts/fetch_llm_models.sh)" % name)
            found.append((name, None, "", ""))
            continue
        m = gguf_meta(os.path.join(d, files[0]), {"tokenizer.chat_template", "tokenizer.ggml.tokens",
                                                  "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
        toks = m.get("tokenizer.ggml.tokens") or []
        bos = toks[m["tokenizer.ggml.bos_token_id"]] if "tokenizer.ggml.bos_token_id" in m else ""
        eos = toks[m["tokenizer.ggml.eos_token_id"]] if "tokenizer.ggml.eos_token_id" in m else ""
        if m.get("tokenizer.chat_template") is None:
            print("note gguf:%s: the file has no tokenizer.chat_template (steno writes its built-in turns)" % name)
            continue
        found.append(("gguf:" + name, m.get("tokenizer.chat_template"), bos, eos))
    return found


def render_jinja2(src, ctx):
    try:
        return ENV.from_string(src).render(**ctx)
    except Exception as e:  # noqa: BLE001 — any jinja2 failure is "error"
        return "error"


def render_steno(path, ctxs, tmp):
    """steno's renderings of one template with each context (one process, compiled once)."""
    files = []
    for i, ctx in enumerate(ctxs):
        files.append(os.path.join(tmp, "ctx%d.json" % i))
        with open(files[-1], "w", encoding="utf-8") as f:
            json.dump(ctx, f, ensure_ascii=False)
    p = subprocess.run([RENDER, "--batch", path, str(NOW_UNIX)] + files, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    if p.returncode != 0 or b"Sanitizer" in p.stderr or b"runtime error" in p.stderr:
        crash = "crash: rc %d %s" % (p.returncode, p.stderr.decode("utf-8", "replace")[-2000:])
        return [crash] * len(ctxs)
    out, pos, res = p.stdout, 0, []
    for _ in ctxs:
        nl = out.index(b"\n", pos)
        head = out[pos:nl].decode("utf-8", "replace")
        if head.startswith("ok "):
            n = int(head[3:])
            res.append(out[nl + 1:nl + 1 + n].decode("utf-8"))
            pos = nl + 1 + n + 1
        else:
            res.append("error")
            pos = nl + 1
    return res


def main():
    if not RENDER:
        print("FAIL: STENO_JINJA_RENDER is not set (ctest sets it)")
        return 1
    tmp = tempfile.mkdtemp(prefix="steno_chat_templates_")
    templates = gguf_templates()
    if not os.path.isdir(TEMPLATES):
        print("FAIL: no %s (scripts/fetch_chat_templates.sh)" % TEMPLATES)
        return 1
    sanitized = os.environ.get("STENO_SANITIZE") == "1"
    if sanitized:
        print("note: sanitized build: the %d REQUIRED templates and the GGUFs' only" % len(REQUIRED))
    for fn in sorted(os.listdir(TEMPLATES)):
        if fn.endswith(".jinja") and (not sanitized or fn[:-6] in REQUIRED):
            with open(os.path.join(TEMPLATES, fn), encoding="utf-8") as f:
                templates.append((fn[:-6], f.read(), "<s>", "</s>"))
    failed = []
    total = equal = 0
    per_template = {}
    for name, src, bos, eos in templates:
        if src is None:
            failed.append(name)
            continue
        path = os.path.join(tmp, "t.jinja")
        with open(path, "w", encoding="utf-8") as f:
            f.write(src)
        ok = 0
        bad = []
        ctxs = [context(conv, bos, eos) for conv in CONVERSATIONS]
        gots = render_steno(path, ctxs, tmp)
        for conv, ctx, got in zip(CONVERSATIONS, ctxs, gots):
            want = render_jinja2(src, ctx)
            total += 1
            if want == got:
                ok += 1
                equal += 1
            else:
                bad.append(conv)
                if os.environ.get("STENO_VERBOSE"):
                    print("--- %s / %s\n jinja2: %r\n steno:  %r" % (name, conv, want[:3000], got[:3000]))
        per_template[name] = (ok, bad)
        status = "PASS" if not bad else ("note" if name in EXCLUDED else "FAIL")
        print("%s %s: %d/%d conversations equal%s" % (status, name, ok, len(CONVERSATIONS),
                                                     (" (differ: %s)" % ", ".join(bad)) if bad else ""))
        if status == "FAIL":
            failed.append(name)
    for name in REQUIRED:
        if name not in per_template:
            print("FAIL %s: template missing" % name)
            failed.append(name)
    full = [n for n, (ok, bad) in per_template.items() if not bad and not n.startswith("gguf:")]
    print("%d of %d (template, conversation) pairs byte-equal; %d llama.cpp templates equal on all %d "
          "conversations" % (equal, total, len(full), len(CONVERSATIONS)))
    if len([n for n in REQUIRED if n in full]) < 20:
        failed.append("fewer than 20 required templates fully equal")
    print("%d passed, %d failed" % (len(per_template) - len(failed), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
