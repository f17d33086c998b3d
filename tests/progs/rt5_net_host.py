"""Host-side helpers for tests/progs/rt5_net.c (run outside corral, as root
or any user; loopback or the host's own addresses only).

  serve ADDR PORT SECONDS      a host service: accept, read, answer
                               "host-service"
  late ADDR PORT SECONDS       a host service that starts late: waits until
                               the run holds the port, then until it lets
                               go, binds it, accepts once, prints what it got
  dns PORT SECONDS ANSWER      an upstream resolver on 127.0.0.1:PORT that
                               answers every A query with ANSWER and prints
                               each question as received (for
                               CORRAL_DNS_UPSTREAM=127.0.0.1:PORT)
"""
import socket
import struct
import sys
import time


def serve(addr, port, secs):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    s.settimeout(0.5)
    end = time.time() + secs
    while time.time() < end:
        try:
            c, peer = s.accept()
        except socket.timeout:
            continue
        print("accepted", peer, flush=True)
        try:
            c.settimeout(1)
            c.recv(100)
            c.sendall(b"host-service\n")
        except OSError:
            pass
        c.close()


def late(addr, port, secs):
    end = time.time() + secs
    while time.time() < end:          # the run takes the port...
        t = socket.socket()
        try:
            t.bind((addr, port))
            t.close()
            time.sleep(0.02)
        except OSError:
            t.close()
            break
    s = None
    while time.time() < end:          # ...and lets it go
        t = socket.socket()
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            t.bind((addr, port))
            t.listen(4)
            s = t
            break
        except OSError:
            t.close()
            time.sleep(0.05)
    if not s:
        print("never bound")
        return
    print("host bound", flush=True)
    s.settimeout(max(0.1, end - time.time()))
    try:
        c, peer = s.accept()
        c.settimeout(2)
        print("host accepted", peer, "got", c.recv(100), flush=True)
        c.sendall(b"host-service\n")
        c.close()
    except OSError as e:
        print("host", e)


def dns(port, secs, answer):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    s.settimeout(0.5)
    end = time.time() + secs
    while time.time() < end:
        try:
            q, peer = s.recvfrom(2048)
        except socket.timeout:
            continue
        i = 12
        while q[i]:
            i += q[i] + 1
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
        print("query", q[12:i], qtype, flush=True)
        hdr = q[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if qtype == 1 else 0, 0, 0)
        ans = b""
        if qtype == 1:
            ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(answer)
        s.sendto(hdr + q[12:i + 5] + ans, peer)


if __name__ == "__main__":
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        serve(a[0], int(a[1]), float(a[2]))
    elif cmd == "late":
        late(a[0], int(a[1]), float(a[2]))
    elif cmd == "dns":
        dns(int(a[0]), float(a[1]), a[2])
