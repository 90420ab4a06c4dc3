#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""siw_rexec: run a command on another test guest, the way mpirun uses ssh.

  siw_rexec.py --serve PORT        (on every guest that runs remote ranks)
  siw_rexec.py HOST COMMAND...     (mpirun's plm_rsh_agent)

The guests have no ssh. The client sends the command line (its words
joined by spaces, as ssh joins them) to HOST:PORT (port from
$SIW_REXEC_PORT, default 46777) and relays what the command writes;
the server runs it with /bin/sh -c in a new session, its output going to
the connection. The client exits with the command's status (the last
byte the server sends after the output ends), 255 when the connection
broke. When the client goes away first (mpirun kills its agents at the
end of a job), the server kills the command's process group, as sshd
does when the connection drops.
"""
import os
import select
import signal
import socket
import subprocess
import sys

DEFAULT_PORT = 46777


def serve(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(16)
    print(f"# listening on {port}", flush=True)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while True:
        c, _ = ls.accept()
        if os.fork() == 0:
            ls.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            one(c)
            os._exit(0)
        c.close()


def one(c):
    buf = b""
    while b"\n" not in buf:
        d = c.recv(65536)
        if not d:
            return
        buf += d
    cmd, _ = buf.split(b"\n", 1)
    print(f"# run: {cmd.decode(errors='replace')[:200]}", flush=True)
    p = subprocess.Popen(["/bin/sh", "-c", cmd.decode()], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    fd = p.stdout.fileno()
    while True:
        r, _, _ = select.select([fd, c], [], [])
        if c in r and not c.recv(4096):
            # the client is gone: end the command as sshd would
            os.killpg(p.pid, signal.SIGTERM)
            p.wait()
            return
        if fd in r:
            d = os.read(fd, 65536)
            if not d:
                break
            c.sendall(d)
    rc = p.wait()
    c.sendall(bytes([rc & 0xFF]))
    c.shutdown(socket.SHUT_WR)


def client(host, words):
    port = int(os.environ.get("SIW_REXEC_PORT", DEFAULT_PORT))
    c = socket.create_connection((host, port), timeout=30)
    c.settimeout(None)
    c.sendall(" ".join(words).encode() + b"\n")
    last = None
    while True:
        d = c.recv(65536)
        if not d:
            break
        if last is not None:
            sys.stdout.buffer.write(last)
        # hold the last byte back: it is the status once the stream ends
        sys.stdout.buffer.write(d[:-1])
        sys.stdout.buffer.flush()
        last = d[-1:]
    return last[0] if last else 255


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
        return 0
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    return client(sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
