# Where one launch's wall time goes, step by step (issue 24's B6): runs
#   netbox launch --quiet --audit-db DB -- /bin/true
# N times under `strace -f --seccomp-bpf -ttt`, tracing only the syscalls that mark a step
# (the others run at full speed), and prints the median, min and max time between marks:
# the clone of the namespace's init, its first pivot_root, the thread that makes the
# agent's sockets (setns), the embedded proxy's preparing thread (the one that opens the
# audit store), the release, the agent's fork and exec, the init's exit, the launcher's.
# As root, from a workdir the audit store is not in:
#   sudo python3 tests/bench/launch_steps.py build/netbox /var/tmp/steps.db 8
# Times are under tracing (each marked syscall stops the process): read them as shares.
import os, statistics, subprocess, sys, tempfile

MARKS = "execve,clone,clone3,pivot_root,setns,exit_group,openat,write"


def trace(netbox, db, out):
    subprocess.run(["strace", "-f", "--seccomp-bpf", "-ttt", "-e", "trace=" + MARKS, "-o", out,
                    netbox, "launch", "--quiet", "--audit-db", db, "--", "/bin/true"], check=True)


def marks(path):
    lines = [l.split(None, 2) for l in open(path) if len(l.split(None, 2)) == 3]
    main, t0 = lines[0][0], float(lines[0][1])
    d, init, link, proxy, agent = {}, None, None, None, None
    for pid, ts, rest in lines:
        t = (float(ts) - t0) * 1000
        exited = "exited with" in rest
        if pid == main and rest.startswith("clone(") and "CLONE_NEWNS" in rest:
            d["clone"], init = t, rest.rsplit("= ", 1)[-1].strip()
        elif pid == init and rest.startswith('pivot_root("/tmp"'):
            d["view"] = t
        elif rest.startswith("setns(") and link is None:
            link = pid
        elif rest.startswith("openat(") and '.db"' in rest and pid != main and proxy is None:
            proxy = pid
        elif pid == main and rest.startswith('write(') and '"G", 1' in rest:
            d["release"] = t
        elif pid == init and rest.startswith("clone("):
            d["fork"] = t
        elif rest.startswith('execve("/bin/true"'):
            d["exec"], agent = t, pid
        if exited:
            for who, key in ((link, "link"), (proxy, "proxy"), (agent, "agent_exit"), (init, "init_exit"), (main, "end")):
                if pid == who:
                    d[key] = t
    return d


STEPS = [("start", "clone", "exec, loader, plan, cgroup, lease"),
         ("clone", "view", "the init starts its mounts"),
         ("clone", "link", "the agent's sockets, loopback, nft (a thread)"),
         ("clone", "proxy", "the embedded proxy prepares (a thread)"),
         ("proxy", "release", "attach, ports, netbox's files hidden"),
         ("release", "fork", "the init forks the agent"),
         ("fork", "exec", "the agent, fork to exec"),
         ("exec", "agent_exit", "the command"),
         ("agent_exit", "init_exit", "the init reaps and exits"),
         ("init_exit", "end", "teardown: rows, proxy stop, store, cgroup"),
         ("start", "end", "whole launch")]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: launch_steps.py NETBOX AUDIT_DB RUNS")
    netbox, db, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            out = os.path.join(tmp, f"trace{i}")
            trace(netbox, db, out)
            rows.append(marks(out))
    print(f"{'step':44s} {'median':>8s} {'min':>8s} {'max':>8s}  n")
    for a, b, what in STEPS:
        v = [r[b] - (0 if a == "start" else r[a]) for r in rows if b in r and (a == "start" or a in r)]
        if v:
            print(f"{what:44s} {statistics.median(v):8.2f} {min(v):8.2f} {max(v):8.2f}  {len(v)} (ms)")


main()
