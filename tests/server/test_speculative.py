"""test_speculative.py — speculative decoding in the server (--draft-kind ngram), SmolLM2.

Four chats at once on --parallel 4 (their rows verify drafts inside the same batched passes), with
and without speculation: every text equals the plain server's, greedy and at temperature 0.8 with
a seed; usage.speculation reports drafted / accepted tokens and the passes that decoded the row,
and on the prompts that repeat text some drafts are accepted, so fewer passes than tokens.
Under ASan+UBSan greedy only.
"""
import concurrent.futures as cf
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import SANITIZE, Checks, Server  # noqa: E402

t = Checks()
PROMPTS = [
    "Repeat this text exactly: The library opens at nine in the morning and closes at six in the evening. "
    "Books may be borrowed for three weeks and renewed twice.",
    "What is the capital of France?",
    "Copy this list: apples, pears, plums, apples, pears, plums, apples, pears, plums.",
    "Write one sentence about dogs.",
]


def run(args):
    with Server(["--llm-model", "smollm2", "--parallel", "4"] + args) as s:
        def chat(arg):
            p, temp = arg
            st, body = s.post_json("/v1/chat/completions", {
                "model": "smollm2", "messages": [{"role": "user", "content": p}], "temperature": temp,
                "seed": 7, "max_tokens": 60})
            assert st == 200, (st, body)
            d = json.loads(body)
            return d["choices"][0]["message"]["content"], d["usage"]

        jobs = [(p, temp) for temp in ((0,) if SANITIZE else (0, 0.8)) for p in PROMPTS]
        out = []
        for k in range(0, len(jobs), 4):
            with cf.ThreadPoolExecutor(4) as ex:
                out += list(ex.map(chat, jobs[k:k + 4]))
        return jobs, out


jobs, plain = run([])
_, spec = run(["--draft-kind", "ngram"])
accepted = 0
for (p, temp), (a, ua), (b, ub) in zip(jobs, plain, spec):
    sp = ub.get("speculation")
    print(f"temp {temp} {p[:40]!r}: {ub['completion_tokens']} tokens, speculation {sp}")
    t.check(a == b, f"temp {temp} {p[:40]!r}: speculative text differs:\n{b!r}\nvs plain\n{a!r}")
    t.check("speculation" not in ua, "the plain server reports speculation")
    t.check(sp is not None and sp["accepted"] <= sp["drafted"], f"usage.speculation: {sp}")
    if sp:
        accepted += sp["accepted"]
        t.check(sp["target_calls"] + sp["accepted"] >= ub["completion_tokens"] - 1,
                f"{sp['target_calls']} passes and {sp['accepted']} accepted drafts for {ub['completion_tokens']} tokens")
t.check(accepted > 0, "no draft accepted on prompts that repeat text")
print(f"{accepted} draft tokens accepted over {len(jobs)} requests; every text equals plain decoding's")
sys.exit(t.finish())
