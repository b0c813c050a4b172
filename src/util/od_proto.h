/* od_proto.h: the on-demand control protocol, shared by the endpoint in the traced process
 * (src/ondemand) and the CLI (strobe trigger, ps, memory-profile).
 *
 * One request per connection: one line of text, at most STROBE__OD_MAX_LINE bytes with its
 * newline, a verb then `key=value` words separated by single spaces. Values are percent-encoded
 * (every byte outside printable ASCII, and ' ', '%', '=' become %XX), so a path with spaces or
 * newlines travels as one word. Replies are lines of the same shape whose first word is
 * "ok", "error", "done" or "failed":
 *
 *   status                                  -> ok pid= cmd= state= steps= proto=1
 *   trigger output= (duration_ms= | iterations= [roundup=]) [flags=a,b] [activities=cpu,cuda]
 *           [timeout_ms=]                   -> ok ... then, when the trace is written,
 *                                              done path= events= | failed msg=
 *   memory-profile output= duration_ms=     -> ok ... then done path= | failed msg=
 *   dump output=                            -> done path= | failed msg= (flight recorder)
 *   any malformed request                   -> error code= msg=
 *
 * The parser is written for hostile input: every field is bounded, and a request it cannot read
 * gets an error, never a crash or a partial action. */
#ifndef STROBE_UTIL_OD_PROTO_H
#define STROBE_UTIL_OD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define STROBE__OD_MAX_LINE 4096
#define STROBE__OD_MAX_PATH 4096
#define STROBE__OD_PROTO 1

typedef enum strobe__od_verb {
    STROBE__OD_STATUS = 1,
    STROBE__OD_TRIGGER = 2,
    STROBE__OD_MEMORY = 3,
    STROBE__OD_DUMP = 4
} strobe__od_verb;

/* trigger flags= words, as bits. */
enum {
    STROBE__OD_RECORD_SHAPES = 1u << 0,
    STROBE__OD_PROFILE_MEMORY = 1u << 1,
    STROBE__OD_WITH_STACK = 1u << 2,
    STROBE__OD_WITH_FLOPS = 1u << 3,
    STROBE__OD_WITH_MODULES = 1u << 4
};

/* Limits on numbers in a request. */
#define STROBE__OD_MAX_DURATION_MS (24LL * 3600 * 1000)
#define STROBE__OD_MAX_ITERATIONS 1000000LL
#define STROBE__OD_MAX_TIMEOUT_MS (7LL * 24 * 3600 * 1000)

typedef struct strobe__od_request {
    strobe__od_verb verb;
    int64_t duration_ms; /* 0: not given */
    int64_t iterations;  /* 0: not given */
    int64_t roundup;     /* default 1 */
    int64_t timeout_ms;  /* 0: not given */
    uint32_t flags;      /* STROBE__OD_* */
    uint32_t activities; /* strobe_activity bits; 0: not given */
    char output[STROBE__OD_MAX_PATH];
} strobe__od_request;

/* Writes a printf-style message into err[0..cap) (nothing where err is NULL or cap 0): the
 * on-demand code's way to say why it refused something. */
void strobe__od_errf(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses one request line (without or with its trailing newline; `len` bytes, not necessarily
 * NUL-terminated). @return 0, or STROBE_EFORMAT with a message in err (always NUL-terminated). The
 * verbs' required and exclusive keys are checked here. */
int strobe__od_parse_request(const char *line, size_t len, strobe__od_request *req, char *err,
                             size_t errcap);

/* Writes one request line (with its newline) into buf. @return its length, or STROBE_ERANGE when it
 * does not fit or a field is out of range. */
int strobe__od_format_request(const strobe__od_request *req, char *buf, size_t cap);

/* Percent-encodes src into dst. @return the encoded length, or STROBE_ERANGE when it does
 * not fit. */
int strobe__od_encode(const char *src, size_t len, char *dst, size_t cap);

/* Finds `key=` in a reply or request line and decodes its value into out (NUL-terminated).
 * @return the decoded length; STROBE_EINVAL when the key is absent, STROBE_EFORMAT when the value
 * is malformed, STROBE_ERANGE when it is too long. */
int strobe__od_get(const char *line, size_t len, const char *key, char *out, size_t cap);

/* The first word of a line ("ok", "error", ...), copied into out. @return 0, STROBE_EFORMAT (none)
 * or STROBE_ERANGE (too long). */
int strobe__od_word0(const char *line, size_t len, char *out, size_t cap);

/* Parses a decimal in [1, max] (digits only, as requests and the CLI's options give them).
 * @return 0, STROBE_EINVAL (empty, not a number) or STROBE_ERANGE (0, or above max). */
int strobe__od_parse_num(const char *s, int64_t max, int64_t *out);

/* The folder holding the endpoints' sockets: $STROBE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/strobe
 * when that folder belongs to this user, else /tmp/strobe-UID. @return 0, or STROBE_ERANGE (too
 * long). */
int strobe__od_socket_dir(char *buf, size_t cap);

/* Creates the socket folder if missing (mode 0700) and checks it is safe to use: a real folder
 * (not a link) owned by this user, writable by nobody else. @return 0, or with a message
 * STROBE_ESYS (a system call failed) or STROBE_EINVAL (the folder is not safe). */
int strobe__od_prepare_dir(const char *dir, int create, char *err, size_t errcap);

#endif
