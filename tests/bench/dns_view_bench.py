# The DNS view from inside a launch (issues 15 and 24): run inside a launch whose policy
# allows allowed.test, e.g.
#   sudo netbox launch -q --policy P --audit-db D -- python3 tests/bench/dns_view_bench.py
# Throughput: four sockets, 32 queries in flight on each, against the resolver
# resolv.conf names. With `--latency N`: N queries one at a time (the next sent when the
# last is answered), each timed from send to answer; prints p50, p99 and max (issue 24's
# target: p99 <= 1 ms). The answers are checked to be answers (same id, QR set, rcode 0).
import socket, struct, sys, time

ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
# Inside a launch the resolver is the DNS view on the agent's loopback (127.0.0.53). Anywhere
# else this would flood a real resolver (a network's, not ours) with queries: refuse.
if not (ns.startswith("127.") or ns == "::1"):
    sys.exit(f"dns_view_bench.py: /etc/resolv.conf names {ns}, not the DNS view on loopback: "
             "run it inside `netbox launch` (see the comment at the top)")


def query(qid):
    return struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + b"\x07allowed\x04test\x00\x00\x01\x00\x01"


def latency(n):
    s = socket.socket(socket.AF_INET6 if ":" in ns else socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((ns, 53))
    s.settimeout(2)
    times = []
    for i in range(n):
        qid = i & 0xFFFF
        t0 = time.perf_counter_ns()
        s.send(query(qid))
        a = s.recv(512)
        times.append(time.perf_counter_ns() - t0)
        rid, flags = struct.unpack(">HH", a[:4])
        if rid != qid or not flags & 0x8000 or flags & 0xF:
            sys.exit(f"query {i}: not an answer to it (id {rid}, flags {flags:#x})")
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] / 1e3
    print("queries %d p50_us %.1f p99_us %.1f max_us %.1f" % (n, pick(0.5), pick(0.99), times[-1] / 1e3))


def throughput():
    q = query(1)
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


if len(sys.argv) == 3 and sys.argv[1] == "--latency":
    latency(int(sys.argv[2]))
else:
    throughput()
