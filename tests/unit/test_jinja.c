/* test_jinja.c — the chat-template interpreter (text/jinja/jinja.h): each construct real chat
 * templates use against the output Python's jinja2 3.1.6 gives, configured as transformers does
 * (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its tojson,
 * raise_exception, strftime_now at 2024-07-26 10:30:15); the expected texts were computed with
 * jinja2 and written in. Then errors (jinja2 raises on each: steno fails with one line naming the
 * line and the construct), the limits against hostile templates (loops, output size, recursion),
 * and concurrent renders of one compiled template. The finds of fuzz/fuzz_jinja.c are cases here
 * too (0 ** 66666666666666: integer powers by squaring, not one multiplication per unit; an empty
 * list or string times 10**17: no loop). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "text/jinja/jinja.h"

typedef struct {
    const char *tmpl, *want;
} jcase;

/* generated from Python's jinja2 (see the header comment) */
static const char *CTX_JSON = "{\"messages\": [{\"role\": \"system\", \"content\": \"Sys\"}, {\"role\": \"user\", \"content\": \"Hi there\"}, {\"role\": \"assistant\", \"content\": \"Hello!\"}], \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"d\": {\"b\": 2, \"a\": 1, \"C\": 3}, \"n\": null, \"s\": \"  Hello World  \", \"l\": [3, 1, 2], \"users\": [{\"name\": \"bob\", \"age\": 30}, {\"name\": \"Al\", \"age\": 25}, {\"name\": \"cy\", \"age\": 30}]}";
static const jcase CASES[] = {
    {"a{{ 1 }}b{# comment #}c",
     "a1bc"},
    {"x\n  {% if true %}\n  y\n  {% endif %}\nz",
     "x\n  y\nz"},
    {"x  {%- if true -%}  y  {%- endif -%}  z",
     "xyz"},
    {"x\n  {%+ if true %}y{% endif +%}\nz",
     "x\n  y\nz"},
    {"{% for i in [1,2] %}\n{{ i }}\n{% endfor %}\n",
     "1\n2\n"},
    {"  {{ 1 }}  {% if true %}  y{% endif %}",
     "  1    y"},
    {"{% raw %}{{ not evaluated }}{% endraw %}",
     "{{ not evaluated }}"},
    {"line\r\nnext\n",
     "line\nnext"},
    {"{{ 1.0 }} {{ 1e20 }} {{ 0.00001 }} {{ 1.5e300 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 3.14159 }}",
     "1.0 1e+20 1e-05 1.5e+300 0.30000000000000004 -0.0 3.14159"},
    {"{{ [1, 'a', \"b'c\", none, true, false, 2.5] }} {{ {'k': [1], 2: 'v'} }} {{ (1,) }} {{ (1, 2) }} {{ () }}",
     "[1, 'a', \"b'c\", None, True, False, 2.5] {'k': [1], 2: 'v'} (1,) (1, 2) ()"},
    {"{{ 'tab\\tnl\\nq\\'u\\u00e9\\x41' }}|{{ \"a\" 'b' }}|{{ 1_000 }}",
     "tab\tnl\nq'u\303\251A|ab|1000"},
    {"{{ True }} {{ False }} {{ None }} {{ none }} {{ true }}",
     "True False None None True"},
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 10 / 4 }} {{ 10 / 5 }}",
     "3 -4 1 2 3.0 1024 0.5 2.5 2.0"},
    {"{{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] * 2 }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 1 + 2.0 }} {{ true + 1 }} {{ 'a' ~ 1 ~ none ~ undefined_x }}",
     "ababab xxx [1, 1] ab [1, 2] 3.0 2 a1None"},
    {"{{ -3 }} {{ +3 }} {{ -(2 + 3) * 2 }} {{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ -1 | abs }}",
     "-3 3 -10 14 20 1"},
    {"{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} {{ 2 >= 2 }}",
     "True True True True True True"},
    {"{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ none or [] }} {{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' not in {'k': 1} }}",
     "x y True [] True True False"},
    {"{{ 'yes' if 1 else 'no' }}|{{ 'yes' if 0 }}|{{ 'a' if false else 'b' if true else 'c' }}",
     "yes||b"},
    {"{{ messages[0].role }} {{ messages[1]['content'] }} {{ messages[-1].content }} {{ messages[9] }} {{ d.a }} {{ d['C'] }} {{ d.zz }}",
     "system Hi there Hello!  1 3 "},
    {"{{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ l[::2] }} {{ l[1:] }} {{ l[:-1] }} {{ 'h\303\251llo'[1] }} {{ 'abc'[-1] }} {{ l[5:] }}",
     "el olleh [3, 2] [1, 2] [3, 1] \303\251 c []"},
    {"{{ messages[1:] | length }} {{ messages[0]['role'] == 'system' }} {{ none.x }}",
     "2 True "},
    {"{% if n %}a{% elif l %}b{% else %}c{% endif %}",
     "b"},
    {"{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}",
     "10TrueFalse332|21FalseFalse321|32FalseTrue310|"},
    {"{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a', 'b') }};{% endfor %}",
     "-1-a;3-2-b;1--a;"},
    {"{% for x in [] %}x{% else %}empty{% endfor %}{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}",
     "empty3222"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
     "b=2,a=1,C=3,baC"},
    {"{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "3"},
    {"{% for i in range(3) %}{% if i == 1 %}{% set x = 5 %}{% endif %}[{{ x }}]{% endfor %}{{ x }}",
     "[][5][]"},
    {"{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}{% for c in 'h\303\251' %}<{{ c }}>{% endfor %}",
     "37<h><\303\251>"},
    {"{% set x = 1 %}{% set y, z = 2, 3 %}{{ x + y + z }}{% set ns = namespace(n=0, items=[]) %}{% for i in l %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
     "66"},
    {"{% set ns = namespace(found=false) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}",
     "True"},
    {"{% set blk %}in {{ 1 + 1 }}{% endset %}[{{ blk }}]{% set up | upper %}shout{% endset %}{{ up }}",
     "[in 2]SHOUT"},
    {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}",
     "3"},
    {"{% macro greet(name, greeting='Hi') %}{{ greeting }} {{ name }}{% endmacro %}{{ greet('Bob') }}|{{ greet('Al', greeting='Yo') }}|{{ greet(name='Cy') }}",
     "Hi Bob|Yo Al|Hi Cy"},
    {"{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}body{% endcall %}{% macro li(x) %}[{{ caller(x) }}]{% endmacro %}{% call(v) li(7) %}{{ v * 2 }}{% endcall %}",
     "<body>[14]"},
    {"{% macro v() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ v(1, 2, k=3) }}",
     "(1, 2){'k': 3}"},
    {"{% filter upper %}abc {{ 'def' }}{% endfilter %}{% generation %}gen {{ 1 }}{% endgeneration %}",
     "ABC DEFgen 1"},
    {"{% macro rec(n) %}{{ n }}{% if n > 0 %}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}",
     "3210"},
    {"{{ x is defined }} {{ d is defined }} {{ n is none }} {{ 1 is number }} {{ 1.5 is float }} {{ 1 is integer }} {{ true is boolean }} {{ true is number }}",
     "False True True True True True True True"},
    {"{{ 's' is string }} {{ d is mapping }} {{ l is iterable }} {{ 's' is sequence }} {{ d is sequence }} {{ 1 is iterable }} {{ range is callable }}",
     "True True True True True False True"},
    {"{{ 2 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 'a' is equalto 'a' }} {{ 1 is eq 2 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 3 is gt 2 }} {{ 2 is le 2 }} {{ 2 is ge 3 }}",
     "True True True True False True True True True False"},
    {"{{ 2 is in [1, 2] }} {{ none is sameas none }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ true is true }} {{ 0 is false }} {{ x is undefined }} {{ n is not none }}",
     "True True True True True False True False"},
    {"[{{ s | trim }}] [{{ 'xxhixx' | trim('x') }}] {{ l | length }} {{ 'h\303\251llo' | count }} {{ d | length }} {{ l | join(', ') }} {{ 'abc' | upper }} {{ 'ABC' | lower }}",
     "[Hello World] [hi] 3 5 3 3, 1, 2 ABC abc"},
    {"{{ 'hello world' | capitalize }} {{ 'hello wORLD-foo bar' | title }} {{ 'aXbXc' | replace('X', '-') }} {{ 'aaa' | replace('a', 'b', 2) }}",
     "Hello world Hello World-Foo Bar a-b-c bba"},
    {"{{ x | default('dflt') }} {{ '' | default('e', true) }} {{ n | d('none!') }} {{ l | first }} {{ l | last }} {{ 'abc' | list }} {{ d | list }}",
     "dflt e None 3 2 ['a', 'b', 'c'] ['b', 'a', 'C']"},
    {"{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(true) }} {{ d | dictsort(by='value', reverse=true) }}",
     "[('b', 2), ('a', 1), ('C', 3)] [('a', 1), ('b', 2), ('C', 3)] [('C', 3), ('a', 1), ('b', 2)] [('C', 3), ('b', 2), ('a', 1)]"},
    {"{{ users | map(attribute='name') | join(',') }} {{ l | map('string') | join('') }} {{ users | map(attribute='zz', default='?""') | list }}",
     "bob,Al,cy 312 ['?""', '?""', '?""']"},
    {"{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ users | selectattr('age', 'equalto', 30) | map(attribute='name') | list }} {{ users | rejectattr('age', 'gt', 26) | list | length }}",
     "[3, 1] [2] ['bob', 'cy'] 1"},
    {"{{ [1, 2, 1, 'A', 'a'] | unique | list }} {{ l | reverse | list }} {{ 'abc' | reverse }} {{ l | sort }} {{ l | sort(reverse=true) }} {{ users | sort(attribute='name') | map(attribute='name') | join }}",
     "[1, 2, 'A'] [2, 1, 3] cba [1, 2, 3] [3, 2, 1] Albobcy"},
    {"{{ 42 | string }} {{ '42' | int + 1 }} {{ '4.5' | float }} {{ 'x' | int }} {{ 3.9 | int }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.7 | round(0, 'floor') }}",
     "42 43 4.5 0 3 2.5 2.0 3.14 2.0"},
    {"{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'x' | center(7) }}|{{ 'one two, three' | wordcount }}",
     "a\n  b\n\n  c|  a\n  b|   x   |3"},
    {"{{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | safe }} {{ l | batch(2) | list }} {{ l | sum }} {{ users | sum(attribute='age') }} {{ l | min }} {{ l | max }} {{ ['b', 'A'] | max }}",
     "&lt;a href=&#34;x&#34;&gt;&amp;&#39; <b> [[3, 1], [2]] 6 85 1 3 b"},
    {"{{ d | tojson }} {{ messages[0] | tojson(indent=2) }} {{ '\303\251\"\\n' | tojson }} {{ [1.5, none, true] | tojson }} {{ d | tojson(sort_keys=true) }} {{ d | tojson(separators=(',', ':')) }}",
     "{\"b\": 2, \"a\": 1, \"C\": 3} {\n  \"role\": \"system\",\n  \"content\": \"Sys\"\n} \"\303\251\\\"\\n\" [1.5, null, true] {\"C\": 3, \"a\": 1, \"b\": 2} {\"b\":2,\"a\":1,\"C\":3}"},
    {"{{ {'u': '\303\274'} | tojson(true) }} {{ l | tojson(indent='\\t') }}",
     "{\"u\": \"\\u00fc\"} [\n\t3,\n\t1,\n\t2\n]"},
    {"[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}][{{ '--a--'.strip('-') }}] {{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }}",
     "[Hello World][Hello World  ][  Hello World][a] ['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b,c'] ['a,b', 'c']"},
    {"{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'Hi'.upper() }} {{ 'Hi'.lower() }} {{ \"they're here\".title() }} {{ 'hI'.capitalize() }} {{ 'aXa'.replace('a', 'b') }}",
     "True True HI hi They'Re Here Hi bXb"},
    {"{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ '{} and {}'.format(1, 'x') }} {{ '{0}{name}'.format('a', name='b') }} {{ '-'.join(['a', 'b']) }}",
     "2 3 -1 2 1 and x ab a-b"},
    {"{{ 'a\\nb\\r\\nc'.splitlines() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ d.get('a') }} {{ d.get('zz', 'def') }} {{ d.get('zz') }} {{ d.keys() | list }} {{ d.values() | list }} {{ l.index(2) }} {{ l.count(3) }}",
     "['a', 'b', 'c'] True True 1 def None ['b', 'a', 'C'] [2, 1, 3] 2 1"},
    {"{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
     "[0, 1, 2] [1, 3, 5] [5, 3, 1] {'a': 1, 'b': 'x'} 1"},
    {"{{ strftime_now('%Y-%m-%d %H:%M %A %B %d') }}",
     "2024-07-26 10:30 Friday July 26"},
    {"[{{ undefined_x }}] [{{ undefined_x | length }}] [{{ undefined_x | default('z') }}] {% for x in undefined_x %}no{% endfor %}{{ undefined_x is defined }} {{ undefined_x == undefined_y }}",
     "[] [0] [z] False True"},
    {"[{{ [1].append }}]",
     "[]"},
    {"{{ 1 | items is defined }} {{ (none | unique) is none }} {{ [3, 1] | map('string') | reverse | list }} {{ {'a': 1} | items | list }}",
     "True False ['1', '3'] [('a', 1)]"},
    {"{{ {'a': {'b': [1, {'c': 2}]}} | tojson }}{% set x = {'k': {'v': 1}}%}{{ x.k.v }}",
     "{\"a\": {\"b\": [1, {\"c\": 2}]}}1"},
    {"{{ [1, 2] * 0 * 888888888888888880 }}{{ '' * 888888888888888880 }}{{ 0 ** 66666666666666 }} {{ 1 ** 999999999999 }} {{ (-1) ** 999999999999 }} {{ 2 ** 62 }} {{ 3 ** 5 }}",
     "[]0 1 -1 4611686018427387904 243"},
    {"{% if false %}{{ x | nosuch }}{% endif %}{{ (x | nosuch) if false }}ok",
     "ok"},
    {"{{ '%s=%d|%5.1f|%-3s|%%' % ('a', 7, 2.25, 'b') }} {{ '  a b c  '.rsplit(maxsplit=1) }} {{ '  a b c  '.split(maxsplit=1) }} {{ 2.675 | round(2) }}",
     "a=7|  2.2|b  |% ['  a b', 'c'] ['a', 'b c  '] 2.67"},
    {"\302\240 {% if true %}x{% endif %}",
     "x"},
    {"{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     "<|im_start|>system\nSys<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>assistant\n"},
};
static const jcase ERRORS[] = {
    {"{{ raise_exception('Conversation roles must alternate') }}", "raise_exception: Conversation roles must alternate"},
    {"{{ 1 | nosuchfilter }}", "unknown filter 'nosuchfilter'"},
    {"{{ 1 is nosuchtest }}", "unknown test 'nosuchtest'"},
    {"{% if %}", "line 1"},
    {"line1\n{% for x in %}", "line 2"},
    {"{{ 'a' + 1 }}", "can only concatenate"},
    {"{{ 1 < 'a' }}", "not supported between"},
    {"{{ undefined_x.attr }}", "'undefined_x' is undefined"},
    {"{{ 1 / 0 }}", "division by zero"},
    {"{% set l = [1] %}{{ l.append(2) }}", "unsafe"},
    {"{% if true %}unclosed", "unexpected end of template"},
    {"{{ range(1000000) | length }}", "Range too big"},
    {"{% include 'x' %}", "unknown tag 'include'"},
    {"{{ 'x' ", "unexpected end of template"},
    {"{{ (1 }}", "unexpected '}', expected ')'"},
    {"{{ [1, 1] | unique | length }}", "no len()"},
    {"{{ [1, 2] in {} }}", "unhashable type: 'list'"},
    {"{{ 1 | items | list }}", "Can only get item pairs from a mapping."},
    {"{{ [1, 2] | tojson(indent=2) | map('upper') | tojson }}", "generator"},
    {"{% for a in [] %}{{ a | nosuch }}{% endfor %}", "unknown filter 'nosuch'"},
    {"{{ '%s %s' % 1 }}", "not enough arguments"},
    {"{% macro m() %}{% endmacro %}{{ m(1) }}", "takes not more than 0"},
};

#define NOW 1721989815 /* 2024-07-26 10:30:15 UTC */

static steno_status render(const char *tmpl, const cJSON *ctx, const steno_jinja_opts *o, char **out, char *err,
                           size_t errlen) {
    return steno_jinja_render(tmpl, strlen(tmpl), ctx, o, out, err, errlen);
}

typedef struct {
    const steno_jinja_template *t;
    const cJSON *ctx;
    const char *want;
    int ok;
} thread_job;

static void *render_many(void *arg) {
    thread_job *j = arg;
    steno_jinja_opts o;
    steno_jinja_default_opts(&o);
    o.now = NOW;
    j->ok = 1;
    for (int i = 0; i < 200; i++) {
        char *out = NULL;
        if (steno_jinja_render_compiled(j->t, j->ctx, &o, &out) != STENO_OK || strcmp(out, j->want) != 0) j->ok = 0;
        free(out);
    }
    return NULL;
}

int main(void) {
    cJSON *ctx = cJSON_Parse(CTX_JSON);
    CHECK(ctx != NULL, "context parses");
    steno_jinja_opts o;
    steno_jinja_default_opts(&o);
    o.now = NOW;
    char err[512];
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char *out = NULL;
        steno_status st = render(CASES[i].tmpl, ctx, &o, &out, err, sizeof err);
        CHECK(st == STENO_OK && strcmp(out, CASES[i].want) == 0, "case %zu: %s\n  want %s\n  got  %s", i,
              CASES[i].tmpl, CASES[i].want, st == STENO_OK ? out : err);
        free(out);
    }
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++) {
        char *out = NULL;
        steno_status st = render(ERRORS[i].tmpl, ctx, &o, &out, err, sizeof err);
        CHECK(st != STENO_OK && out == NULL && strstr(err, ERRORS[i].want) && !strchr(err, '\n') &&
                  strncmp(err, "chat template", 13) == 0,
              "error %zu: %s: want a message with '%s', got status %d '%s'", i, ERRORS[i].tmpl, ERRORS[i].want, st,
              st == STENO_OK ? out : err);
        free(out);
    }
    /* the status: a syntax or runtime error is STENO_E_FORMAT, what the interpreter lacks UNSUPPORTED */
    char *out = NULL;
    CHECK(render("{{ x | nosuch }}", ctx, &o, &out, err, sizeof err) == STENO_E_UNSUPPORTED, "unknown filter status");
    CHECK(render("{% for %}", ctx, &o, &out, err, sizeof err) == STENO_E_FORMAT, "syntax error status");
    CHECK(render("\n\n{{ raise_exception('boom') }}", ctx, &o, &out, err, sizeof err) == STENO_E_FORMAT &&
              strcmp(err, "chat template line 3: raise_exception: boom") == 0,
          "raise_exception message: %s", err);

    /* limits: hostile templates end with an error, quickly */
    steno_jinja_opts lim = o;
    lim.max_iterations = 100000;
    CHECK(render("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", ctx, &lim, &out,
                 err, sizeof err) == STENO_E_FORMAT && strstr(err, "iterations"),
          "iteration limit: %s", err);
    lim.max_output = 1000;
    CHECK(render("{% for a in range(2000) %}xy{% endfor %}", ctx, &lim, &out, err, sizeof err) == STENO_E_FORMAT &&
              strstr(err, "output"),
          "output limit: %s", err);
    CHECK(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ctx, &lim, &out, err, sizeof err) ==
                  STENO_E_FORMAT && strstr(err, "nested"),
          "recursion limit: %s", err);
    lim.max_memory = (size_t)16 << 20;
    CHECK(render("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", ctx,
                 &lim, &out, err, sizeof err) != STENO_OK,
          "memory limit");
    char deep[4096];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof deep, "{{ ");
    for (int i = 0; i < 1000; i++) deep[k++] = '(';
    snprintf(deep + k, sizeof deep - k, " }}");
    CHECK(render(deep, ctx, &o, &out, err, sizeof err) == STENO_E_FORMAT && strstr(err, "nested too deeply"),
          "parser depth: %s", err);
    CHECK(render("", NULL, NULL, &out, err, sizeof err) == STENO_OK && out && out[0] == 0, "empty template");
    free(out);

    /* one compiled template, rendered by 4 threads at once */
    const char *tmpl = CASES[sizeof CASES / sizeof CASES[0] - 1].tmpl;
    steno_jinja_template *t = NULL;
    CHECK(steno_jinja_compile(tmpl, strlen(tmpl), &t) == STENO_OK, "compile");
    thread_job jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (thread_job){t, ctx, CASES[sizeof CASES / sizeof CASES[0] - 1].want, 0};
        pthread_create(&th[i], NULL, render_many, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].ok, "thread %d renders equal the single-thread output", i);
    }
    steno_jinja_template_free(t);
    cJSON_Delete(ctx);
    printf("%d passed, %d failed\n", g_checks - g_failures, g_failures);
    return g_failures ? 1 : 0;
}
