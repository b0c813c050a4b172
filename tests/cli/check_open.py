#!/usr/bin/env python3
"""Checks `strobe open TRACE`: it serves the trace on 127.0.0.1 for the Perfetto UI as Perfetto's
tools/open_trace_in_ui does, and stops once the UI has fetched it.

  http     (cli_open) strobe open --no-browser --port 0 on a trace; its URL is the UI's
           (https://ui.perfetto.dev/#!/?url=http://127.0.0.1:PORT/NAME&referrer=strobe). With
           the headers the UI's fetch sends (Origin: https://ui.perfetto.dev, Sec-Fetch-Mode:
           cors ...): a CORS preflight (OPTIONS, with private network access asked) gets 204
           and the CORS headers; the UI's probe for trace_processor_shell (POST /status) 404;
           another path 404, another method 405 (Allow), another origin 403, HEAD the length
           without the body, malformed requests 400, 505 and 431; a client that sends half its
           headers and waits is dropped after 10 s and does not stop the others, nor does one
           that stays silent; then the GET: 200, the file's bytes unchanged, Content-Type by format
           (.json, .json.gz, .pftrace), Content-Length, Access-Control-Allow-Origin, and the
           command exits 0 saying so. A second `strobe open` on the same port fails with the
           system's reason (Address already in use) and points to --port; a missing file fails
           (No such file or directory); SIGINT (and SIGTERM) stop it cleanly, exit 0, with a
           message, and the port is free again. With DISPLAY set, $BROWSER is started on the
           URL (a script here that writes down its argument); without a display, or with
           --no-browser, it is not.
  browser  (cli_open_browser) what a browser does with the answers: headless Chromium loads a
           page from one origin (a server of this test on 127.0.0.1) whose script fetch()es the
           trace from `strobe open --origin THAT_ORIGIN` as the UI's TraceHttpStream does
           (fetch, Content-Length, the body), so the browser's own CORS rules apply; the page
           gets the file's bytes, and the command exits 0. Served for another origin, the same
           fetch fails in the browser. Skipped (77) without chromium.

usage: check_open.py STROBE OUT_DIR http|browser
"""
import gzip
import hashlib
import http.client
import http.server
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, finish  # noqa: E402

STROBE, WORK, MODE = sys.argv[1:4]
os.makedirs(WORK, exist_ok=True)
UI = "https://ui.perfetto.dev"
# What the UI's fetch() sends from ui.perfetto.dev (Chromium's headers for a cross-origin GET).
UI_HEADERS = {
    "Origin": UI,
    "Referer": UI + "/",
    "Accept": "*/*",
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Dest": "empty",
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) check_open.py",
}
URL_RE = re.compile(r"(https?://[^/\s]+)/#!/\?url=http://127\.0\.0\.1:(\d+)/(\S+)&referrer=(\S+)")


class Server:
    """One `strobe open` run, its output read as it comes."""

    def __init__(self, *args, env=None):
        self.p = subprocess.Popen([STROBE, "open", *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env)
        self.out = b""
        self.url = None

    def wait_url(self, timeout=10):
        """Reads stdout until the URL line and the 'waiting' line: (origin, port, name)."""
        end = time.time() + timeout
        while time.time() < end and b"waiting for the UI" not in self.out:
            r, _, _ = select.select([self.p.stdout], [], [], 0.1)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 4096)
                if not chunk:
                    break
                self.out += chunk
        m = URL_RE.search(self.out.decode("utf-8", "replace"))
        if not m:
            return None
        self.url = m.group(0)
        return m.group(1), int(m.group(2)), m.group(3), m.group(4)

    def finish(self, timeout=10):
        """Waits for the exit: (rc, stdout, stderr); rc None when it did not exit in time."""
        try:
            out, err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
            return None, (self.out + out).decode(), err.decode()
        return self.p.returncode, (self.out + out).decode(), err.decode()


def request(port, method, path, headers=None):
    """One HTTP request: (status, headers as a dict with lower-case names, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, body


def port_free(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def traces():
    """The three formats, from one small trace: (path, Content-Type)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "summary_basic.json")
    data = open(src, "rb").read()
    js = os.path.join(WORK, "t.json")
    open(js, "wb").write(data)
    gz = os.path.join(WORK, "t.json.gz")
    with gzip.open(gz, "wb") as f:
        f.write(data)
    pf = os.path.join(WORK, "t.pftrace")
    r = subprocess.run([STROBE, "convert", js, pf], capture_output=True, text=True)
    expect("strobe convert t.json t.pftrace: exit status (%s)" % r.stderr.strip(), r.returncode, 0)
    return [(js, "application/json"), (gz, "application/gzip"), (pf, "application/octet-stream")]


def serve_and_fetch(path, ctype, probes):
    """strobe open PATH; the UI's requests (with `probes`, the other requests first); the GET."""
    name = os.path.basename(path)
    srv = Server("--no-browser", "--port", "0", path)
    got = srv.wait_url()
    if got is None:
        fail("%s: no URL in the output: %r" % (name, srv.out))
        srv.p.kill()
        return None
    origin, port, url_name, referrer = got
    expect("%s: the URL's origin" % name, origin, UI)
    expect("%s: the URL's path" % name, url_name, name)
    expect("%s: the URL's referrer" % name, referrer, "strobe")
    path_url = "/" + url_name
    size = os.path.getsize(path)
    if probes:
        probes(srv, port, path_url, size)
    st, h, body = request(port, "GET", path_url, UI_HEADERS)
    expect("%s: GET status" % name, st, 200)
    expect("%s: the bytes served are the file's" % name,
           hashlib.sha256(body).hexdigest(), hashlib.sha256(open(path, "rb").read()).hexdigest())
    expect("%s: Content-Length" % name, h.get("content-length"), str(size))
    expect("%s: Content-Type" % name, h.get("content-type"), ctype)
    expect("%s: Access-Control-Allow-Origin" % name, h.get("access-control-allow-origin"), UI)
    expect("%s: Cache-Control" % name, h.get("cache-control"), "no-cache")
    expect("%s: no Content-Encoding (the UI unpacks gzip itself)" % name,
           h.get("content-encoding"), None)
    rc, out, err = srv.finish()
    expect("%s: strobe open exits 0 after the fetch (stderr: %s)" % (name, err.strip()), rc, 0)
    expect("%s: it says the UI fetched the trace" % name,
           "the UI fetched the trace (%d bytes)" % size in out, True)
    expect("%s: the port is free again" % name, port_free(port), True)
    return port


def probes(srv, port, path, size):
    """What the UI, other pages and other clients send before the GET; none of it ends the
    command."""
    pre = dict(UI_HEADERS, **{"Access-Control-Request-Method": "GET",
                              "Access-Control-Request-Headers": "range",
                              "Access-Control-Request-Private-Network": "true"})
    st, h, body = request(port, "OPTIONS", path, pre)
    expect("preflight: status", st, 204)
    expect("preflight: Access-Control-Allow-Origin", h.get("access-control-allow-origin"), UI)
    expect("preflight: Access-Control-Allow-Methods", h.get("access-control-allow-methods"),
           "GET, HEAD, OPTIONS")
    expect("preflight: Access-Control-Allow-Headers", h.get("access-control-allow-headers"),
           "range")
    expect("preflight: Access-Control-Allow-Private-Network",
           h.get("access-control-allow-private-network"), "true")
    # The UI's probe for a trace_processor_shell on 9001 (HttpRpcEngine.checkConnection).
    st, h, _ = request(port, "POST", "/status", dict(UI_HEADERS, **{"Content-Length": "0"}))
    expect("POST /status (the UI's RPC probe): status", st, 404)
    expect("POST /status: Access-Control-Allow-Origin", h.get("access-control-allow-origin"), UI)
    st, _, _ = request(port, "GET", "/other.json", UI_HEADERS)
    expect("GET of another path: status", st, 404)
    # HEAD of another path: a 404 without a body (read raw: http.client reads none for HEAD).
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"HEAD /other.json HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        raw += d
    s.close()
    expect("HEAD of another path: 404, nothing after the headers",
           (raw.split(b" ")[1:2], raw.endswith(b"\r\n\r\n")), ([b"404"], True))
    st, h, _ = request(port, "PUT", path, UI_HEADERS)
    expect("PUT of the trace: status", st, 405)
    expect("PUT: Allow", h.get("allow"), "GET, HEAD, OPTIONS")
    st, h, _ = request(port, "GET", path, dict(UI_HEADERS, Origin="https://evil.example"))
    expect("GET from another origin: status", st, 403)
    expect("GET from another origin: no Access-Control-Allow-Origin",
           h.get("access-control-allow-origin"), None)
    st, h, body = request(port, "HEAD", path, UI_HEADERS)
    expect("HEAD: status, Content-Length, no body", (st, h.get("content-length"), body),
           (200, str(size), b""))
    # Malformed requests: answered 400 (or 431), never a hang.
    # A body that looks like headers is no header: 405 for the POST, not 403 for its "Origin".
    body = b"Origin: https://evil.example\r\n\r\n"
    post = (b"POST %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (path.encode(), len(body))) + body
    for raw, want in ((b"NONSENSE\r\n\r\n", 400), (b"GET / HTTP/9.9\r\n\r\n", 505),
                      (b"GET " + b"a" * 9000, 431), (post, 405)):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(raw)
        line = s.recv(100).split(b"\r\n")[0]
        s.close()
        expect("raw %r...: status line" % raw[:16], line.split(b" ")[1:2], [str(want).encode()])
    # A client that sends half its headers and waits: it is dropped after the header deadline
    # (10 s), and meanwhile the others are served.
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n")
    t0 = time.time()
    st, _, _ = request(port, "HEAD", path, UI_HEADERS)
    expect("HEAD while a client waits in its headers: status", st, 200)
    slow.settimeout(30)
    try:
        closed = slow.recv(100) == b""
    except OSError:
        closed = True
    waited = time.time() - t0
    slow.close()
    expect("a client silent in its headers is dropped after 10 s (%.1f s)" % waited,
           closed and 9 <= waited <= 20, True)
    # One that stays silent (no byte): the GET below is still served, and the command ends.
    srv.silent = socket.create_connection(("127.0.0.1", port))
    expect("still serving after the probes", srv.p.poll(), None)


def part_http():
    ts = traces()
    for path, ctype in ts:
        serve_and_fetch(path, ctype, probes if path.endswith(".json") else None)

    js = ts[0][0]
    # A second instance on a port in use.
    first = Server("--no-browser", "--port", "0", js)
    got = first.wait_url()
    if got is None:
        fail("no URL from the first instance: %r" % first.out)
        first.p.kill()
    else:
        port = got[1]
        r = subprocess.run([STROBE, "open", "--no-browser", "--port", str(port), js],
                           capture_output=True, text=True, timeout=30)
        expect("a second strobe open on port %d: exit status" % port, r.returncode, 2)
        expect("... one line on stderr", len(r.stderr.splitlines()), 1)
        expect("... names the reason and --port: %s" % r.stderr.strip(),
               "Address already in use" in r.stderr and "--port" in r.stderr
               and "127.0.0.1:%d" % port in r.stderr, True)
        # SIGINT stops the first one cleanly.
        first.p.send_signal(signal.SIGINT)
        rc, out, err = first.finish()
        expect("SIGINT: exit status", rc, 0)
        expect("SIGINT: says it stopped (%s)" % err.strip(),
               "stopped by Ctrl-C (SIGINT) before the trace was fetched" in err, True)
        expect("SIGINT: the port is free again", port_free(port), True)
    term = Server("--no-browser", "--port", "0", js)
    if term.wait_url() is None:
        fail("no URL (SIGTERM run): %r" % term.out)
    term.p.send_signal(signal.SIGTERM)
    rc, _, err = term.finish()
    expect("SIGTERM: exit status, message (%s)" % err.strip(), (rc, "SIGTERM" in err), (0, True))

    # A missing file.
    missing = os.path.join(WORK, "no_such.json")
    r = subprocess.run([STROBE, "open", "--no-browser", missing], capture_output=True, text=True,
                       timeout=30)
    expect("missing file: exit status", r.returncode, 2)
    expect("missing file: one line naming it and the reason (%s)" % r.stderr.strip(),
           len(r.stderr.splitlines()) == 1 and missing in r.stderr
           and "No such file or directory" in r.stderr, True)

    # The browser: $BROWSER started on the URL where there is a display, not otherwise.
    rec = os.path.join(WORK, "browser.txt")
    script = os.path.join(WORK, "fake-browser")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nprintf '%%s\\n' \"$@\" > '%s.tmp' && mv '%s.tmp' '%s'\n"
                % (rec, rec, rec))
    os.chmod(script, 0o755)
    base = {k: v for k, v in os.environ.items()
            if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "SSH_CONNECTION")}
    for label, extra, args, want in (
            ("DISPLAY set", {"DISPLAY": ":99", "BROWSER": script + " --new-tab"}, [], True),
            ("no display", {"BROWSER": script}, [], False),
            ("--no-browser", {"DISPLAY": ":99", "BROWSER": script}, ["--no-browser"], False)):
        if os.path.exists(rec):
            os.remove(rec)
        srv = Server("--port", "0", *args, js, env=dict(base, **extra))
        got = srv.wait_url()
        if got is None:
            fail("%s: no URL: %r" % (label, srv.out))
            srv.p.kill()
            continue
        end = time.time() + 5
        while want and not os.path.exists(rec) and time.time() < end:
            time.sleep(0.05)
        if not want:
            time.sleep(0.5)
        opened = open(rec).read().split("\n") if os.path.exists(rec) else None
        expect("%s: $BROWSER %s" % (label, "started with the URL" if want else "not started"),
               opened is not None and opened[:2] == ["--new-tab", srv.url], want)
        srv.p.send_signal(signal.SIGINT)
        rc, _, err = srv.finish()
        expect("%s: exit status (%s)" % (label, err.strip()), rc, 0)
    missing_browser = Server("--port", "0", js,
                             env=dict(base, DISPLAY=":99", BROWSER="/nonexistent/browser"))
    missing_browser.wait_url()
    missing_browser.p.send_signal(signal.SIGINT)
    rc, _, err = missing_browser.finish()
    expect("a $BROWSER that cannot start: said, and served anyway (%s)" % err.strip(),
           (rc, "could not start /nonexistent/browser" in err), (0, True))


# ---- browser -----------------------------------------------------------------------------------

PAGE = """<!doctype html><html><body><pre id="out">pending</pre><script>
// As the UI's TraceHttpStream: fetch(url), status 200, Content-Length, then the body.
(async () => {
  const out = document.getElementById('out');
  try {
    const r = await fetch(%s);
    const len = r.headers.get('Content-Length');
    const buf = new Uint8Array(await r.arrayBuffer());
    const digest = await crypto.subtle.digest('SHA-256', buf);
    const hex = Array.from(new Uint8Array(digest)).map(b => b.toString(16).padStart(2, '0')).join('');
    out.textContent = 'status=' + r.status + ' length=' + len + ' bytes=' + buf.length + ' sha256=' + hex;
  } catch (e) {
    out.textContent = 'error=' + e;
  }
  document.body.setAttribute('data-done', '1');
})();
</script></body></html>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def page_server(holder):
    """A server on a free port of 127.0.0.1 of one page, holder["html"] (set later, once the
    trace's URL is known): (server, its origin)."""
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            data = holder.get("html", "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, "http://127.0.0.1:%d" % srv.server_address[1]


def browse(exe, url):
    prof = os.path.join(WORK, "chromium-profile")
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--user-data-dir=" + prof, "--virtual-time-budget=10000", "--dump-dom", url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="out">([^<]*)</pre>', p.stdout)
    return m.group(1) if m else "no result: " + p.stdout[-300:] + p.stderr[-300:]


def part_browser():
    exe = chromium()
    if exe is None:
        print("chromium missing (scripts/deps.sh --test installs it): skipped")
        sys.exit(77)
    path = traces()[1][0]  # the .json.gz: its bytes must arrive as they are, unpacked by nobody
    data = open(path, "rb").read()
    want = "status=200 length=%d bytes=%d sha256=%s" % (
        len(data), len(data), hashlib.sha256(data).hexdigest())
    for label, other in (("served for the page's origin", False),
                         ("served for another origin", True)):
        holder = {}
        page, origin = page_server(holder)
        srv = Server("--no-browser", "--port", "0", "--origin", UI if other else origin, path)
        got = srv.wait_url()
        if got is None:
            fail("%s: no URL: %r" % (label, srv.out))
            srv.p.kill()
            page.shutdown()
            continue
        holder["html"] = PAGE % ('"http://127.0.0.1:%d/%s"' % (got[1], got[2]))
        result = browse(exe, origin + "/page.html")
        page.shutdown()
        if not other:
            expect("%s: the page's fetch() gets the file" % label, result, want)
            rc, out, err = srv.finish()
            expect("%s: strobe open exits 0 after the browser's fetch (%s)" % (label, err.strip()),
                   rc, 0)
        else:
            expect("%s: the browser refuses the answer (%s)" % (label, result),
                   result.startswith("error=TypeError"), True)
            expect("%s: still serving" % label, srv.p.poll(), None)
            srv.p.send_signal(signal.SIGINT)
            rc, _, _ = srv.finish()
            expect("%s: SIGINT, exit status" % label, rc, 0)


if __name__ == "__main__":
    if MODE == "http":
        part_http()
    elif MODE == "browser":
        part_browser()
    else:
        print("usage: check_open.py STROBE OUT_DIR http|browser")
        sys.exit(2)
    finish()
