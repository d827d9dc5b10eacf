/* ws.h — the WebSocket protocol (RFC 6455) as a server speaks it: the handshake's accept key, and
 * a reader that turns the client's bytes into messages and control frames, with the checks the
 * RFC requires of a server (masked client frames, no reserved bits or opcodes, control frames
 * short and unfragmented, continuation only inside a fragmented message) and a size limit.
 * No I/O here: server/routes_stream.c owns the socket. Fuzzed by fuzz/fuzz_ws.c. */
#ifndef STENO_SERVER_WS_H
#define STENO_SERVER_WS_H

#include <stddef.h>
#include <stdint.h>

enum { WS_CONT = 0x0, WS_TEXT = 0x1, WS_BINARY = 0x2, WS_CLOSE = 0x8, WS_PING = 0x9, WS_PONG = 0xA };

/* close codes (RFC 6455 7.4.1) */
enum { WS_CLOSE_NORMAL = 1000, WS_CLOSE_GOING_AWAY = 1001, WS_CLOSE_PROTOCOL = 1002, WS_CLOSE_UNSUPPORTED = 1003,
       WS_CLOSE_INVALID = 1007, WS_CLOSE_POLICY = 1008, WS_CLOSE_TOO_BIG = 1009, WS_CLOSE_ERROR = 1011 };

/** Sec-WebSocket-Accept for the client's Sec-WebSocket-Key: base64(SHA-1(key + the RFC's GUID))
 *  into out (29 bytes with the NUL). Returns 0, or -1 when key is not the base64 of 16 bytes
 *  (RFC 6455 4.2.1 item 4). */
int ws_accept_key(const char *key, char out[29]);

/** Writes a server frame header (FIN set, unmasked) for a payload of len bytes; returns its size
 *  (2, 4 or 10 bytes; out must hold 10). */
size_t ws_frame_header(uint8_t *out, int opcode, uint64_t len);

typedef struct ws_event {
    int opcode;           /* WS_TEXT or WS_BINARY (a whole message), WS_PING, WS_PONG, WS_CLOSE */
    const uint8_t *data;  /* the unmasked payload, valid until the next ws_reader call */
    size_t len;
    int close_code;       /* WS_CLOSE: the code the client sent (1005 when none) */
} ws_event;

typedef struct ws_reader {
    size_t max_message;   /* a message (all its fragments) larger than this: WS_CLOSE_TOO_BIG */
    uint8_t *in;          /* bytes received, not yet parsed */
    size_t in_n, in_cap;
    uint8_t *msg;         /* a fragmented message being assembled */
    size_t msg_n, msg_cap;
    int msg_op;           /* its opcode; 0: none in progress */
    size_t consumed;      /* bytes of in to drop at the next call */
} ws_reader;

/** Appends n received bytes. Returns 0, or -1 when out of memory. */
int ws_reader_feed(ws_reader *r, const void *data, size_t n);

/** The next event from the bytes fed: 1 with *ev set, 0 when more bytes are needed, -1 on a
 *  protocol violation with *close_code the code to close with (1002, 1007 for a close frame's bad
 *  code, 1009 for a frame or message over max_message; -1 out of memory: 1011). */
int ws_reader_next(ws_reader *r, ws_event *ev, int *close_code);

void ws_reader_free(ws_reader *r);

#endif
