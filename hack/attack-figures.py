#!/usr/bin/env python3
"""Time to refusal and peak memory of the render server for the hostile
generations of issue 15, one at a time, for a given plugin and client build.

    go run ./hack/attackfixtures /tmp/atk        # writes the hostile CTF (see attack_test.go)
    hack/attack-figures.py PLUGIN CLIENT APPDIR [ENV=VALUE...]

The server (serve) is started with the given sidecar settings; each case runs
through the client; every 2 ms the script reads the server's peak RSS (VmHWM)
and each worker's private peak (VmHWM less its file pages, which are the
server's too) and reports the largest sum: the sidecar's memory, the binary's
pages counted once. ATTACK_CASES=name,name runs only those cases. A
server past 1.5 GiB is stopped (the sidecar's limit is 1 GiB: it would have
been OOM-killed) and reported as such; a case still running after 60 s too.
"""
import os, socket, subprocess, sys, threading, time, signal

def status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith(" kB"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out

def rss_tree(pid):
    """The sidecar's memory: the server's peak RSS (VmHWM: its binary's pages
    count once) plus each worker's private peak (VmHWM less its file pages,
    which are the server's too). VmHWM catches a peak between two samples."""
    st = status(pid)
    total = st.get("VmHWM", 0)
    pids = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                pids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    for p in pids:
        c = status(p)
        total += max(c.get("RssAnon", 0), c.get("VmHWM", 0) - c.get("RssFile", 0) - c.get("RssShmem", 0))
    return total

def tarpit():
    """A registry that accepts connections and never answers."""
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(64)
    conns = []
    def serve():
        while True:
            c, _ = l.accept()
            conns.append(c)
    threading.Thread(target=serve, daemon=True).start()
    return "127.0.0.1:%d" % l.getsockname()[1]

def main():
    plugin, client, appdir = sys.argv[1:4]
    extra = dict(kv.split("=", 1) for kv in sys.argv[4:])
    sock = f"/tmp/atk-{os.getpid()}/r.sock"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "ARGOCD_OCM_CACHE_DIR": f"/tmp/atk-{os.getpid()}/cache",
           "ARGOCD_OCM_PLUGIN_BINARY": "/nonexistent", "ARGOCD_OCM_SERVER_SOCKET": sock}
    pit = tarpit()
    env["ARGOCD_OCM_PLAIN_HTTP"] = pit
    env.update(extra)
    fifo = os.path.join(appdir, "values", "fifo.yaml")
    os.makedirs(os.path.dirname(fifo), exist_ok=True)
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    only = os.environ.get("ATTACK_CASES", "")
    cases = {
        "tpl recursion": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/tpl"},
        "printf doubling": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/double"},
        "CPU loop": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/slow"},
        "range over repeat": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/repeat"},
        "include fan-out": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/include"},
        "100 000 objects": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/objects"},
        "/proc/self/fd/1 as repository": {"ARGOCD_ENV_REPOSITORY": "/proc/self/fd/1", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo"},
        "FIFO as value file": {"ARGOCD_ENV_REPOSITORY": "ctf", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo",
                               "ARGOCD_ENV_VALUE_FILES": "values/fifo.yaml"},
        "tarpit registry": {"ARGOCD_ENV_REPOSITORY": "http://" + pit + "/ocm", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo"},
        "alias bomb definition": {"ARGOCD_ENV_REPOSITORY": "ctf", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo",
                                  "ARGOCD_ENV_DEFINITION": "bomb.yaml"},
        "normal (podinfo)": {"ARGOCD_ENV_REPOSITORY": "ctf", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo"},
    }
    print(f"| case | result | time to refusal | peak RSS, server and workers |")
    print(f"|---|---|---|---|")
    for name, case in cases.items():
        if only and name not in only.split(","):
            continue
        if os.path.exists(sock):
            os.remove(sock)  # a killed server's: the client must not find it before the new one listens
        srv = subprocess.Popen([plugin, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=open(f"/tmp/atk-{os.getpid()}.log", "a"))
        for _ in range(500):
            if os.path.exists(sock):
                break
            time.sleep(0.01)
        time.sleep(0.3)  # warm workers
        base = rss_tree(srv.pid)
        cenv = dict(env, ARGOCD_APP_NAME="evil", ARGOCD_APP_NAMESPACE="evil", ARGOCD_ENV_VERSION="1.0.0", **case)
        start = time.time()
        cl = subprocess.Popen([client, "generate"], env=cenv, cwd=appdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peak, verdict = base, None
        while cl.poll() is None:
            peak = max(peak, rss_tree(srv.pid))
            if peak > 1536 << 20:
                verdict = "server past 1.5 GiB: OOM-killed at the 1 GiB limit"
                break
            if time.time() - start > 60:
                verdict = "still running after 60 s"
                break
            time.sleep(0.002)
        took = time.time() - start
        if verdict:
            srv.kill(); cl.kill()
        out, err = cl.communicate()
        if not verdict:
            verdict = ("ok, %d bytes" % len(out)) if cl.returncode == 0 else err.decode().strip()[-110:]
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(5)
        except subprocess.TimeoutExpired:
            srv.kill(); srv.wait()
        print(f"| {name} | {verdict} | {took:.2f} s | {peak >> 20} MiB (idle {base >> 20} MiB) |")
        sys.stdout.flush()

main()
