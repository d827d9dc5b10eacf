/* sniff.h — names the format of a model file from its first bytes, for error messages that tell a
 * user what they gave steno ("a whisper.cpp ggml model") instead of what failed ("Not a directory").
 *
 * Magic numbers: whisper.cpp ggml (u32 0x67676d6c "lmgg", whisper.cpp ggml.h GGML_FILE_MAGIC; also
 * the older "ggjt"/"ggmf"), GGUF ("GGUF", gguf.md), safetensors (u64 little-endian header length,
 * then '{', safetensors' format spec), PyTorch (a zip archive "PK\3\4" for torch.save since 1.6,
 * or a pickle: 0x80 then protocol 2..5 for older ones), ONNX (protobuf: field 1 ir_version,
 * byte 0x08), and CTranslate2's model.bin (ct2_open succeeds). */
#ifndef STENO_FORMATS_SNIFF_H
#define STENO_FORMATS_SNIFF_H

/** A noun phrase naming path's format ("a whisper.cpp ggml model"), or NULL when the file cannot be
 *  read or its format is none of those above. The string is static. Thread-safe. */
const char *steno_sniff_model_file(const char *path);

#endif
