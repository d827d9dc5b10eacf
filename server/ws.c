/* ws.c — RFC 6455 framing for the server (ws.h). Section numbers refer to RFC 6455. */
#include "server/ws.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

static const char WS_GUID[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"; /* 1.3 */

int ws_accept_key(const char *key, char out[29]) {
    /* 4.2.1: the key is the base64 of 16 random bytes: 24 characters ending in "==" */
    if (!key || strlen(key) != 24 || key[22] != '=' || key[23] != '=') return -1;
    unsigned char raw[20];
    if (EVP_DecodeBlock(raw, (const unsigned char *)key, 24) != 18) return -1;
    for (int i = 0; i < 22; i++) {
        const char c = key[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
            return -1;
    }
    char cat[24 + sizeof WS_GUID];
    memcpy(cat, key, 24);
    memcpy(cat + 24, WS_GUID, sizeof WS_GUID);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)cat, 24 + sizeof WS_GUID - 1, digest);
    EVP_EncodeBlock((unsigned char *)out, digest, SHA_DIGEST_LENGTH); /* 28 characters and a NUL */
    return 0;
}

size_t ws_frame_header(uint8_t *out, int opcode, uint64_t len) {
    out[0] = (uint8_t)(0x80 | (opcode & 0x0F));
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xFFFF) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; i++) out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}

int ws_reader_feed(ws_reader *r, const void *data, size_t n) {
    if (r->consumed) { /* drop what the last event used */
        memmove(r->in, r->in + r->consumed, r->in_n - r->consumed);
        r->in_n -= r->consumed;
        r->consumed = 0;
    }
    if (n > SIZE_MAX / 2 - r->in_n) return -1;
    if (r->in_n + n > r->in_cap) {
        size_t cap = r->in_cap ? r->in_cap : 4096;
        while (cap < r->in_n + n) cap *= 2;
        uint8_t *p = realloc(r->in, cap);
        if (!p) return -1;
        r->in = p;
        r->in_cap = cap;
    }
    if (n) memcpy(r->in + r->in_n, data, n);
    r->in_n += n;
    return 0;
}

void ws_reader_free(ws_reader *r) {
    free(r->in);
    free(r->msg);
    memset(r, 0, sizeof *r);
}

static int fail(int *close_code, int code) {
    *close_code = code;
    return -1;
}

/* A close frame's payload (5.5.1): none, or a 2-byte code that 7.4 allows and UTF-8 text (the
 * text is not checked: it is never shown). */
static int close_code_of(const uint8_t *p, size_t len, int *code) {
    if (len == 0) {
        *code = 1005;
        return 0;
    }
    if (len == 1) return -1;
    const int c = p[0] << 8 | p[1];
    const int ok = (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1011) || (c >= 3000 && c <= 4999);
    if (!ok) return -1;
    *code = c;
    return 0;
}

int ws_reader_next(ws_reader *r, ws_event *ev, int *close_code) {
    *close_code = 0;
    for (;;) {
        if (r->consumed) {
            memmove(r->in, r->in + r->consumed, r->in_n - r->consumed);
            r->in_n -= r->consumed;
            r->consumed = 0;
        }
        const uint8_t *b = r->in;
        const size_t n = r->in_n;
        if (n < 2) return 0;
        const int fin = b[0] >> 7, rsv = (b[0] >> 4) & 7, op = b[0] & 0x0F, masked = b[1] >> 7;
        if (rsv) return fail(close_code, WS_CLOSE_PROTOCOL); /* 5.2: no extension was negotiated */
        if (!masked) return fail(close_code, WS_CLOSE_PROTOCOL); /* 5.1: clients mask every frame */
        const int control = op >= 0x8;
        if (op != WS_CONT && op != WS_TEXT && op != WS_BINARY && op != WS_CLOSE && op != WS_PING && op != WS_PONG)
            return fail(close_code, WS_CLOSE_PROTOCOL);
        uint64_t len = b[1] & 0x7F;
        size_t hdr = 2;
        if (len == 126) {
            if (n < 4) return 0;
            len = (uint64_t)b[2] << 8 | b[3];
            if (len < 126) return fail(close_code, WS_CLOSE_PROTOCOL); /* 5.2: minimal encoding */
            hdr = 4;
        } else if (len == 127) {
            if (n < 10) return 0;
            if (b[2] & 0x80) return fail(close_code, WS_CLOSE_PROTOCOL); /* 5.2: the top bit is 0 */
            len = 0;
            for (int i = 0; i < 8; i++) len = len << 8 | b[2 + i];
            if (len <= 0xFFFF) return fail(close_code, WS_CLOSE_PROTOCOL);
            hdr = 10;
        }
        if (control && (!fin || len > 125)) return fail(close_code, WS_CLOSE_PROTOCOL); /* 5.5 */
        if (!control && len > r->max_message) return fail(close_code, WS_CLOSE_TOO_BIG);
        if (n < hdr + 4) return 0;
        const uint8_t *mask = b + hdr;
        hdr += 4;
        if (n - hdr < len) return 0;
        uint8_t *p = r->in + hdr;
        for (uint64_t i = 0; i < len; i++) p[i] ^= mask[i & 3];
        r->consumed = hdr + (size_t)len;
        if (control) {
            ev->opcode = op;
            ev->data = p;
            ev->len = (size_t)len;
            ev->close_code = 0;
            if (op == WS_CLOSE && close_code_of(p, (size_t)len, &ev->close_code) != 0)
                return fail(close_code, WS_CLOSE_PROTOCOL);
            return 1;
        }
        /* 5.4: a data frame starts a message only when none is in progress; continuation only
         * inside one */
        if (op == WS_CONT && !r->msg_op) return fail(close_code, WS_CLOSE_PROTOCOL);
        if (op != WS_CONT && r->msg_op) return fail(close_code, WS_CLOSE_PROTOCOL);
        if (op != WS_CONT && fin) { /* a whole message in one frame: no copy */
            ev->opcode = op;
            ev->data = p;
            ev->len = (size_t)len;
            ev->close_code = 0;
            return 1;
        }
        if (op != WS_CONT) {
            r->msg_op = op;
            r->msg_n = 0;
        }
        if (len > r->max_message - r->msg_n) return fail(close_code, WS_CLOSE_TOO_BIG);
        if (r->msg_n + len > r->msg_cap) {
            size_t cap = r->msg_cap ? r->msg_cap : 4096;
            while (cap < r->msg_n + len) cap *= 2;
            uint8_t *m = realloc(r->msg, cap);
            if (!m) return fail(close_code, WS_CLOSE_ERROR);
            r->msg = m;
            r->msg_cap = cap;
        }
        if (len) memcpy(r->msg + r->msg_n, p, (size_t)len);
        r->msg_n += (size_t)len;
        if (fin) {
            ev->opcode = r->msg_op;
            ev->data = r->msg;
            ev->len = r->msg_n;
            ev->close_code = 0;
            r->msg_op = 0;
            return 1;
        }
        /* a middle fragment: go on with the next frame */
    }
}
