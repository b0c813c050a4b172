/* cmd_open.c: `strobe open`: serves one trace on 127.0.0.1 for the Perfetto UI to fetch, as
 * Perfetto's tools/open_trace_in_ui does, prints the URL that makes the UI fetch it (and opens
 * it where there is a display), and stops once the UI has fetched the whole file, or on Ctrl-C.
 *
 * What the UI needs (google/perfetto: tools/open_trace_in_ui, ui/src/core/trace_stream.ts,
 * ui/src/frontend/index.ts): the page at https://ui.perfetto.dev/#!/?url=URL fetch()es URL, a
 * cross-origin GET, so the answer must carry Access-Control-Allow-Origin for the UI's origin;
 * it reads Content-Length for its progress bar. Its Content-Security-Policy lets it fetch from
 * no local address but http://127.0.0.1:9001, hence the default port. On load the UI also probes
 * 127.0.0.1:9001/status (POST) for a trace_processor_shell: that gets a 404, as from
 * open_trace_in_ui, and the UI then goes on with its own engine. A browser that checks private
 * network access first sends a preflight (OPTIONS with Access-Control-Request-Private-Network),
 * which is answered too.
 *
 * One thread and poll(): up to OPEN_MAX_CONNS connections at a time, each with a deadline (its
 * headers within OPEN_HEADER_MS, then progress at least every OPEN_IDLE_MS), so that a slow or
 * silent client can neither hang the command nor keep the UI out for long. Every answer closes
 * its connection (Connection: close), after a short wait for the client to close first, so that
 * what it sent and we did not read cannot reset the connection under the answer.
 *
 * Contents: usage and options, the trace file, the listening socket, HTTP requests and answers,
 * connections, the browser, the command. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"

/* ---- usage and options --------------------------------------------------------------------- */

const char cmd_open_usage[] =
    "NAME\n"
    "    strobe open - serve a trace to the Perfetto UI (ui.perfetto.dev) and open it there\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe open [--port N] [--no-browser] [--origin URL] TRACE\n"
    "\n"
    "DESCRIPTION\n"
    "    Serves TRACE (.json, .json.gz, .pftrace, .pftrace.gz or .perfetto-trace) on\n"
    "    http://127.0.0.1:PORT/NAME, as Perfetto's tools/open_trace_in_ui does, and prints the\n"
    "    URL that opens it in the Perfetto UI:\n"
    "        https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/NAME&referrer=strobe\n"
    "    The UI fetches the trace from this command and reads it in the browser: it is not\n"
    "    uploaded anywhere. NAME is the file's name, with characters other than letters, digits,\n"
    "    '.', '_' and '-' made '_'. Where there is a display (DISPLAY or WAYLAND_DISPLAY is set)\n"
    "    the URL is also opened with $BROWSER (a command and its arguments, split at spaces;\n"
    "    the URL is added last) or xdg-open, without waiting for it. The command stops once the\n"
    "    UI has fetched the whole file, or on Ctrl-C.\n"
    "\n"
    "    Only 127.0.0.1 is listened on, never another interface. From a remote machine, forward\n"
    "    the port first, then open the URL in a browser on your own machine:\n"
    "        ssh -L 9001:127.0.0.1:9001 HOST\n"
    "\n"
    "    The UI only connects to port 9001 (its Content-Security-Policy); with another --port,\n"
    "    forward your machine's 9001 to it (ssh -L 9001:127.0.0.1:PORT HOST) and open the URL\n"
    "    with 9001 in it. Port 9001 is also trace_processor_shell --httpd's: stop that first.\n"
    "    Answers carry Access-Control-Allow-Origin for the UI's origin; a request from another\n"
    "    origin (its Origin header) is refused (403), other paths get 404, other methods 405.\n"
    "\n"
    "OPTIONS\n"
    "    --port N           the port on 127.0.0.1 (default 9001; 0: any free port, printed)\n"
    "    --no-browser       print the URL only, do not open a browser\n"
    "    --origin URL       the UI's origin (default https://ui.perfetto.dev), for a UI served\n"
    "                       elsewhere (a self-hosted one, or http://127.0.0.1:10000)\n"
    "    -h, --help         show this text\n"
    "    -V, --version      show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0  the UI fetched the trace, or Ctrl-C (SIGINT) or SIGTERM stopped the command\n"
    "    2  usage error, a file that cannot be served, or a port that cannot be listened on\n";

enum {
    OPT_PORT = CLI_LONG_ONLY + 1,
    OPT_NO_BROWSER,
    OPT_ORIGIN,
};

const struct option cmd_open_options[] = {
    {"port", required_argument, NULL, OPT_PORT},
    {"no-browser", no_argument, NULL, OPT_NO_BROWSER},
    {"origin", required_argument, NULL, OPT_ORIGIN},
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* The port open_trace_in_ui uses, and the only one the UI's Content-Security-Policy lets it
 * fetch from (ui/src/frontend/index.ts, setupContentSecurityPolicy). */
#define OPEN_DEFAULT_PORT 9001
#define OPEN_DEFAULT_ORIGIN "https://ui.perfetto.dev"
/* What open_trace_in_ui passes as its referrer parameter is its own name; the UI logs it. */
#define OPEN_REFERRER "strobe"

#define OPEN_MAX_CONNS 16
#define OPEN_REQ_MAX 8192    /* bytes of request line and headers */
#define OPEN_HEADER_MS 10000 /* from accept() to the end of the headers */
#define OPEN_IDLE_MS 30000   /* while answering: the longest time without progress */
#define OPEN_LINGER_MS 2000  /* after the answer: the wait for the client to close */
#define OPEN_NAME_MAX 100    /* bytes of NAME in the URL */
#define OPEN_ORIGIN_MAX 200

/* ---- the trace file ------------------------------------------------------------------------ */

static const char *const open_suffixes[] = {".json", ".json.gz", ".pftrace", ".pftrace.gz",
                                            ".perfetto-trace"};

/* The kinds of content the UI's trace processor reads (it tells them by content, as strobe
 * does): gzip, JSON (an object or an array, after white space and a UTF-8 BOM), or Perfetto's
 * protobuf, whose first byte is the tag of Trace.packet (field 1, length-delimited: 0x0a).
 * @return the Content-Type to serve it with, or NULL when the start is none of them. */
static const char *sniff(const unsigned char *b, size_t n) {
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return "application/gzip";
    size_t i = 0;
    if (n >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf) i = 3;
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
        i++;
    if (i < n && (b[i] == '{' || b[i] == '[')) return "application/json";
    if (n >= 1 && b[0] == 0x0a) return "application/octet-stream";
    return NULL;
}

/* Opens the trace to serve. @return its descriptor, with *size and *type set, or -1 after the
 * one-line error. A FIFO or a device is refused before anything is read from it (O_NONBLOCK:
 * opening a FIFO with no writer would block). */
static int open_trace(const char *cmd, const char *path, off_t *size, const char **type) {
    int known = 0;
    for (size_t i = 0; i < sizeof open_suffixes / sizeof open_suffixes[0]; i++)
        known |= cli_ends_with(path, open_suffixes[i]);
    if (!known) {
        fprintf(stderr,
                "strobe %s: %s: not a trace's name (.json, .json.gz, .pftrace, .pftrace.gz or "
                ".perfetto-trace)\n",
                cmd, cli_esc(path));
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "strobe %s: %s: %s\n", cmd, cli_esc(path), strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    unsigned char head[64];
    ssize_t got = 0;
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = strerror(EISDIR);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file (a pipe or a device cannot be served)";
    else if (st.st_size == 0)
        why = "an empty file, nothing to serve";
    else if ((got = pread(fd, head, sizeof head, 0)) < 0)
        why = strerror(errno);
    else if ((*type = sniff(head, (size_t)got)) == NULL)
        why = "not a trace (neither JSON, gzip nor Perfetto protobuf)";
    if (why) {
        fprintf(stderr, "strobe %s: %s: %s\n", cmd, cli_esc(path), why);
        close(fd);
        return -1;
    }
    *size = st.st_size;
    return fd;
}

/* NAME in the URL: the file's base name, each byte other than [A-Za-z0-9._-] made '_' (so that
 * the URL needs no escaping, inside the UI's own URL either), and of a long name its last
 * OPEN_NAME_MAX bytes (the suffix, which tells the UI the format, kept). */
static void url_name(const char *path, char *out, size_t cap) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > OPEN_NAME_MAX) base += len - OPEN_NAME_MAX;
    size_t k = 0;
    for (; *base && k + 1 < cap; base++) {
        char c = *base;
        int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '_' || c == '-';
        out[k++] = safe ? c : '_';
    }
    out[k] = '\0';
}

/* ---- the listening socket ------------------------------------------------------------------ */

/* Listens on 127.0.0.1:port (0: any free port; *bound says which). SO_REUSEADDR, as
 * open_trace_in_ui sets it, lets a new run take the port while an old run's connections are
 * in TIME_WAIT; on Linux it never lets two listen on one port. @return the socket, or -1 after
 * the one-line error that gives the system's reason. */
static int listen_on(const char *cmd, int port, int *bound) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        fprintf(stderr, "strobe %s: cannot make a socket: %s\n", cmd, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0) {
        int e = errno;
        fprintf(stderr,
                "strobe %s: cannot listen on 127.0.0.1:%d: %s (%s; choose another port with "
                "--port N)\n",
                cmd, port, strerror(e),
                e == EADDRINUSE ? "another strobe open, or trace_processor_shell --httpd, may "
                                  "be serving there"
                : e == EACCES   ? "ports below 1024 need privileges"
                                : "the system refused it");
        close(fd);
        return -1;
    }
    socklen_t alen = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        fprintf(stderr, "strobe %s: getsockname: %s\n", cmd, strerror(errno));
        close(fd);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

/* ---- HTTP requests and answers ------------------------------------------------------------- */

/* What the answers need to know, the same for every connection. */
typedef struct open_site {
    int file_fd;
    off_t size;
    const char *type;   /* Content-Type */
    char path[128];     /* "/NAME" */
    const char *origin; /* the UI's origin */
} open_site;

/* The value of header `name` in the request's header lines (between the request line and the
 * blank line), white space around it trimmed, copied to out (cut to cap - 1 bytes). @return 1
 * when present. */
static int header_value(const char *req, const char *name, char *out, size_t cap) {
    size_t nlen = strlen(name);
    const char *line = strchr(req, '\n');
    while (line && line[1] != '\0') {
        line++;
        const char *end = strchr(line, '\n');
        /* The blank line ends the headers: what follows is a body (or the next request). */
        if (end == NULL || end == line || (end == line + 1 && line[0] == '\r')) break;
        if ((size_t)(end - line) > nlen && strncasecmp(line, name, nlen) == 0 &&
            line[nlen] == ':') {
            const char *v = line + nlen + 1;
            const char *ve = end;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            size_t len = (size_t)(ve - v);
            if (len >= cap) len = cap - 1;
            memcpy(out, v, len);
            out[len] = '\0';
            return 1;
        }
        line = end;
    }
    return 0;
}

/* Whether s holds only what a list of header names may (a preflight's
 * Access-Control-Request-Headers is echoed back only then, so that no byte of it can end the
 * header line). */
static int token_list(const char *s) {
    for (; *s; s++) {
        char c = *s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == ',' || c == ' ';
        if (!ok) return 0;
    }
    return 1;
}

/* What to send for one request: the status, the head (status line and headers, in head[]),
 * and how many bytes of the file follow it (a GET of the trace: all of them). */
typedef struct open_answer {
    int status;
    int whole_file; /* a GET of the trace: sending it all is what ends the command */
    size_t head_len;
    off_t body_len;
} open_answer;

#define OPEN_HEAD_MAX 1024

static const char *reason(int status) {
    switch (status) {
    case 200:
        return "OK";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    default:
        return "HTTP Version Not Supported";
    }
}

/* Writes an error answer with a short text body into head (the body is short enough to go
 * with the head); to a HEAD request (head_req), the same without the body. */
static void error_answer(const open_site *s, int status, int cors, int head_req, char *head,
                         open_answer *a) {
    char body[160];
    int blen = snprintf(body, sizeof body, "%d %s\n", status, reason(status));
    char cors_line[OPEN_ORIGIN_MAX + 64] = "";
    if (cors)
        snprintf(cors_line, sizeof cors_line, "Access-Control-Allow-Origin: %s\r\n", s->origin);
    int n =
        snprintf(head, OPEN_HEAD_MAX,
                 "HTTP/1.1 %d %s\r\n"
                 "%s"
                 "%s"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: %d\r\n"
                 "Cache-Control: no-cache\r\n"
                 "Connection: close\r\n"
                 "\r\n"
                 "%s",
                 status, reason(status), cors_line,
                 status == 405 ? "Allow: GET, HEAD, OPTIONS\r\n" : "", blen, head_req ? "" : body);
    a->status = status;
    a->whole_file = 0;
    a->head_len = (size_t)n;
    a->body_len = 0;
}

/* The answer to the request in req (NUL-terminated, through its blank line). */
static void answer(const open_site *s, const char *req, char *head, open_answer *a) {
    /* The request line: METHOD SP TARGET SP HTTP/1.x */
    char method[16], target[OPEN_REQ_MAX], version[16];
    const char *eol = strchr(req, '\n');
    size_t line_len = eol ? (size_t)(eol - req) : strlen(req);
    if (line_len && req[line_len - 1] == '\r') line_len--;
    const char *sp1 = memchr(req, ' ', line_len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', line_len - (size_t)(sp1 + 1 - req)) : NULL;
    if (sp1 == NULL || sp2 == NULL || (size_t)(sp1 - req) >= sizeof method || sp1 == req ||
        sp2 == sp1 + 1 || (size_t)(req + line_len - (sp2 + 1)) >= sizeof version) {
        error_answer(s, 400, 1, 0, head, a);
        return;
    }
    memcpy(method, req, (size_t)(sp1 - req));
    method[sp1 - req] = '\0';
    memcpy(target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
    target[sp2 - sp1 - 1] = '\0';
    memcpy(version, sp2 + 1, (size_t)(req + line_len - (sp2 + 1)));
    version[req + line_len - (sp2 + 1)] = '\0';
    if (strncmp(version, "HTTP/1.", 7) != 0 || version[7] < '0' || version[7] > '9' ||
        version[8] != '\0') {
        error_answer(s, strncmp(version, "HTTP/", 5) == 0 ? 505 : 400, 1, 0, head, a);
        return;
    }
    int get = strcmp(method, "GET") == 0, head_only = strcmp(method, "HEAD") == 0;
    /* A browser sends Origin with every cross-origin fetch; a page of another origin gets
     * nothing (it could not read the answer anyway, but its fetch would end the command).
     * Clients that are no browser (curl) send none. */
    char origin[OPEN_ORIGIN_MAX + 2];
    if (header_value(req, "Origin", origin, sizeof origin) && strcmp(origin, s->origin) != 0) {
        error_answer(s, 403, 0, head_only, head, a);
        return;
    }
    char *query = strchr(target, '?');
    if (query) *query = '\0';
    if (strcmp(target, s->path) != 0) {
        error_answer(s, 404, 1, head_only, head, a);
        return;
    }
    if (strcmp(method, "OPTIONS") == 0) {
        /* A CORS preflight: the methods and headers the fetch may use, and private network
         * access (a public page reaching 127.0.0.1) when the browser asks for it. */
        char want[256] = "", pna[16] = "";
        int has_headers = header_value(req, "Access-Control-Request-Headers", want, sizeof want);
        int has_pna = header_value(req, "Access-Control-Request-Private-Network", pna, sizeof pna);
        char allow_headers[300] = "";
        if (has_headers && want[0] && token_list(want))
            snprintf(allow_headers, sizeof allow_headers, "Access-Control-Allow-Headers: %s\r\n",
                     want);
        int n = snprintf(head, OPEN_HEAD_MAX,
                         "HTTP/1.1 204 No Content\r\n"
                         "Access-Control-Allow-Origin: %s\r\n"
                         "Access-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
                         "%s"
                         "%s"
                         "Access-Control-Max-Age: 600\r\n"
                         "Cache-Control: no-cache\r\n"
                         "Content-Length: 0\r\n"
                         "Connection: close\r\n"
                         "\r\n",
                         s->origin, allow_headers,
                         has_pna && strcasecmp(pna, "true") == 0
                             ? "Access-Control-Allow-Private-Network: true\r\n"
                             : "");
        a->status = 204;
        a->whole_file = 0;
        a->head_len = (size_t)n;
        a->body_len = 0;
        return;
    }
    if (!get && !head_only) {
        error_answer(s, 405, 1, 0, head, a);
        return;
    }
    /* The file as it is, gzip included: no Content-Encoding, so that the browser hands the UI
     * the bytes of the file, whose trace processor unpacks them. A Range header is ignored (a
     * 200 with the whole file is a valid answer to it); the UI sends none. */
    int n = snprintf(head, OPEN_HEAD_MAX,
                     "HTTP/1.1 200 OK\r\n"
                     "Access-Control-Allow-Origin: %s\r\n"
                     "Access-Control-Expose-Headers: Content-Length\r\n"
                     "Content-Type: %s\r\n"
                     "Content-Length: %lld\r\n"
                     "Cache-Control: no-cache\r\n"
                     "Connection: close\r\n"
                     "\r\n",
                     s->origin, s->type, (long long)s->size);
    a->status = 200;
    a->whole_file = get;
    a->head_len = (size_t)n;
    a->body_len = get ? s->size : 0;
}

/* ---- connections --------------------------------------------------------------------------- */

enum { C_FREE, C_READ, C_WRITE, C_LINGER };

typedef struct open_conn {
    int fd;
    int state;
    int64_t deadline_ms;
    char req[OPEN_REQ_MAX + 1];
    size_t req_len;
    char head[OPEN_HEAD_MAX];
    size_t head_len, head_sent;
    off_t body_off, body_len;
    int whole_file;
} open_conn;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_close(open_conn *c) {
    close(c->fd);
    c->fd = -1;
    c->state = C_FREE;
}

/* The answer is out: stop sending and wait (briefly) for the client to close, reading and
 * dropping what else it sends. */
static void conn_linger(open_conn *c) {
    shutdown(c->fd, SHUT_WR);
    c->state = C_LINGER;
    c->deadline_ms = now_ms() + OPEN_LINGER_MS;
}

/* The end of the headers in buf[0..len): a blank line, "\r\n\r\n" or a bare "\n\n". */
static int headers_end(const char *buf, size_t len) {
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] != '\n') continue;
        if (buf[i + 1] == '\n') return 1;
        if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n') return 1;
    }
    return 0;
}

/* Reads what the client sent; once the headers are in, makes the answer. */
static void conn_read(const open_site *s, open_conn *c) {
    if (c->state == C_LINGER) {
        char drop[4096];
        ssize_t n = recv(c->fd, drop, sizeof drop, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) conn_close(c);
        return;
    }
    size_t room = OPEN_REQ_MAX - c->req_len;
    ssize_t n = recv(c->fd, c->req + c->req_len, room, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        conn_close(c); /* gone before its request was whole */
        return;
    }
    /* Where the headers end, a NUL would cut them short: seen as a bad request. */
    c->req_len += (size_t)n;
    c->req[c->req_len] = '\0';
    open_answer a;
    if (memchr(c->req, '\0', c->req_len) != NULL) {
        error_answer(s, 400, 1, 0, c->head, &a);
    } else if (headers_end(c->req, c->req_len)) {
        answer(s, c->req, c->head, &a);
    } else if (c->req_len == OPEN_REQ_MAX) {
        error_answer(s, 431, 1, 0, c->head, &a);
    } else {
        return;
    }
    c->head_len = a.head_len;
    c->head_sent = 0;
    c->body_off = 0;
    c->body_len = a.body_len;
    c->whole_file = a.whole_file;
    c->state = C_WRITE;
    c->deadline_ms = now_ms() + OPEN_IDLE_MS;
}

/* Sends what the socket takes of the head, then of the file. @return 1 when this was the
 * trace's whole file and the last of it has just gone out, else 0. */
static int conn_write(const open_site *s, open_conn *c, const char *cmd) {
    int progress = 0;
    while (c->head_sent < c->head_len) {
        ssize_t n = send(c->fd, c->head + c->head_sent, c->head_len - c->head_sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) goto out;
            conn_close(c);
            return 0;
        }
        c->head_sent += (size_t)n;
        progress = 1;
    }
    while (c->body_off < c->body_len) {
        off_t off = c->body_off;
        size_t want = (size_t)(c->body_len - off < (off_t)(1 << 20) ? c->body_len - off : 1 << 20);
        ssize_t n = sendfile(c->fd, s->file_fd, &off, want);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) goto out;
            conn_close(c); /* the client went away (EPIPE, ECONNRESET) */
            return 0;
        }
        if (n == 0) {
            /* The file is shorter than when it was opened: the client gets less than
             * Content-Length said, and sees the fetch fail. */
            fprintf(stderr,
                    "strobe %s: the trace got shorter while it was served (%lld of %lld "
                    "bytes); the fetch fails\n",
                    cmd, (long long)c->body_off, (long long)c->body_len);
            conn_close(c);
            return 0;
        }
        c->body_off = off;
        progress = 1;
    }
    conn_linger(c);
    return c->whole_file;
out:
    if (progress) c->deadline_ms = now_ms() + OPEN_IDLE_MS;
    return 0;
}

/* ---- the browser --------------------------------------------------------------------------- */

/* Starts $BROWSER (its first entry, when it is a ':'-separated list) or xdg-open on url, in a
 * process of its own (a new session, so that Ctrl-C here does not reach it; its output to
 * /dev/null; reparented to init, so that it is never waited for). Waits only until the command
 * has started (exec), at most a second. @return 0, or an errno value with *what naming the
 * command. */
static int open_browser(const char *url, const sigset_t *mask, char *what, size_t cap) {
    const char *env = getenv("BROWSER");
    char browser[512] = "";
    if (env && env[0]) {
        size_t len = strcspn(env, ":");
        if (len >= sizeof browser) len = sizeof browser - 1;
        memcpy(browser, env, len);
        browser[len] = '\0';
    }
    snprintf(what, cap, "%s", browser[0] ? browser : "xdg-open");
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return e;
    }
    if (pid == 0) {
        setsid();
        pid_t grand = fork();
        if (grand != 0) _exit(grand < 0 ? 1 : 0);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
            dup2(nul, 2);
        }
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, mask, NULL);
        if (browser[0]) {
            /* A command with arguments of its own ("firefox --new-tab"), split at white
             * space, the URL last. No shell: the URL is never read as text of a command, and
             * a command that is not found is reported here. */
            char *words[17];
            int nw = 0;
            char *save = NULL;
            for (char *w = strtok_r(browser, " \t", &save); w && nw < 16;
                 w = strtok_r(NULL, " \t", &save))
                words[nw++] = w;
            words[nw++] = (char *)url;
            words[nw] = NULL;
            execvp(words[0], words);
        } else {
            execlp("xdg-open", "xdg-open", url, (char *)NULL);
        }
        int e = errno;
        if (write(p[1], &e, sizeof e) < 0) _exit(127);
        _exit(127);
    }
    close(p[1]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int e = 0;
    struct pollfd pf = {p[0], POLLIN, 0};
    if (poll(&pf, 1, 1000) > 0 && read(p[0], &e, sizeof e) != (ssize_t)sizeof e) e = 0;
    close(p[0]);
    return e;
}

/* ---- the command --------------------------------------------------------------------------- */

static volatile sig_atomic_t open_signal;

static void on_signal(int sig) {
    open_signal = sig;
}

/* Whether origin is a URL's origin that can go into a header line: http:// or https://, then
 * a host (and port) of printable ASCII without '/', nothing after it. */
static int valid_origin(const char *origin) {
    const char *rest = strncmp(origin, "https://", 8) == 0  ? origin + 8
                       : strncmp(origin, "http://", 7) == 0 ? origin + 7
                                                            : NULL;
    if (rest == NULL || rest[0] == '\0' || strlen(origin) > OPEN_ORIGIN_MAX) return 0;
    for (const char *p = rest; *p; p++)
        if (*p <= ' ' || *p > '~' || *p == '/' || *p == '?' || *p == '#' || *p == '"' || *p == '\\')
            return 0;
    return 1;
}

/* Serves until the whole file has gone out to a GET, or a signal. @return CLI_OK, or
 * CLI_BAD_INPUT when poll itself fails. */
static int serve(const char *cmd, const open_site *site, int lfd, open_conn *conns,
                 const sigset_t *wait_mask, int *fetched) {
    struct pollfd pfd[OPEN_MAX_CONNS + 1];
    int done_conn = -1; /* the connection whose GET sent the whole file */
    for (;;) {
        if (open_signal) return CLI_OK;
        if (done_conn >= 0 && conns[done_conn].state == C_FREE) {
            *fetched = 1;
            return CLI_OK;
        }
        int64_t now = now_ms(), next = -1;
        size_t n = 0, free_slots = 0;
        int map[OPEN_MAX_CONNS + 1];
        for (int i = 0; i < OPEN_MAX_CONNS; i++) {
            open_conn *c = &conns[i];
            if (c->state == C_FREE) {
                free_slots++;
                continue;
            }
            if (now >= c->deadline_ms) {
                conn_close(c); /* too slow: its headers, its reading, or its close */
                free_slots++;
                continue;
            }
            if (next < 0 || c->deadline_ms < next) next = c->deadline_ms;
            pfd[n].fd = c->fd;
            pfd[n].events = c->state == C_WRITE ? POLLOUT : POLLIN;
            pfd[n].revents = 0;
            map[n++] = i;
        }
        if (done_conn >= 0 && conns[done_conn].state == C_FREE) continue;
        /* With every slot taken, new connections wait in the backlog. Once the file has gone
         * out, none is taken: the command only waits for that client to close (and a new one
         * could take its slot, which the check above looks at). */
        if (free_slots > 0 && done_conn < 0) {
            pfd[n].fd = lfd;
            pfd[n].events = POLLIN;
            pfd[n].revents = 0;
            map[n++] = -1;
        }
        struct timespec ts, *tsp = NULL;
        if (next >= 0) {
            int64_t wait = next > now ? next - now : 0;
            ts.tv_sec = (time_t)(wait / 1000);
            ts.tv_nsec = (long)(wait % 1000) * 1000000L;
            tsp = &ts;
        }
        int r = ppoll(pfd, n, tsp, wait_mask);
        if (r < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "strobe %s: poll: %s\n", cmd, strerror(errno));
            return CLI_BAD_INPUT;
        }
        for (size_t k = 0; k < n; k++) {
            if (pfd[k].revents == 0) continue;
            if (map[k] < 0) {
                for (int i = 0; i < OPEN_MAX_CONNS && done_conn < 0; i++) {
                    if (conns[i].state != C_FREE) continue;
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break; /* EAGAIN, or a connection reset before accept */
                    conns[i].fd = fd;
                    conns[i].state = C_READ;
                    conns[i].req_len = 0;
                    conns[i].deadline_ms = now_ms() + OPEN_HEADER_MS;
                }
                continue;
            }
            open_conn *c = &conns[map[k]];
            if (c->state == C_WRITE) {
                if (conn_write(site, c, cmd)) done_conn = map[k];
            } else if (c->state != C_FREE) {
                conn_read(site, c);
                /* An answer made from what was read goes out at once, most often whole. */
                if (c->state == C_WRITE && conn_write(site, c, cmd)) done_conn = map[k];
            }
        }
    }
}

int cmd_open(int argc, char **argv) {
    const char *cmd = "open";
    unsigned long long port = OPEN_DEFAULT_PORT;
    int browser = 1;
    const char *origin = OPEN_DEFAULT_ORIGIN;
    int first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":hV", cmd_open_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_open_usage);
        case 'V':
            return cli_version();
        case OPT_PORT:
            if (cli_parse_count(cmd, "--port", optarg, 65535, &port) != 0) return CLI_BAD_INPUT;
            break;
        case OPT_NO_BROWSER:
            browser = 0;
            break;
        case OPT_ORIGIN:
            if (!valid_origin(optarg))
                return cli_usage_error(
                    cmd, "--origin takes http://HOST[:PORT] or https://HOST[:PORT]", optarg);
            origin = optarg;
            break;
        default:
            return cli_option_error(cmd, c, argv, cmd_open_options);
        }
    }
    const char *path;
    if (cli_trace_operand(cmd, argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    if (strcmp(path, "-") == 0)
        return cli_usage_error(cmd, "standard input cannot be served; give a file", NULL);

    open_site site;
    memset(&site, 0, sizeof site);
    site.origin = origin;
    site.file_fd = open_trace(cmd, path, &site.size, &site.type);
    if (site.file_fd < 0) return CLI_BAD_INPUT;
    char name[OPEN_NAME_MAX + 1];
    url_name(path, name, sizeof name);
    snprintf(site.path, sizeof site.path, "/%s", name);

    int bound = 0;
    int lfd = listen_on(cmd, (int)port, &bound);
    if (lfd < 0) {
        close(site.file_fd);
        return CLI_BAD_INPUT;
    }
    open_conn *conns = calloc(OPEN_MAX_CONNS, sizeof *conns);
    if (conns == NULL) {
        fprintf(stderr, "strobe %s: out of memory\n", cmd);
        close(lfd);
        close(site.file_fd);
        return CLI_BAD_INPUT;
    }
    for (int i = 0; i < OPEN_MAX_CONNS; i++)
        conns[i].fd = -1;

    /* SIGINT and SIGTERM are blocked but in ppoll(), so that one that comes between the check
     * of open_signal and the wait still ends the wait. SIGPIPE is ignored: a client that goes
     * away mid-answer is an error of that send (sendfile has no MSG_NOSIGNAL). */
    sigset_t block, old_mask, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old_mask);
    wait_mask = old_mask;
    sigdelset(&wait_mask, SIGINT);
    sigdelset(&wait_mask, SIGTERM);
    struct sigaction sa, old_int, old_term, old_pipe;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    open_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);

    char url[OPEN_NAME_MAX + OPEN_ORIGIN_MAX + 128];
    snprintf(url, sizeof url, "%s/#!/?url=http://127.0.0.1:%d/%s&referrer=%s", origin, bound, name,
             OPEN_REFERRER);
    printf("strobe open: serving %s (%lld bytes) at http://127.0.0.1:%d/%s\n", cli_esc(path),
           (long long)site.size, bound, name);
    printf("open this URL in a browser; the Perfetto UI fetches the trace from here:\n    %s\n",
           url);
    if (bound != OPEN_DEFAULT_PORT && strcmp(origin, OPEN_DEFAULT_ORIGIN) == 0)
        printf("note: ui.perfetto.dev fetches from port %d only; forward it to this one (ssh -L "
               "%d:127.0.0.1:%d HOST) and put %d in the URL\n",
               OPEN_DEFAULT_PORT, OPEN_DEFAULT_PORT, bound, OPEN_DEFAULT_PORT);
    const char *display = getenv("DISPLAY"), *wayland = getenv("WAYLAND_DISPLAY");
    int have_display = (display && display[0]) || (wayland && wayland[0]);
    if (getenv("SSH_CONNECTION") && !have_display) {
        char host[256] = "HOST";
        if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "HOST");
        host[sizeof host - 1] = '\0';
        printf("from your own machine, forward the port first: ssh -L %d:127.0.0.1:%d %s\n", bound,
               bound, cli_esc(host));
    }
    printf("waiting for the UI to fetch it (Ctrl-C stops)\n");
    fflush(stdout);
    if (browser && have_display) {
        char what[512];
        int e = open_browser(url, &old_mask, what, sizeof what);
        if (e != 0)
            fprintf(stderr, "strobe %s: could not start %s (%s); open the URL yourself\n", cmd,
                    cli_esc(what), strerror(e));
    }

    int fetched = 0;
    int rc = serve(cmd, &site, lfd, conns, &wait_mask, &fetched);
    int sig = open_signal;

    for (int i = 0; i < OPEN_MAX_CONNS; i++)
        if (conns[i].state != C_FREE) conn_close(&conns[i]);
    free(conns);
    close(lfd);
    close(site.file_fd);
    /* The mask first, while the handler is still ours: a signal that came after the last wait
     * is delivered to it (and so dropped), not to the default action. */
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    open_signal = 0;

    if (fetched) {
        printf("strobe open: the UI fetched the trace (%lld bytes); stopped\n",
               (long long)site.size);
        return cli_finish(cmd, path, 0, CLI_OK);
    }
    /* On a terminal, Ctrl-C leaves "^C" where the cursor was: the message goes on a line of
     * its own. */
    if (rc == CLI_OK && sig)
        fprintf(stderr, "%sstrobe %s: stopped by %s before the trace was fetched\n",
                sig == SIGINT && isatty(2) ? "\n" : "", cmd,
                sig == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM");
    fflush(stdout);
    return rc;
}
