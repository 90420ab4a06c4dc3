#!/usr/bin/env python3
"""Watch the host's own speed while the bench guest runs.

usage: bench-hostwatch.py CONSOLE_LOG OUT.tsv PARENT_PID

The bench's slow runs come in streaks of tens of seconds, TCP's turns too.
The host here is a container on a shared machine: what else runs on its
physical cores is not visible from it (no steal time in /proc/stat). So
this measures it: every second it times a fixed piece of work by the CPU
time it took (not wall time, so waiting for a CPU does not count), and it
notes the host time at which each result line ("bench: IMPL TEST rep N:
VALUE (D s)") reaches the guest's console log. bench-report.py joins the
two: for each run, the slowest probe within it against the probe's median
over the whole bench.

Rows of OUT.tsv:  probe <host time> <CPU ms>
                  run <host time> <impl> <test> <rep> <run seconds>
It stops when PARENT_PID (scripts/bench.sh) is gone or on SIGTERM.
"""
import os
import re
import signal
import sys
import time

log, outp, parent = sys.argv[1], sys.argv[2], int(sys.argv[3])
RUN = re.compile(r'bench: (\S+) (\S+) rep (\d+): [0-9.]+.*\(([0-9.]+) s\)')
stop = False


def on_term(_sig, _frame):
    global stop
    stop = True


def work(n=200000):
    """A fixed piece of work, about 14 ms of CPU on this host at its speed."""
    x = 1
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0xffffffff
    return x


signal.signal(signal.SIGTERM, on_term)
out = open(outp, 'w')
pos = 0
part = ''
while not stop:
    try:
        os.kill(parent, 0)
    except OSError:
        break
    now = time.time()
    a = time.process_time()
    work()
    out.write(f'probe\t{now:.3f}\t{(time.process_time() - a) * 1000:.2f}\n')
    try:
        with open(log, 'rb') as f:
            f.seek(pos)
            new = f.read()
        pos += len(new)
        lines = (part + new.decode(errors='replace')).split('\n')
        part = lines.pop()
        t = time.time()
        for line in lines:
            m = RUN.search(line)
            if m:
                out.write(f'run\t{t:.3f}\t' + '\t'.join(m.groups()) + '\n')
    except FileNotFoundError:
        pass
    out.flush()
    time.sleep(max(0.0, 1.0 - (time.time() - now)))
out.close()
