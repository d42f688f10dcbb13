"""``python -I -S zygote_client.py SOCKET MODULE ARGS...``: ``python -m MODULE ARGS...`` (a crawl,
a sandbox server) forked by :mod:`sandbox.zygote`.

Runs with the standard library only (``-S``: a start of milliseconds). It hands the zygote
its standard streams, working directory, environment and arguments, passes on the signals
it gets to the crawl, and exits as the crawl exited (killed by a signal: by the same one).
When this process is killed, the crawl sees its end of a socket close and kills itself.
"""

import json
import os
import signal
import socket
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def main() -> int:
    path, argv = sys.argv[1], sys.argv[2:]
    zygote = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zygote.connect(path)
    header = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(zygote, [json.dumps(header).encode()], [0, 1, 2])
    data, fds, _, _ = socket.recv_fds(zygote, 4096, 1)
    pid = json.loads(data)["pid"]
    # fds[0] stays open: the kernel closes it when this process dies, and that ends the crawl.
    for sig in FORWARDED:
        signal.signal(sig, lambda number, _frame: os.kill(pid, number))
    data = zygote.recv(4096)
    if not data:
        print("crawlproj tests: the zygote went away before the crawl ended", file=sys.stderr)
        return 70
    status = json.loads(data)["status"]
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
