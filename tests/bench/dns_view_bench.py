# DNS answers per second from one agent (issue 15): run inside a launch whose policy
# allows allowed.test, e.g.
#   sudo netbox launch -q --policy P --audit-db D -- python3 tests/bench/dns_view_bench.py
# Four sockets, 32 queries in flight on each, against the resolver resolv.conf names.
import socket, struct, time
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
q = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"\x07allowed\x04test\x00\x00\x01\x00\x01"
socks = []
for i in range(4):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.connect((ns, 53)); s.settimeout(2); socks.append(s)
N, W = 200000, 32
sent = got = 0
t0 = time.time()
while got < N:
    for s in socks:
        for _ in range(W):
            s.send(q)
        sent += W
    for s in socks:
        for _ in range(W):
            try:
                s.recv(512); got += 1
            except socket.timeout:
                break
dt = time.time() - t0
print("answers", got, "sent", sent, "seconds %.2f" % dt, "per second %.0f" % (got / dt))
