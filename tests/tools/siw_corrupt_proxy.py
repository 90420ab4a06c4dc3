#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""siw_corrupt_proxy: a TCP relay that flips bytes in one direction.

  siw_corrupt_proxy.py --listen IP:PORT --to IP:PORT [--skip N]
                       [--every N] [--count N]

Accepts one connection on --listen, connects to --to and relays both ways.
In the direction listener -> target, after --skip bytes (past the MPA
negotiation) it inverts one byte every --every bytes, at most --count
times (0: no limit). The relay's own TCP checksums are correct, so TCP
delivers the flipped bytes as valid data: the case a NIC or middlebox
corrupting behind its checksum offload creates, which only MPA's CRC can
catch. Prints "# flipped N at OFFSET" per flip and "# done A B" (bytes
relayed each way) at the end; exits when either side closes.
"""
import argparse
import select
import socket
import sys


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=addr, required=True)
    ap.add_argument("--to", type=addr, required=True)
    ap.add_argument("--skip", type=int, default=4096)
    ap.add_argument("--every", type=int, default=1 << 20)
    ap.add_argument("--count", type=int, default=0)
    a = ap.parse_args()

    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(a.listen)
    ls.listen(1)
    print("# listening on %s:%d" % a.listen, flush=True)
    down, _ = ls.accept()
    up = socket.create_connection(a.to)
    for s in (down, up):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    fwd = 0          # bytes relayed down -> up
    back = 0
    nflip = 0
    next_flip = a.skip
    peers = {down: up, up: down}
    try:
        while True:
            r, _, _ = select.select(list(peers), [], [])
            for s in r:
                data = s.recv(1 << 16)
                if not data:
                    raise EOFError
                if s is down:
                    buf = bytearray(data)
                    while (next_flip < fwd + len(buf) and
                           (not a.count or nflip < a.count)):
                        i = next_flip - fwd
                        buf[i] ^= 0xff
                        nflip += 1
                        print("# flipped %d at %d" % (nflip, next_flip),
                              flush=True)
                        next_flip += a.every
                    fwd += len(buf)
                    up.sendall(buf)
                else:
                    back += len(data)
                    down.sendall(data)
    except (EOFError, ConnectionError, OSError) as e:
        print("# closed: %s" % (e.__class__.__name__), flush=True)
    print("# done %d %d flips %d" % (fwd, back, nflip), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
