/* bpe_pre_types.c — tokenizer.ggml.pre names → llama.cpp's pre-tokenizer expressions and the
 * per-type settings that change token ids, transcribed from src/llama-vocab.cpp at commit 0c1e57098
 * (llama_vocab::impl::load for the names and flags, llm_tokenizer_bpe for the expressions). The
 * strings are byte-for-byte llama.cpp's: unicode_regex_split picks its hand-written splitters by
 * comparing the expression text, and bpe_pre.c does the same. clean_spaces only affects
 * detokenization and is not kept. Types with `excluded` set are refused at load (none today). */
#include "text/pretok/bpe_pre_internal.h"

const text_bpe_pre_def text_bpe_pre_defs[] = {
    /* LLAMA_VOCAB_PRE_TYPE_DEFAULT */
    {{"default", NULL},
     {
      "[\\p{P}\\$\\+<=>\\^~\\|]+",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      "\\p{N}+",
      "[0-9][0-9][0-9]",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_MINICPM5 */
    {{"minicpm5", NULL},
     {
      "\\p{N}{1,3}",
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     1, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_LLAMA3 */
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     1, 1, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM */
    {{"deepseek-llm", NULL},
     {
      "[\r\n]",
      "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
      "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
      "\\s+$",
      "[一-龥ࠀ-一가-퟿]+",
      "\\p{N}+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER */
    {{"deepseek-coder", NULL},
     {
      "[\r\n]",
      "\\s?\\p{L}+",
      "\\s?\\p{P}+",
      "[一-龥ࠀ-一가-퟿]+",
      "\\p{N}",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM */
    {{"deepseek-v3", NULL},
     {
      "\\p{N}{1,3}",
      "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_SPARK2_5 */
    {{"spark2_5", NULL},
     {
      "\\p{N}{1,3}",
      "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
      "\\p{N}",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_YOUTU */
    {{"youtu", NULL},
     {
      "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     1, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_FALCON */
    {{"falcon", NULL},
     {
      "[\\p{P}\\$\\+<=>\\^~\\|`]+",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      "[0-9][0-9][0-9]",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_MPT */
    {{"mpt", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_STARCODER */
    {{"starcoder", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_GPT2 */
    {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "exaone4", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* not a llama.cpp name: steno's earlier spelling of "gpt-2", kept for files that relied on it */
    {{"gpt2", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_JAIS2 */
    {{"jais-2", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_GEMMA4 */
    {{"gemma4", "granite-embed-multi-311m", NULL},
     {
      "[^\\n]+|[\\n]+",
      NULL},
     0, 0, NULL, TEXT_PRE_RAW | TEXT_PRE_ESCAPE | TEXT_PRE_NL_WHOLE | TEXT_PRE_FORCE_BOS},
    /* LLAMA_VOCAB_PRE_TYPE_SARVAM_MOE */
    {{"sarvam-moe", NULL},
     {
      "[^\\n]+|[\\n]+",
      NULL},
     0, 0, NULL, TEXT_PRE_RAW | TEXT_PRE_ESCAPE},
    /* LLAMA_VOCAB_PRE_TYPE_GPT2 with add_sep, which llama.cpp's BPE tokenize never reads (only its
     * WordPiece path does): GPT-2's ids. (jina-v2-* also give "<mask>" an lstrip attribute in
     * llama.cpp, which steno does not; those embedding models do not run in steno.) */
    {{"jina-v1-en", "jina-v2-code", "roberta-bpe", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_WHITESPACE */
    {{"whitespace", NULL},
     {
      "\\S+",
      NULL},
     0, 0,
     "llama.cpp aborts on it with a gpt2 vocabulary (the spaces between \\S+ words reach its merges); its "
     "whitespace tokenizer model has a tokenizer of its own",
     TEXT_PRE_RAW},
    /* LLAMA_VOCAB_PRE_TYPE_REFACT */
    {{"refact", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_COMMAND_R */
    {{"command-r", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_QWEN2 */
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_QWEN35 */
    {{"qwen35", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_STABLELM2 */
    {{"stablelm2", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_OLMO */
    {{"olmo", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_DBRX */
    {{"dbrx", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_SMAUG */
    {{"smaug-bpe", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_PORO */
    {{"poro-chat", NULL},
     {
      " ?[^(\\s|.,!?…。，、।۔،)]+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_CHATGLM4 */
    {{"chatglm-bpe", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_CHATGLM4 */
    {{"glm4", "glm5", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     1, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_VIKING */
    {{"viking", NULL},
     {
      " ?[^(\\s|.,!?…。，、।۔،)]+",
      "\\p{N}",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_JAIS */
    {{"jais", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_TEKKEN */
    {{"tekken", NULL},
     {
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     1, 1, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_SMOLLM */
    {{"smollm", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_CODESHELL */
    {{"codeshell", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_BLOOM */
    {{"bloom", NULL},
     {
      " ?[^(\\s|.,!?…。，、।۔،)]+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_GPT3_FINNISH */
    {{"gpt3-finnish", NULL},
     {
      " ?[^(\\s|.,!?…。，、।۔،)]+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_EXAONE */
    {{"exaone", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_EXAONE_MOE */
    {{"exaone-moe", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_CHAMELEON */
    {{"chameleon", NULL},
     {
      "<sentinel:[0-9]+>",
      "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
      "([\\t\\n]|    |  )",
      "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 1, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_MINERVA */
    {{"minerva-7b", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_GPT4O */
    {{"gpt-4o", "llama4", "kanana2", "talkie", NULL},
     {
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_MINIMAX_M2 */
    {{"minimax-m2", NULL},
     {
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_GRANITE_EMB_MULTI */
    {{"granite-embed-multi-97m", NULL},
     {
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     1, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_TINY_AYA */
    {{"tiny_aya", "cohere2moe", NULL},
     {
      "\\d{1,3}(?=(?:\\d{3})*\\b)",
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_SUPERBPE */
    {{"superbpe", NULL},
     {
      "\\p{N}+",
      "(?=(\\d{3})+(?!\\d))",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_TRILLION */
    {{"trillion", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_GRANITE_DOCLING */
    {{"granite-docling", NULL},
     {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_BAILINGMOE */
    {{"bailingmoe", "bailingmoe2", "llada-moe", NULL},
     {
      "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_SEED_CODER */
    {{"seed-coder", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_HUNYUAN */
    {{"hunyuan", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_HUNYUAN_DENSE */
    {{"hunyuan-dense", NULL},
     {
      "\\p{N}{1,3}",
      "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_HY_V4 */
    {{"hy_v4", NULL},
     {
      "\\p{N}{1,3}",
      "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_JOYAI_LLM */
    {{"joyai-llm", NULL},
     {
      "\\p{N}{1,3}",
      "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_KIMI_K2 */
    {{"kimi-k2", NULL},
     {
      "\\p{Han}+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_UFAKZEKA */
    {{"ufakzeka", NULL},
     {
      "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_GROK_2 */
    {{"grok-2", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_AFMOE */
    {{"afmoe", NULL},
     {
      "\\p{AFMoE_digits}",
      "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_LAGUNA */
    {{"laguna", NULL},
     {
      "[^\\n]+|[\\n]+",
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_SOLAR_OPEN */
    {{"solar-open", NULL},
     {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, NULL, 0},
    /* LLAMA_VOCAB_PRE_TYPE_MELLUM2 */
    {{"mellum2", NULL},
     {
      "\\p{N}",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      NULL},
     0, 0, NULL, 0},
};
const int text_bpe_pre_n_defs = (int)(sizeof text_bpe_pre_defs / sizeof text_bpe_pre_defs[0]);
