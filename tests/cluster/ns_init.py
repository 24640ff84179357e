#!/usr/bin/python3
"""PID 1 of one test-cluster host (started by tests/cluster/hosts.sh; stdlib only).

Runs inside `ip netns exec ppTAG-nodeI unshare --pid --mount --uts --fork --mount-proc`: sets the hostname,
bind-mounts the host's private /opt/perfplay (and /etc/hosts), starts sshd, reaps every orphan of the
host, and on SIGTERM/SIGINT stops sshd and exits; the kernel then kills whatever is left in the PID
namespace. It exits too when sshd dies, so a broken host shows as down.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time


class Shutdown(Exception):
    """Raised by the signal handler to leave the wait loop."""


def log(msg):
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} ns_init[{socket.gethostname()}]: {msg}", flush=True)


def bind(src, dst):
    """Private bind mount of src on dst (the mount namespace is already private; make sure anyway)."""
    subprocess.run(["mount", "--bind", src, dst], check=True, timeout=60)
    subprocess.run(["mount", "--make-private", dst], check=True, timeout=60)


def on_signal(signum, _frame):
    raise Shutdown(signal.Signals(signum).name)


def stop(proc, timeout=5.0):
    if proc.poll() is not None:
        return
    proc.terminate()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hostname", required=True)
    ap.add_argument("--opt-src", required=True, help="directory bind-mounted on /opt/perfplay")
    ap.add_argument("--etc-hosts", help="file bind-mounted on /etc/hosts")
    ap.add_argument("--sshd-config", required=True)
    ap.add_argument("--sshd-log", required=True)
    args = ap.parse_args()

    if os.getpid() != 1:
        sys.exit("ns_init: must be PID 1 of a new PID namespace")
    # PID 1 gets no default signal actions: install handlers before anything else.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.chdir("/")

    socket.sethostname(args.hostname)
    bind(args.opt_src, "/opt/perfplay")
    if args.etc_hosts:
        bind(args.etc_hosts, "/etc/hosts")

    with open(args.sshd_log, "ab", buffering=0) as sshd_log:
        sshd = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", args.sshd_config],
            stdin=subprocess.DEVNULL, stdout=sshd_log, stderr=sshd_log, close_fds=True)
    log(f"up: sshd pid {sshd.pid}")

    code = 0
    try:
        while True:
            try:
                pid, status = os.wait()  # reaps sshd and every orphan re-parented to PID 1
            except ChildProcessError:
                time.sleep(0.5)  # no children at all (cannot happen while sshd runs)
                continue
            if pid == sshd.pid:
                sshd.returncode = os.waitstatus_to_exitcode(status)
                log(f"sshd exited ({sshd.returncode}); host going down")
                code = 1
                break
    except Shutdown as sig:
        log(f"{sig}: stopping sshd")
        stop(sshd)
    log("exit")
    return code


if __name__ == "__main__":
    sys.exit(main())
