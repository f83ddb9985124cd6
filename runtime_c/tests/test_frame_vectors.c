/* Checks mc_frame.c against the shared vector file (frame_vectors.txt, also read by
 * tests/device/test_frame.py). Build on the host and run:
 *   cc -std=c99 -I../agent test_frame_vectors.c ../agent/mc_frame.c -o t && ./t frame_vectors.txt
 * Prints one line per failed vector and a summary; exits 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_frame.h"

#define MAX_BYTES 4096

static uint8_t out[MAX_BYTES * 2];
static size_t out_len;

static void sink(void *user, const uint8_t *p, size_t n)
{
    (void)user;
    if (out_len + n <= sizeof out)
        memcpy(out + out_len, p, n);
    out_len += n;
}

static size_t unhex(const char *s, uint8_t *dst, size_t cap)
{
    size_t n = 0;

    if (strcmp(s, "-") == 0)
        return 0;
    while (s[0] && s[1] && n < cap) {
        unsigned v;

        if (sscanf(s, "%2x", &v) != 1)
            break;
        dst[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static const char *status_name(mc_frame_status_t s)
{
    static const char *names[] = {"pending", "ok", "oversize", "malformed", "short", "crc"};
    return (unsigned)s < 6u ? names[s] : "?";
}

/* Feed `wire` (ending with its delimiter) to a fresh decoder; the status at the delimiter. */
static mc_frame_status_t decode(const uint8_t *wire, size_t n, uint8_t *buf, size_t cap, size_t *len)
{
    mc_frame_rx_t rx;
    mc_frame_status_t st = MC_FRAME_PENDING;
    size_t i;

    mc_frame_rx_init(&rx, buf, cap);
    for (i = 0; i < n; i++)
        st = mc_frame_rx_byte(&rx, wire[i]);
    *len = rx.len;
    return st;
}

int main(int argc, char **argv)
{
    static char line[4 * MAX_BYTES];
    static uint8_t a[MAX_BYTES], b[MAX_BYTES], frame[MAX_BYTES], buf[MAX_BYTES];
    size_t capacity = 0;
    int checked = 0, failed = 0, lineno = 0;
    FILE *f;

    if (argc != 2 || (f = fopen(argv[1], "r")) == NULL) {
        fprintf(stderr, "usage: %s frame_vectors.txt\n", argv[0]);
        return 2;
    }
    while (fgets(line, sizeof line, f)) {
        char kind[16], f1[16], f2[16];
        static char s3[4 * MAX_BYTES], s4[4 * MAX_BYTES];

        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "capacity %zu", &capacity) == 1)
            continue;
        if (sscanf(line, "%15s", kind) != 1)
            continue;
        checked++;
        if (strcmp(kind, "cobs") == 0 && sscanf(line, "cobs %s %s", s3, s4) == 2) {
            size_t na = unhex(s3, a, MAX_BYTES), nb = unhex(s4, b, MAX_BYTES);

            out_len = 0;
            mc_frame_send(a, na, sink, NULL); /* leading 0, COBS, trailing 0 */
            if (out_len != nb + 2 || memcmp(out + 1, b, nb) != 0) {
                printf("line %d: COBS encoding differs\n", lineno);
                failed++;
            }
        } else if (strcmp(kind, "ok") == 0 && sscanf(line, "ok %15s %15s %s %s", f1, f2, s3, s4) == 4) {
            unsigned type = (unsigned)strtoul(f1, NULL, 16), seq = (unsigned)strtoul(f2, NULL, 10);
            size_t np = unhex(s3, a, MAX_BYTES), nw = unhex(s4, b, MAX_BYTES), n, len;
            mc_frame_status_t st;

            memcpy(frame + MC_FRAME_HEADER_BYTES, a, np);
            n = mc_frame_seal(frame, (uint8_t)type, (uint16_t)seq, np);
            out_len = 0;
            mc_frame_send(frame, n, sink, NULL);
            if (out_len != nw + 1 || memcmp(out + 1, b, nw) != 0) {
                printf("line %d: encoding differs\n", lineno);
                failed++;
            }
            st = decode(b, nw, buf, capacity, &len);
            if (st != MC_FRAME_OK || len != n || memcmp(buf, frame, n) != 0) {
                printf("line %d: decoded %s, %zu bytes\n", lineno, status_name(st), len);
                failed++;
            }
        } else if (strcmp(kind, "bad") == 0 && sscanf(line, "bad %15s %s", f1, s4) == 2) {
            size_t nw = unhex(s4, b, MAX_BYTES), len;
            mc_frame_status_t st = decode(b, nw, buf, capacity, &len);

            if (strcmp(status_name(st), f1) != 0) {
                printf("line %d: expected %s, decoded %s\n", lineno, f1, status_name(st));
                failed++;
            }
        } else {
            printf("line %d: cannot parse\n", lineno);
            failed++;
        }
    }
    fclose(f);
    printf("frame vectors: %d checked, %d failed\n", checked, failed);
    return failed ? 1 : 0;
}
