"""A pytest project that serves HTTP on loopback and talks to itself:
the shape of many real projects' test suites (a fixture server, a client)."""
import http.server
import json
import threading
import urllib.request

import pytest


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(n)
        self.send_response(201)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[::-1])

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_get(server):
    with urllib.request.urlopen(server + "/hello", timeout=10) as r:
        assert r.status == 200
        assert json.load(r) == {"path": "/hello"}


def test_post(server):
    req = urllib.request.Request(server + "/x", data=b"abc", method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 201
        assert r.read() == b"cba"


def test_many(server):
    for i in range(20):
        with urllib.request.urlopen("%s/%d" % (server, i), timeout=10) as r:
            assert json.load(r)["path"] == "/%d" % i


def test_tmp_path(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("data")
    assert p.read_text() == "data"
