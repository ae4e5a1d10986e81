#!/usr/bin/env python3
"""Time to refusal and peak memory of the render server for the hostile
generations of issue 15, one at a time, for a given plugin and client build.

    go run ./hack/attackfixtures /tmp/atk        # writes the hostile CTF (see attack_test.go)
    hack/attack-figures.py PLUGIN CLIENT APPDIR [ENV=VALUE...]

The server (serve) is started with the given sidecar settings; each case runs
through the client; the script samples the resident memory (VmRSS) of the
server and its children every 10 ms and reports the peak of their sum. A
server past 1.5 GiB is stopped (the sidecar's limit is 1 GiB: it would have
been OOM-killed) and reported as such; a case still running after 60 s too.
"""
import os, subprocess, sys, time, signal

def rss_tree(pid):
    total = 0
    pids = [pid]
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                pids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total

def main():
    plugin, client, appdir = sys.argv[1:4]
    extra = dict(kv.split("=", 1) for kv in sys.argv[4:])
    sock = f"/tmp/atk-{os.getpid()}/r.sock"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "ARGOCD_OCM_CACHE_DIR": f"/tmp/atk-{os.getpid()}/cache",
           "ARGOCD_OCM_PLUGIN_BINARY": "/nonexistent", "ARGOCD_OCM_SERVER_SOCKET": sock}
    env.update(extra)
    cases = {
        "tpl recursion": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/tpl"},
        "printf doubling": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/double"},
        "CPU loop": {"ARGOCD_ENV_REPOSITORY": "hostile", "ARGOCD_ENV_COMPONENT": "example.com/hostile/slow"},
        "alias bomb definition": {"ARGOCD_ENV_REPOSITORY": "ctf", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo",
                                  "ARGOCD_ENV_DEFINITION": "bomb.yaml"},
        "normal (podinfo)": {"ARGOCD_ENV_REPOSITORY": "ctf", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo"},
    }
    print(f"| case | result | time to refusal | peak RSS, server and workers |")
    print(f"|---|---|---|---|")
    for name, case in cases.items():
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
            time.sleep(0.01)
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
