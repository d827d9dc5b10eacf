/* fuzz_ws.c — the WebSocket frame reader (server/ws.c) on arbitrary client bytes. The input is
 * split into feeds at points its first byte chooses (a socket hands over bytes in any grouping);
 * invariants: an event's payload lies inside the reader's buffers and respects the size limit,
 * a message is text or binary, a close code is one RFC 6455 allows, and after a protocol error
 * the close code is one of the reader's. Also the handshake key on the input's first 24 bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const size_t piece = 1 + data[0] % 64;
    data++;
    size--;
    if (size >= 24) {
        char key[25], out[29];
        memcpy(key, data, 24);
        key[24] = '\0';
        if (ws_accept_key(key, out) == 0 && strlen(out) != 28) abort();
    }
    ws_reader r = {.max_message = 4096};
    int closed = 0;
    for (size_t at = 0; at < size && !closed; at += piece) {
        const size_t k = size - at < piece ? size - at : piece;
        if (ws_reader_feed(&r, data + at, k) != 0) abort();
        for (;;) {
            ws_event ev;
            int code = 0;
            const int got = ws_reader_next(&r, &ev, &code);
            if (got == 0) break;
            if (got < 0) {
                if (code != WS_CLOSE_PROTOCOL && code != WS_CLOSE_TOO_BIG && code != WS_CLOSE_ERROR) abort();
                closed = 1;
                break;
            }
            const int in_in = ev.len == 0 || (ev.data >= r.in && ev.data + ev.len <= r.in + r.in_n);
            const int in_msg = ev.len == 0 || (r.msg && ev.data >= r.msg && ev.data + ev.len <= r.msg + r.msg_n);
            if (!in_in && !in_msg) abort();
            if (ev.opcode == WS_TEXT || ev.opcode == WS_BINARY) {
                if (ev.len > r.max_message) abort();
            } else if (ev.opcode == WS_PING || ev.opcode == WS_PONG) {
                if (ev.len > 125) abort();
            } else if (ev.opcode == WS_CLOSE) {
                if (ev.close_code != 1005 && (ev.close_code < 1000 || ev.close_code > 4999)) abort();
                closed = 1;
                break;
            } else {
                abort();
            }
            volatile uint8_t sink = 0;
            for (size_t i = 0; i < ev.len; i++) sink ^= ev.data[i];
            (void)sink;
        }
    }
    ws_reader_free(&r);
    return 0;
}
