"""The capability broker: the program asks corral over plain HTTP on
loopback, corral adds the credential and asks the upstream over verified
TLS. The upstream sees the header; the secret is nowhere the program can
look, even when the upstream echoes it back; other paths, methods and hosts
get nothing; the broker is gone when the run is."""

import http.server
import json
import os
import secrets
import socket
import ssl
import subprocess
import threading
import time

from harness import CFG, eq, true, contains, not_contains, test, wait_for


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers every request with its own path and headers, in the body and
    in a header: an upstream that echoes the credential back."""
    log = None

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body_in = self.rfile.read(n) if n else b""
        rec = {"method": self.command, "path": self.path,
               "headers": dict(self.headers), "body": body_in.decode()}
        self.log.append(rec)
        body = json.dumps(rec).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo-Auth", self.headers.get("Authorization", ""))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *a):
        pass


def _upstream(t, base=None):
    """A TLS upstream on 127.0.0.1 (handler class base, by default the
    echo): (server, request log, its certificate)."""
    cert, key = t.path("cert.pem"), t.path("key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    log = []
    handler = type("Up", (base or _Echo,), {"log": log})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    return srv, log, cert


def _policy(t, port, cert, **over):
    with open(os.path.join(CFG.policy_dir or "", "default.json")) as f:
        doc = json.load(f)
    cred = {"origin": "https://127.0.0.1:%d" % port,
            "methods": ["GET", "POST"], "path_prefixes": ["/api/"],
            "header": "Authorization: Bearer {secret}",
            "secret_env": "UP_SECRET", "ca_file": cert}
    cred.update(over)
    doc["classes"]["default"]["credentials"] = {"UP": cred}
    return t.write("policy.json", json.dumps(doc))


PROG = r'''
import json, os, socket, sys, time, urllib.request, urllib.error
u = os.environ["CORRAL_BROKER_UP"]
out = {"url": u, "env_has_secret_name": "UP_SECRET" in os.environ}
def get(path, method="GET", data=None):
    req = urllib.request.Request(u + path, method=method, data=data)
    try:
        r = urllib.request.urlopen(req, timeout=30)
        return [r.status, r.read().decode(), r.headers.get("X-Echo-Auth")]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode(), None]
out["echo"] = get("/api/echo")
out["post"] = get("/api/post", "POST", b"payload")
out["other_path"] = get("/other")
out["dotdot"] = get("/api/../admin")
out["dotdot_param"] = get("/api/..;x/admin")
out["dotdot_enc"] = get("/api/%2E%2e/admin")
out["method"] = get("/api/echo", "DELETE")
s = socket.socket()
try:
    s.connect(("127.0.0.1", UPPORT))
    out["direct"] = "connected"
except OSError as e:
    out["direct"] = e.errno
ready = os.path.join(os.environ["HOME"], "ready")
with open(ready + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "url": u}, f)
os.rename(ready + ".tmp", ready)
go = os.path.join(os.environ["HOME"], "go")
for _ in range(600):
    if os.path.exists(go):
        break
    time.sleep(0.05)
print(json.dumps(out))
'''


def _scan_memory(pid, needle):
    """Every readable mapping of every task of pid, read from outside."""
    hits, scanned = [], 0
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/maps" % (pid, tid)) as f:
            maps = f.read().splitlines()
        with open("/proc/%d/task/%s/mem" % (pid, tid), "rb", 0) as mem:
            for line in maps:
                rng, perms = line.split()[:2]
                if "r" not in perms or "[vvar" in line or "[vsyscall" in line:
                    continue
                lo, hi = (int(x, 16) for x in rng.split("-"))
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except OSError:
                    continue
                scanned += len(data)
                if needle in data:
                    hits.append(line)
    return hits, scanned


@test
def broker_secret_never_inside(t):
    srv, log, cert = _upstream(t)
    try:
        port = srv.server_address[1]
        secret = "brk-" + secrets.token_hex(20)
        pol = _policy(t, port, cert)
        ws = t.path("ws")
        os.mkdir(ws)
        prog = t.write("prog.py", PROG.replace("UPPORT", str(port)))
        audit = t.path("audit.jsonl")
        # The operator also passes the secret's variable by name: corral
        # keeps it out of the program's environment anyway.
        p = t.spawn(["run", "--json", "--policy", pol, "-w", ws, "--audit",
                     audit, "--env", "UP_SECRET", "--ro", t.tmp, "--",
                     "python3", prog], env={"UP_SECRET": secret})
        ready = os.path.join(ws, "ready")
        true(wait_for(lambda: os.path.exists(ready), 60),
             "the program got its answers")
        info = json.load(open(ready))
        pid = info["pid"]
        broker_port = int(info["url"].rsplit(":", 1)[1])
        with open("/proc/%d/environ" % pid, "rb") as f:
            environ = f.read()
        not_contains(environ.decode("utf-8", "replace"), secret,
                     "the program's environment")
        hits, scanned = _scan_memory(pid, secret.encode())
        eq(hits, [], "mappings holding the secret")
        true(scanned > 1 << 20, "memory scanned: %d bytes" % scanned)
        # A stranger on loopback reaches the broker's port directly.
        c = socket.create_connection(("127.0.0.1", broker_port), timeout=10)
        c.sendall(b"GET /api/echo HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            got = c.recv(4096)
        except ConnectionResetError:
            got = b""
        c.close()
        eq(got, b"", "a stranger gets nothing")
        # Strangers as often as they like: each was a line of the
        # operator's audit trail, without end.
        for _ in range(150):
            try:
                socket.create_connection(("127.0.0.1", broker_port),
                                         timeout=10).close()
            except OSError:
                pass
        open(os.path.join(ws, "go"), "w").close()
        run = t.finish(p, timeout=60)
    finally:
        srv.shutdown()
    r = t.result(run)
    eq(run.code, 0, "exit (%s)" % run.summary())
    out = json.loads(r["stdout"])
    eq(out["env_has_secret_name"], False, "UP_SECRET in the program's env")
    eq(out["echo"][0], 200, "the relayed status")
    contains(out["echo"][1], "Bearer [REDACTED]", "the echoed header, redacted")
    eq(out["echo"][2], "Bearer [REDACTED]", "the echo header, redacted")
    eq(out["post"][0], 200, "a POST relayed")
    eq(out["other_path"][0], 403, "another path")
    eq(out["dotdot"][0], 403, "a dot segment")
    eq(out["dotdot_param"][0], 403, "a dot segment with a path parameter")
    eq(out["dotdot_enc"][0], 403, "an encoded dot segment")
    eq(out["method"][0], 403, "another method")
    eq(out["direct"], 111, "a direct connection to the upstream")
    # The upstream saw the credential, once per allowed request only.
    eq([(x["method"], x["path"]) for x in log],
       [("GET", "/api/echo"), ("POST", "/api/post")], "upstream requests")
    eq(log[0]["headers"].get("Authorization"), "Bearer " + secret,
       "the header the upstream saw")
    eq(log[1]["body"], "payload", "the body relayed")
    everything = json.dumps(r) + run.err.decode("utf-8", "replace") + \
        open(audit).read()
    for root, _, files in os.walk(ws):
        for name in files:
            everything += open(os.path.join(root, name), "rb").read().decode(
                "utf-8", "replace")
    not_contains(everything, secret, "result, stderr, audit and workspace")
    evs = [json.loads(l) for l in open(audit)]
    br = [e for e in evs if e["event"] == "broker"]
    eq([(e["method"], e["path"], e["status"]) for e in br
        if e.get("credential") == "UP" and e["method"] != "?"],
       [("GET", "/api/echo", 200), ("POST", "/api/post", 200),
        ("GET", "/other", 403), ("GET", "/api/../admin", 403),
        ("GET", "/api/..;x/admin", 403), ("GET", "/api/%2E%2e/admin", 403),
        ("DELETE", "/api/echo", 403)], "broker audit events")
    strangers = [e for e in br
                 if e.get("refused") == "a connection from outside the run"]
    eq(len(strangers), 100, "strangers in the trail: the first 100")
    counted = [d.get("count", 1) for d in r["denials"]
               if d["syscall"] == "broker" and
               d["reason"] == "a connection from outside the run"]
    true(counted and counted[0] >= 140,
         "every stranger counted in the denials: %r" % counted)
    reasons = {d["target"]: d["reason"] for d in r["denials"]
               if d["syscall"] == "broker"}
    true("UP GET /other" in reasons, "denials: %r" % reasons)
    true(r["usage"]["net_connections"] >= 5,
         "broker connections counted: %r" % r["usage"])
    # Gone with the run.
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", broker_port))
        connected = True
    except OSError:
        connected = False
    finally:
        s.close()
    eq(connected, False, "the broker's port after the run")
    eq(t.corral(["audit", "verify", audit]).code, 0, "the trail verifies")


@test
def broker_untrusted_upstream_certificate(t):
    """Without the test's CA the upstream's certificate does not verify:
    the program gets 502, the upstream never sees the secret."""
    srv, log, cert = _upstream(t)
    try:
        pol = _policy(t, srv.server_address[1], cert)
        with open(pol) as f:
            doc = json.load(f)
        del doc["classes"]["default"]["credentials"]["UP"]["ca_file"]
        pol = t.write("policy2.json", json.dumps(doc))
        run = t.corral(["run", "--json", "--policy", pol, "--", "python3",
                        "-c", "import os,urllib.request as u,urllib.error as e\n"
                        "try: u.urlopen(os.environ['CORRAL_BROKER_UP']+'/api/x')\n"
                        "except e.HTTPError as x: print(x.code)"],
                       env={"UP_SECRET": "s-" + secrets.token_hex(8)})
    finally:
        srv.shutdown()
    r = t.result(run)
    eq(r.get("stdout"), "502\n", "status (%s)" % run.summary())
    eq([x for x in log if "Authorization" in x["headers"]], [],
       "requests that reached the upstream with the header")


@test
def broker_policy_checked(t):
    cert = t.write("c.pem", "")
    bad = [({"origin": "http://127.0.0.1:1"}, "origin"),
           ({"origin": "https://h/x"}, "origin"),
           ({"header": "Authorization: Bearer"}, "header"),
           ({"methods": ["get"]}, "methods"),
           ({"path_prefixes": ["/a/../b"]}, "path_prefixes"),
           ({"secret_file": "/x"}, "exactly one")]
    for over, what in bad:
        pol = _policy(t, 1, cert, **over)
        chk = t.corral(["policy", "check", pol])
        eq(chk.code, 1, "%r: policy check" % over)
        contains(chk.err.decode(), what, "%r: message" % over)
    pol = _policy(t, 8443, cert)
    chk = t.corral(["policy", "check", pol])
    eq(chk.code, 0, "valid credentials (stderr %r)" % chk.err)
    again = t.write("again.json", chk.out)
    chk2 = t.corral(["policy", "check", again])
    eq(chk2.out, chk.out, "normalised output round-trips")
    # A credential whose secret is missing: the run does not start.
    run = t.corral(["run", "--json", "--policy", pol, "--", "true"],
                   env={"UP_SECRET": None})
    eq(run.code, 125, "missing secret (%s)" % run.summary())
    contains(t.result(run).get("message", ""), "UP_SECRET", "message")


SMUGGLE = r'''
import json, os, socket, urllib.parse
u = urllib.parse.urlsplit(os.environ["CORRAL_BROKER_UP"])
host, port = u.hostname, u.port
def raw(head, body=b""):
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(head.encode() + body)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    return data.split(b"\r\n", 1)[0].decode()
out = {}
out["get_body"] = raw("GET /api/w HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n", b"delete!")
out["range"] = raw("GET /api/r HTTP/1.1\r\nHost: x\r\nRange: bytes=0-7\r\n\r\n")
out["override"] = raw("GET /api/o HTTP/1.1\r\nHost: x\r\nX-HTTP-Method-Override: DELETE\r\n\r\n")
out["spaced"] = raw("GET /api/s HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer mine\r\n\r\n")
print(json.dumps(out))
'''


@test
def broker_request_cannot_change_method_or_slice_answers(t):
    """Three ways past the credential's rules, each reproduced against an
    echoing upstream on the build before: a GET with a body reached the
    upstream as a POST (libcurl sends a body as POST) though only GET was
    allowed, and the audit said GET; a Range header passed on let the
    program read the echoed secret back in 8-byte slices, none of which
    held the whole secret for the redaction to find; method-override
    headers and a header name with a space before its colon went through
    the drop list. Now: a GET or HEAD with a body is refused (400), Range,
    If-Range and method overrides are dropped, a partial answer (206,
    byte ranges) is refused as a compressed one is (502), and a header
    name must be a token."""
    srv, log, cert = _upstream(t)
    try:
        port = srv.server_address[1]
        secret = "brk-" + secrets.token_hex(20)
        pol = _policy(t, port, cert, methods=["GET"])
        prog = t.write("smuggle.py", SMUGGLE)
        run = t.corral(["run", "--json", "--policy", pol, "--ro", t.tmp,
                        "--", "python3", prog], env={"UP_SECRET": secret},
                       timeout=90)
    finally:
        srv.shutdown()
    r = t.result(run)
    eq(r.get("status"), "ok", "status (stderr %r)" % r.get("stderr"))
    out = json.loads(r["stdout"])
    contains(out["get_body"], " 400 ", "a GET with a body")
    contains(out["spaced"], " 400 ", "a header name with a space")
    eq([x["method"] for x in log], ["GET", "GET"],
       "methods the upstream saw (only the range and override requests)")
    for x in log:
        names = {k.lower() for k in x["headers"]}
        true("range" not in names, "Range reached the upstream: %r" % x)
        true("x-http-method-override" not in names,
             "a method override reached the upstream: %r" % x)


@test
def broker_secret_file_in_reach_is_refused(t):
    """A credential's secret_file the run could read (under a read root:
    here --ro of its directory) was accepted, and the program read the
    secret straight from it. Now the run does not start (125), naming
    the file; outside every root it still works."""
    srv, log, cert = _upstream(t)
    try:
        port = srv.server_address[1]
        sdir = t.path("secrets")
        os.mkdir(sdir)
        sf = os.path.join(sdir, "up.txt")
        with open(sf, "w") as f:
            f.write("brk-" + secrets.token_hex(20) + "\n")
        pol = _policy(t, port, cert, secret_env=None, secret_file=sf)
        doc = json.load(open(pol))
        del doc["classes"]["default"]["credentials"]["UP"]["secret_env"]
        pol = t.write("policy-file.json", json.dumps(doc))
        run = t.corral(["run", "--json", "--policy", pol, "--ro", sdir,
                        "--", "cat", sf])
        eq(run.code, 125, "a readable secret file (%s)" % run.summary())
        r = t.result(run)
        contains(r.get("message", ""), sf, "the message names the file")
        eq(r.get("stdout"), "", "the program never ran")
        ok = t.corral(["run", "--json", "--policy", pol, "--", "true"])
        eq(ok.code, 0, "the same file outside every root (%s)" %
           ok.summary())
    finally:
        srv.shutdown()


@test
def broker_ca_file_the_run_can_repoint_is_refused(t):
    """A ca_file named through a link in the workspace: the set-up check
    saw the operator's CA at its real path, but curl opened the path as
    named on every request, so the program re-pointed the link to a CA of
    its own and the broker trusted an upstream presenting that CA's
    certificate (502 before the swap, 200 after). A path with a directory
    the run may change is refused now, and the CA is read once, at
    set-up, and handed to curl as bytes."""
    srv, log, cert = _upstream(t)
    try:
        ws = t.path("ws")
        os.mkdir(ws)
        link = os.path.join(ws, "ca.pem")
        os.symlink(cert, link)
        pol = _policy(t, srv.server_address[1], cert, ca_file=link)
        run = t.corral(["run", "--json", "--policy", pol, "-w", ws, "--",
                        "true"], env={"UP_SECRET": "brk-x"})
        eq(run.code, 125, "a CA file through the workspace (%s)" %
           run.summary())
        contains(t.result(run).get("message", ""), link,
                 "the message names the file")
    finally:
        srv.shutdown()


PREFIXES = r'''
import json, os, urllib.request, urllib.error
u = os.environ["CORRAL_BROKER_UP"]
out = {}
for path in ("/api", "/api/x", "/api?q=1", "/apix", "/api-private/x",
             "/ap"):
    try:
        out[path] = urllib.request.urlopen(u + path, timeout=30).status
    except urllib.error.HTTPError as e:
        out[path] = e.code
print(json.dumps(out))
'''


@test
def broker_path_prefixes_match_whole_segments(t):
    """A credential's path prefix "/api" also signed /apix and
    /api-private/... (a byte prefix; found by a probing session). It
    covers /api and what is beneath it now, and nothing else."""
    srv, log, cert = _upstream(t)
    try:
        port = srv.server_address[1]
        pol = _policy(t, port, cert, path_prefixes=["/api"])
        prog = t.write("prefixes.py", PREFIXES)
        run = t.corral(["run", "--json", "--policy", pol, "--ro", t.tmp,
                        "--", "python3", prog],
                       env={"UP_SECRET": "brk-" + secrets.token_hex(8)})
    finally:
        srv.shutdown()
    r = t.result(run)
    eq(run.code, 0, "exit (%s)" % run.summary())
    eq(json.loads(r["stdout"]),
       {"/api": 200, "/api/x": 200, "/api?q=1": 200, "/apix": 403,
        "/api-private/x": 403, "/ap": 403}, "statuses")
    t.assert_next_run_ok()
