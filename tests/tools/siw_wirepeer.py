#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""siw_wirepeer: a hostile iWARP peer speaking MPA/DDP/RDMAP by hand over
plain TCP, against a siw QP driven by tests/bin/siw_victim.

  siw_wirepeer.py active  --addr IP --port P --vlog FILE --dev DEV [opts]
      connects to a victim that listens (siw is the MPA responder)
  siw_wirepeer.py passive --addr IP --port P --vlog FILE --dev DEV [opts]
      listens; the victim connects once per case (siw is the initiator
      and parses our MPA replies)
  opts: --full (whole matrix), --only REGEX, --xfail FILE, --seed N,
        --list (print the case names and exit)

Each case runs on its own TCP connection and checks: the kernel logged no
problem report (scripts/logscan.patterns, from a mark written
before the case), what siw sent back (Terminate layer/type/code where RFC
5040 section 7 / RFC 5041 / RFC 5044 name one, FIN or RST), the victim's
view of the connection (error completion or async event instead of a
hang, guard bytes intact, the MR unchanged when nothing valid was
written), and that the device counters (rdma stat) moved.

First line "PLAN mode N": the N cases selected (as --list prints them).
One line per case: "CASE name PASS|FAIL|XFAIL|XPASS secs detail".
XFAIL: failed but listed in the --xfail file (known module bug, see the
file); XPASS (listed but passed) counts as a failure so the list is kept
current. Last line "SUMMARY mode ran=N of N PASS=.. FAIL=.. XFAIL=..
XPASS=.. total Ns". Exit 0 iff every planned case ran (N > 0), with no
FAIL and no XPASS.
"""
import argparse
import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time

# ------------------------------------------------------------------ wire

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
F_MARK, F_CRC, F_REJ, F_ENH = 0x8000, 0x4000, 0x2000, 0x1000
P2P, RTR_SEND = 0x8000, 0x4000          # in IRD
RTR_WRITE, RTR_READ = 0x8000, 0x4000    # in ORD
WRITE, RREQ, RRESP, SEND, SEND_INV, SEND_SE, SEND_SE_INV, TERM = range(8)
L_RDMAP, L_DDP, L_LLP = 0, 1, 2

_CRC_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_T.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC_T
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def ctrl(op, tagged, last=True, dv=1, rv=1):
    v = (dv & 3) << 8 | (rv & 3) << 6 | (op & 0xF)
    if tagged:
        v |= 0x8000
    if last:
        v |= 0x4000
    return v


def fpdu(body, crc=False, pad=None, crc_val=None):
    """body = DDP/RDMAP header + payload (the ULPDU). Returns the FPDU."""
    ulpdu = len(body)
    n = (4 - ((ulpdu + 2) & 3)) & 3
    padb = bytes(n) if pad is None else pad
    f = struct.pack(">H", ulpdu & 0xFFFF) + body + padb
    if crc_val is not None:
        return f + struct.pack("<I", crc_val)
    return f + (struct.pack("<I", crc32c(f)) if crc else bytes(4))


def tagged_hdr(op, stag, to, last=True, **kw):
    return struct.pack(">HIQ", ctrl(op, True, last, **kw), stag, to & (2**64 - 1))


def untagged_hdr(op, qn, msn, mo, inval=0, last=True, tagged=False, **kw):
    return struct.pack(">HIIII", ctrl(op, tagged, last, **kw), inval, qn, msn, mo)


def rreq_body(sink_stag, sink_to, size, src_stag, src_to):
    return struct.pack(">IQIIQ", sink_stag, sink_to, size, src_stag, src_to)


def mpa_frame(key=KEY_REQ, rev=2, flags=F_ENH, ird=4, ord_=4, pd=b"", v2=True,
              pd_len=None):
    body = (struct.pack(">HH", ird, ord_) if v2 else b"") + pd
    ln = len(body) if pd_len is None else pd_len
    return key + struct.pack(">HH", (flags & 0xFF00) | (rev & 0xFF), ln) + body


# ------------------------------------------------------------ utilities

class CaseFail(Exception):
    pass


def recv_exact(s, n, timeout):
    s.settimeout(timeout)
    b = b""
    while len(b) < n:
        try:
            d = s.recv(n - len(b))
        except socket.timeout:
            return b, "open"
        except ConnectionResetError:
            return b, "rst"
        if not d:
            return b, "fin"
        b += d
    return b, None


def rst_close(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


class Frames:
    """What siw sent: parsed FPDUs and how the stream ended."""

    def __init__(self, raw, end, crc):
        self.raw, self.end, self.fpdus, self.junk = raw, end, [], b""
        i = 0
        while i + 2 <= len(raw):
            ln = struct.unpack(">H", raw[i:i + 2])[0]
            tot = 2 + ln + ((4 - ((ln + 2) & 3)) & 3) + 4
            if i + tot > len(raw):
                self.junk = raw[i:]
                break
            f = raw[i:i + tot]
            crc_ok = None
            if crc:
                crc_ok = struct.unpack("<I", f[-4:])[0] == crc32c(f[:-4])
            self.fpdus.append((f[2:2 + ln], crc_ok))
            i += tot
        else:
            self.junk = raw[i:]

    def terms(self):
        out = []
        for body, _ in self.fpdus:
            c = struct.unpack(">H", body[:2])[0]
            if not c & 0x8000 and c & 0xF == TERM and len(body) >= 22:
                _, inval, qn, msn, mo, tc = struct.unpack(">HIIIII", body[:22])
                out.append(dict(layer=tc >> 28, etype=(tc >> 24) & 0xF,
                                ecode=(tc >> 16) & 0xFF, flags=tc & 0xFFFF,
                                qn=qn, msn=msn, mo=mo, copy=body[22:]))
        return out

    def ops(self):
        return [struct.unpack(">H", b[:2])[0] & 0xF for b, _ in self.fpdus]


class VictimLog:
    """Follows the victim's output file."""

    def __init__(self, path):
        self.path, self.pos, self.lines = path, 0, []

    def poll(self):
        try:
            with open(self.path, "r", errors="replace") as f:
                f.seek(self.pos)
                d = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return
        self.buf = getattr(self, "buf", "") + d
        *full, self.buf = self.buf.split("\n")
        self.lines.extend(full)

    def mark(self):
        self.poll()
        return len(self.lines)

    def since(self, m):
        self.poll()
        return self.lines[m:]

    def wait(self, pred, timeout):
        end = time.time() + timeout
        while True:
            self.poll()
            for ln in self.lines:
                if pred(ln):
                    return ln
            if time.time() > end:
                return None
            time.sleep(0.05)

    def conn_lines(self, cid, m=0):
        self.poll()
        return [ln for ln in self.lines[m:]
                if re.match(r"^(WC|ASYNC|END|EV|CONN|TIMEOUT) %d( |$)" % cid, ln)]


def stats(dev):
    d = "/sys/class/infiniband/%s/ports/1/hw_counters" % dev
    try:
        return {n: int(open(os.path.join(d, n)).read()) for n in os.listdir(d)
                if n != "lifespan"}
    except (OSError, ValueError):
        pass
    try:
        out = subprocess.run(["rdma", "-j", "stat", "show", "link", dev + "/1"],
                             capture_output=True, text=True, timeout=20).stdout
        j = json.loads(out)
        d = j[0] if isinstance(j, list) else j
        if "counters" in d and isinstance(d["counters"], dict):
            d = d["counters"]
        return {k: v for k, v in d.items() if isinstance(v, int)}
    except Exception as e:  # noqa: BLE001
        print("# rdma stat failed: %s" % e)
        return {}


def kmsg_mark(name):
    mid = "siwtest-mark-wire-%d-%s-%d" % (os.getpid(), name, random.randrange(1 << 30))
    try:
        with open("/dev/kmsg", "w") as f:
            f.write("siwtest: %s\n" % mid)
    except OSError:
        pass
    return mid


TOP = os.environ.get("SIW_TOP", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))


def lib_pattern():
    """The kernel-log problem patterns every scan of the harness uses
    (scripts/logscan.patterns, one ERE per line), so the list stays in one
    place; None if they do not compile here (then every case calls the
    shell function itself, slower)."""
    try:
        with open(os.path.join(TOP, "scripts/logscan.patterns")) as f:
            pats = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError:
        return None
    try:
        return re.compile("|".join("(?:%s)" % p for p in pats)) if pats else None
    except re.error:
        return None


PROBLEM_RE = lib_pattern()


def kernel_problems(mid):
    """Problem reports the kernel logged after mark mid."""
    if PROBLEM_RE:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=60).stdout
        i = out.find("siwtest: " + mid)
        if i < 0:
            return "mark %s not found in dmesg" % mid
        bad = [ln for ln in out[i:].splitlines()[1:] if PROBLEM_RE.search(ln)]
        return "kernel reported a problem: %s" % " | ".join(bad[:5]) if bad else None
    top = TOP
    r = subprocess.run(["bash", "-c", 'source "$1/tests/lib/lib.sh"; dmesg_problems_since "$2"',
                        "_", top, mid], capture_output=True, text=True, timeout=60)
    if r.returncode:
        return (r.stderr.strip() or r.stdout.strip() or "scan failed").splitlines()[0][:300]
    return None


# -------------------------------------------------------------- the peer

class Conn:
    """One TCP connection of the peer with what the MPA exchange gave."""

    def __init__(self, sock, crc=False):
        self.s, self.crc = sock, crc
        self.msn = {0: 1, 1: 1, 2: 1}
        self.vpd = None
        self.cid = None
        self.ird = self.ord = None

    def send(self, data, slow=None):
        if slow:
            for i in range(len(data)):
                self.s.sendall(data[i:i + 1])
                time.sleep(slow)
        else:
            self.s.sendall(data)

    def f(self, body, **kw):
        kw.setdefault("crc", self.crc)
        return fpdu(body, **kw)

    def msg_send(self, payload, op=SEND, inval=0, msn=None, mo=0, last=True,
                 qn=0, **kw):
        m = self.msn[0] if msn is None else msn
        if msn is None and last:
            self.msn[0] += 1
        return self.f(untagged_hdr(op, qn, m, mo, inval, last) + payload, **kw)

    def msg_write(self, stag, to, payload, last=True, **kw):
        return self.f(tagged_hdr(WRITE, stag, to, last) + payload, **kw)

    def msg_rreq(self, sink_stag, sink_to, size, src_stag, src_to, msn=None):
        m = self.msn[1] if msn is None else msn
        if msn is None:
            self.msn[1] += 1
        return self.f(untagged_hdr(RREQ, 1, m, 0) +
                      rreq_body(sink_stag, sink_to, size, src_stag, src_to))

    def collect(self, timeout=3.0, until_close=True):
        """Read what siw sends until it closes or timeout."""
        self.s.settimeout(0.2)
        raw, end, t_end = b"", "open", time.time() + timeout
        while time.time() < t_end:
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                if not until_close and raw:
                    break
                continue
            except ConnectionResetError:
                end = "rst"
                break
            except OSError:
                end = "rst"
                break
            if not d:
                end = "fin"
                break
            raw += d
        return Frames(raw, end, self.crc)

    def close(self, how="fin"):
        try:
            if how == "rst":
                rst_close(self.s)
            else:
                self.s.shutdown(socket.SHUT_WR)
                self.collect(2.0)
                self.s.close()
        except OSError:
            pass


def parse_vpd(pd):
    if len(pd) >= 36 and pd[:4] == b"VICT":
        w = struct.unpack(">4sIQIIIII", pd[:36])
        return dict(rkey=w[1], addr=w[2], len=w[3], rkey2=w[4], rkey3=w[5],
                    rlen=w[6], nrecv=w[7] >> 16, cid=w[7] & 0xFFFF)
    return None


def init_byte(i, which=0):
    return (i * 7 + 3 + which * 101) & 0xFF


def init_bytes(off, n, which=0):
    return bytes(init_byte(off + i, which) for i in range(n))


class Peer:
    def __init__(self, a):
        self.a = a
        self.vlog = VictimLog(a.vlog)
        self.lsock = None
        self.go = 0         # passive: connections the victim may start

    # -- active side: we connect, siw answers the MPA request
    def tcp(self, rcvbuf=None):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(5)
        s.connect((self.a.addr, self.a.port))
        return s

    def read_mpa(self, s, timeout=6.0):
        """An MPA reply/request: (dict or None, end)."""
        h, end = recv_exact(s, 20, timeout)
        if len(h) < 20:
            return None, end or "short"
        key, bits, ln = h[:16], struct.unpack(">H", h[16:18])[0], struct.unpack(">H", h[18:20])[0]
        pd, end = recv_exact(s, ln, timeout)
        r = dict(key=key, bits=bits, rev=bits & 0xFF, crc=bool(bits & F_CRC),
                 rej=bool(bits & F_REJ), mark=bool(bits & F_MARK), pd=pd)
        if bits & F_ENH and len(pd) >= 4:
            r["ird"], r["ord"] = struct.unpack(">HH", pd[:4])
            r["ulp"] = pd[4:]
        else:
            r["ulp"] = pd
        return r, end

    def establish(self, crc=False, pd=b"", ird=4, ord_=4, rcvbuf=None, rev=2,
                  flags=None, slow=None, extra=b""):
        s = self.tcp(rcvbuf)
        c = Conn(s)
        fl = (F_ENH if rev == 2 else 0) | (F_CRC if crc else 0) if flags is None else flags
        c.send(mpa_frame(KEY_REQ, rev, fl, ird, ord_, pd, v2=bool(fl & F_ENH)) + extra, slow)
        r, end = self.read_mpa(s)
        if not r:
            raise CaseFail("no MPA reply (%s)" % end)
        if r["key"] != KEY_REP or r["rej"]:
            raise CaseFail("MPA reply refused: key %r bits 0x%04x" % (r["key"], r["bits"]))
        c.crc = r["crc"]
        c.ird, c.ord = r.get("ird"), r.get("ord")
        c.vpd = parse_vpd(r["ulp"])
        if not c.vpd:
            raise CaseFail("reply without victim private data: %r" % r["ulp"][:40])
        c.cid = c.vpd["cid"]
        return c

    # -- passive side: siw connects, we answer its request
    def listen(self):
        if not self.lsock:
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((self.a.addr, self.a.port))
            ls.listen(64)
            self.lsock = ls

    def accept(self, timeout=30.0):
        self.listen()
        self.lsock.settimeout(timeout)
        s, _ = self.lsock.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def take_request(self, timeout=30.0, reads=1):
        """The victim's next MPA request. A connection that died waiting
        (the victim's MPA timer runs while a case before still checks) is
        skipped. reads: RDMA Reads the victim posts on that connection
        (siw_victim -g: the go-ahead line "K READS")."""
        for _ in range(4):
            if self.a.go:
                self.go += 1
                with open(self.a.go + ".tmp", "w") as f:
                    f.write("%d %d\n" % (self.go, reads))
                os.rename(self.a.go + ".tmp", self.a.go)
            s = self.accept(timeout)
            r, end = self.read_mpa(s, 3.0)
            if r and r["key"] == KEY_REQ:
                break
            print("# skipping a victim connection without request (%s)" % end, flush=True)
            s.close()
        else:
            raise CaseFail("victim sent no MPA request (%s)" % end)
        c = Conn(s, r["crc"])
        c.req = r
        c.vpd = parse_vpd(r["ulp"])
        c.cid = c.vpd["cid"] if c.vpd else None
        return c


# ---------------------------------------------------------- expectations

class Ctx:
    """Per-case checks. Everything that goes wrong is collected."""

    def __init__(self, peer, name):
        self.p, self.name, self.errs, self.notes = peer, name, [], []
        self.vm = peer.vlog.mark()
        self.st0 = stats(peer.a.dev)

    def err(self, msg):
        self.errs.append(msg)

    def note(self, msg):
        self.notes.append(msg)

    def term(self, fr, want=None, why=""):
        """A Terminate must have come; want = (layer, etype, {codes}) or None."""
        t = fr.terms()
        if not t:
            self.err("no Terminate from siw%s (got ops %s, end %s)" % (why, fr.ops(), fr.end))
            return None
        t = t[0]
        self.note("term %d/%d/0x%02x end=%s" % (t["layer"], t["etype"], t["ecode"], fr.end))
        if t["qn"] != 2 or t["mo"] != 0:
            self.err("Terminate with qn %d mo %d (RFC 5040: qn 2, mo 0)" % (t["qn"], t["mo"]))
        if want:
            layer, etype, codes = want
            if isinstance(codes, int):
                codes = {codes}
            if t["layer"] != layer or t["etype"] != etype or t["ecode"] not in codes:
                self.err("Terminate layer/type/code %d/%d/0x%02x, want %d/%d/%s" %
                         (t["layer"], t["etype"], t["ecode"], layer, etype,
                          "|".join("0x%02x" % x for x in sorted(codes))))
        if fr.end == "open":
            self.err("siw did not close after its Terminate")
        return t

    def no_term(self, fr):
        if fr.terms():
            t = fr.terms()[0]
            self.err("unexpected Terminate %d/%d/0x%02x" % (t["layer"], t["etype"], t["ecode"]))

    def closed(self, fr):
        if fr.end == "open":
            self.err("siw kept the connection open")

    def victim(self, c, error=True, mr="same", recv_ok=None, timeout=10.0):
        """Wait for the victim's END of connection c and check it."""
        cid = c.cid if isinstance(c, Conn) else c
        if cid is None:
            self.err("victim connection unknown")
            return None
        ln = self.p.vlog.wait(lambda l: l.startswith("END %d " % cid), timeout)
        lines = self.p.vlog.conn_lines(cid)
        if not ln:
            self.err("victim connection %d did not end within %gs: %s" % (cid, timeout, lines[-4:]))
            return None
        kv = dict(x.split("=", 1) for x in ln.split()[2:])
        if kv["guard"] != "ok":
            self.err("victim guard bytes changed: %s" % kv["guard"])
        if mr and kv["mr"] != mr:
            self.err("victim MR %s (want %s)" % (kv["mr"], mr))
        if error and int(kv["wc_err"]) + int(kv["async"]) == 0:
            self.err("victim saw no error completion or event: %s" % ln)
        oks = [l for l in lines if l.startswith("WC %d status=success opcode=128" % cid)]
        if recv_ok is not None and len(oks) != recv_ok:
            self.err("victim got %d successful receives, want %d" % (len(oks), recv_ok))
        self.vend = kv
        self.vlines = lines
        return kv

    def no_victim_conn(self, settle=0.3):
        time.sleep(settle)
        new = [l for l in self.p.vlog.since(self.vm) if l.startswith("CONN ")]
        if new:
            self.err("victim got a connection it should not have: %s" % new[0])

    def counters(self, **want):
        """Each named counter grew by at least the given amount."""
        deadline = time.time() + 3
        while True:
            st = stats(self.p.a.dev)
            miss = [(k, n, st.get(k, 0) - self.st0.get(k, 0)) for k, n in want.items()
                    if st.get(k, 0) - self.st0.get(k, 0) < n]
            if not miss or time.time() > deadline:
                break
            time.sleep(0.2)
        for k, n, d in miss:
            self.err("counter %s moved by %d, want >= %d" % (k, d, n))


# ------------------------------------------------------------ the cases

CASES = []

# The default (CI) selection: one or two of each kind. --full runs all.
CI = set("""
sane sane-crc mpa-key  mpa-rev255 mpa-rev1 mpa-markers mpa-pdlen-513
mpa-pd-truncated-fin mpa-hdr-truncated-rst mpa-silence mpa-crc-flag
mpa-second-request mpa-fpdu-before-reply mpa-p2p-no-rtr mpa-p2p-rtr-send
fpdu-len0  fpdu-len-ffff-send fpdu-crc-bad fpdu-crc-missing
 fpdu-truncated-rst fpdu-garbage ddp-version-untagged
rdmap-version rdmap-opcode-8  tagged-bit-write
stag-unknown  stag-other-pd stag-no-remote-write to-past-end
to-wrap qn-3 msn-2 mo-past-buffer mo-wrap msg-too-long no-receive-posted
last-segment-never-comes rreq-over-ird rreq-4g 
rresp-unsolicited sendinv-other-pd term-garbage data-after-term mutate-seed1
slow-sender flood sane-after
rep-sane rep-key rep-rev0 rep-reject rep-pdlen-513 rep-truncated-rst
rep-silence rep-crc-unasked rep-second-reply rep-fpdu-with-reply
rep-ird-zero-read rresp-good rresp-too-long rresp-short 
rresp-terminate rresp-terminate-second-read rep-p2p-read-rtr
rep-sane-after
""".split())


def case(name, mode="active", full=None):
    def deco(fn):
        CASES.append((name, mode, name not in CI, fn))
        return fn
    return deco


def sane(x, crc=False):
    """A normal exchange: Write, Send, Read back, all checked; clean close."""
    c = x.p.establish(crc=crc)
    v = c.vpd
    data = bytes((i * 13 + 1) & 0xFF for i in range(256))
    c.send(c.msg_write(v["rkey"], v["addr"] + 100, data) +
           c.msg_send(b"hello siw, this is a sane peer!!") +
           c.msg_rreq(0x1234, 0x5000, 256, v["rkey"], v["addr"] + 100))
    fr = c.collect(4.0, until_close=False)
    rr = [b for b, _ in fr.fpdus if struct.unpack(">H", b[:2])[0] & 0xF == RRESP]
    got = b"".join(b[14:] for b in rr)
    if got != data:
        x.err("Read Response data differs: %d bytes back, %r..." % (len(got), got[:16]))
    if rr:
        stag, to = struct.unpack(">IQ", rr[0][2:14])
        if stag != 0x1234 or to != 0x5000:
            x.err("Read Response to STag 0x%x TO 0x%x, want 0x1234/0x5000" % (stag, to))
    if any(ok is False for _, ok in fr.fpdus):
        x.err("siw sent an FPDU with a bad CRC")
    x.no_term(fr)
    c.close("fin")
    kv = x.victim(c, error=False, mr="changed", recv_ok=1)
    if kv:
        exp = bytearray(init_bytes(0, v["len"]))
        exp[100:356] = data
        h = 0xcbf29ce484222325
        for b in exp:
            h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
        if kv["fnv"] != "%016x" % h:
            x.err("victim MR content differs from what was written")
        want = "data=" + b"hello siw, this is a sane peer!!".hex()
        if not any(want in l for l in x.vlines):
            x.err("victim did not receive the Send's bytes")
    x.counters(rx_fpdu=3, read_req_rx=1)


@case("sane")
def c_sane(x):
    sane(x)


@case("sane-crc")
def c_sane_crc(x):
    sane(x, crc=True)


# ---- MPA negotiation, siw as responder


def mpa_refused(x, frame, want_reply_rej=False, after=None, end_within=4.0):
    s = x.p.tcp()
    s.sendall(frame)
    if after:
        time.sleep(0.5)     # siw has accepted it and reads the frame
    if after == "fin":
        s.shutdown(socket.SHUT_WR)
    elif after == "rst":
        rst_close(s)
        x.no_victim_conn(1.0)
        x.counters(conn_fail=1)
        return
    c = Conn(s)
    fr = c.collect(end_within)
    raw = fr.raw
    if want_reply_rej:
        if len(raw) < 20 or raw[:16] != KEY_REP or not struct.unpack(">H", raw[16:18])[0] & F_REJ:
            x.err("no MPA reply with the reject bit: %r" % raw[:24])
    elif raw:
        x.err("siw answered %d bytes: %r" % (len(raw), raw[:24]))
    x.closed(fr)
    s.close()
    x.no_victim_conn()
    x.counters(conn_fail=1)


@case("mpa-key")
def c_mpa_key(x):
    mpa_refused(x, mpa_frame(b"MPA ID Rep Frame"))


@case("mpa-key-garbage")
def c_mpa_key2(x):
    mpa_refused(x, bytes(random.Random(1).randrange(256) for _ in range(24)))


for _rev in (0, 3, 255):
    @case("mpa-rev%d" % _rev)
    def _c(x, rev=_rev):
        mpa_refused(x, mpa_frame(rev=rev))


@case("mpa-rev1")
def c_mpa_rev1(x):
    """rev 1 (RFC 5044) must still work"""
    c = x.p.establish(rev=1)
    c.send(c.msg_send(b"rev1"))
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("mpa-rev2-no-irdord")
def c_rev2_short(x):
    mpa_refused(x, mpa_frame(flags=F_ENH, pd=b"", v2=False, pd_len=0))


@case("mpa-rev2-plain")
def c_rev2_plain(x):
    """rev 2 without the Linux flag: private data is the ULP's"""
    c = x.p.establish(flags=0, pd=b"")
    c.send(c.msg_send(b"plain"))
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("mpa-markers")
def c_markers(x):
    mpa_refused(x, mpa_frame(flags=F_ENH | F_MARK), want_reply_rej=True)


for _ln in (513, 0xFFFF):
    @case("mpa-pdlen-%d" % _ln)
    def _c(x, ln=_ln):
        mpa_refused(x, mpa_frame(pd=b"x" * 16, pd_len=ln))

for _how in ("fin", "rst"):
    @case("mpa-pd-truncated-%s" % _how)
    def _c(x, how=_how):
        mpa_refused(x, mpa_frame(pd=b"x" * 16, pd_len=200), after=how)

    @case("mpa-hdr-truncated-%s" % _how)
    def _c(x, how=_how):
        mpa_refused(x, mpa_frame()[:11], after=how)


@case("mpa-silence")
def c_silence(x):
    """nothing after the TCP handshake: siw gives up after mpa_timeout_ms"""
    s = x.p.tcp()
    t0 = time.time()
    fr = Conn(s).collect(x.p.a.mpa_timeout + 5)
    took = time.time() - t0
    x.closed(fr)
    if fr.raw:
        x.err("siw sent %r to a silent peer" % fr.raw[:20])
    if took < x.p.a.mpa_timeout * 0.8:
        x.err("closed after %.1fs, before mpa_timeout_ms" % took)
    x.note("closed after %.1fs" % took)
    s.close()
    x.no_victim_conn()
    x.counters(conn_fail=1)


@case("mpa-reject-bit-request")
def c_rej_req(x):
    """R in a request means nothing; either answer is fine, no crash"""
    s = x.p.tcp()
    s.sendall(mpa_frame(flags=F_ENH | F_REJ))
    r, end = x.p.read_mpa(s)
    x.note("reply %s" % ("none (%s)" % end if not r else "bits 0x%04x" % r["bits"]))
    rst_close(s)
    if r and r["key"] == KEY_REP and not r["rej"]:
        v = parse_vpd(r["ulp"])
        if v:
            x.victim(v["cid"], error=False, mr="same")


@case("mpa-crc-flag")
def c_crc_flag(x):
    """peer asks for CRC, policy does not: a peer asking gets it"""
    c = x.p.establish(crc=True)
    if not c.crc:
        x.err("siw declined the CRC the initiator asked for")
    c.send(c.msg_send(b"crc!"))
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("mpa-irdord-max")
def c_irdord(x):
    c = x.p.establish(ird=0x3FFF, ord_=0x3FFF)
    x.note("reply ird %s ord %s" % (c.ird, c.ord))
    c.send(c.msg_send(b"x"))
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("mpa-pd-500")
def c_pd500(x):
    """500 bytes of private data (iw_cm events carry at most 255)"""
    c = x.p.establish(pd=bytes(range(250)) * 2)
    c.send(c.msg_send(b"pd500"))
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("send-new-msn-mid-message")
def c_newmsn(x):
    """a new message starts while the previous one lacks its last segment"""
    fpdu_case(x, lambda c: c.msg_send(b"a" * 64, last=False) + c.msg_send(b"b" * 64, msn=2),
              want=(L_DDP, 2, 0x03))


@case("write-interleaved-send")
def c_interleave(x):
    """a Write between the segments of a Send is legal (DDP): both land"""
    c = x.p.establish()
    v = c.vpd
    c.send(c.msg_send(b"a" * 64, last=False, msn=1) + c.msg_write(v["rkey"], v["addr"], b"w" * 32) +
           c.msg_send(b"b" * 64, mo=64, msn=1))
    fr = c.collect(1.0, until_close=False)
    x.no_term(fr)
    c.close()
    x.victim(c, error=False, mr="changed", recv_ok=1)


@case("mpa-second-request")
def c_second_req(x):
    """a second request after the first is parsed as an FPDU: Terminate"""
    c = x.p.establish(extra=mpa_frame())
    fr = c.collect(4.0)
    x.term(fr)
    c.close("rst")
    x.victim(c)
    x.counters(rx_proto_err=1, term_tx=1)


@case("mpa-fpdu-before-reply")
def c_fpdu_early(x):
    """FPDUs right behind the request, before the reply: siw must keep
    them for the QP (or refuse them with a Terminate), never lose sync"""
    s = x.p.tcp()
    c = Conn(s)
    c.send(mpa_frame() + c.msg_send(b"early bird"))
    r, end = x.p.read_mpa(s)
    if not r or r["rej"]:
        x.err("no MPA reply (%s)" % end)
        return
    c.vpd = parse_vpd(r["ulp"])
    c.cid = c.vpd["cid"]
    fr = c.collect(1.5, until_close=False)
    t = fr.terms()
    x.note("early FPDU: %s" % ("Terminate %d/%d/0x%02x" % (t[0]["layer"], t[0]["etype"], t[0]["ecode"]) if t else "taken"))
    c.close()
    x.victim(c, error=bool(t), mr="same", recv_ok=0 if t else 1)


@case("mpa-p2p-no-rtr")
def c_p2p_nortr(x):
    """peer-to-peer offered, no RTR sent, data instead"""
    c = x.p.establish(ird=4 | P2P, ord_=4 | RTR_WRITE)
    c.send(c.msg_send(b"data instead of RTR"))
    fr = c.collect(1.5, until_close=False)
    t = fr.terms()
    x.note("reply ird 0x%04x ord 0x%04x; %s" % (c.ird or 0, c.ord or 0, "Terminate" if t else "taken"))
    c.close()
    x.victim(c, error=bool(t), mr="same")


@case("mpa-p2p-wrong-rtr")
def c_p2p_wrong(x):
    """Write RTR chosen, a zero-length Read Request arrives instead"""
    c = x.p.establish(ird=4 | P2P, ord_=4 | RTR_WRITE)
    c.send(c.msg_rreq(0, 0, 0, 0, 0))
    fr = c.collect(1.5, until_close=False)
    x.note("ops back %s" % fr.ops())
    c.close()
    x.victim(c, error=False, mr="same")


@case("mpa-p2p-rtr-ok")
def c_p2p_ok(x):
    c = x.p.establish(ird=4 | P2P, ord_=4 | RTR_WRITE)
    if not (c.ord or 0) & RTR_WRITE:
        x.err("siw did not pick the Write RTR offered: ord 0x%04x" % (c.ord or 0))
    c.send(c.msg_write(0, 0, b"") + c.msg_send(b"after rtr"))
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("mpa-p2p-rtr-send")
def c_p2p_send(x):
    """only the zero-length Send RTR offered: siw must pick it and hold its
    transmit until it comes; the RTR consumes no receive"""
    c = x.p.establish(ird=4 | P2P | RTR_SEND, ord_=4)
    v = c.vpd
    if not (c.ird or 0) & RTR_SEND or (c.ord or 0) & (RTR_WRITE | RTR_READ):
        x.err("siw did not pick the Send RTR offered: ird 0x%04x ord 0x%04x" % (c.ird or 0, c.ord or 0))
    # the Read Response is the victim's first transmit: it may only leave
    # after the RTR, and must then
    c.send(c.msg_send(b"") + c.msg_rreq(0x1234, 0x5000, 64, v["rkey"], v["addr"]))
    fr = c.collect(4.0, until_close=False)
    if RRESP not in fr.ops():
        x.err("no Read Response after the Send RTR: %s" % fr.ops())
    c.send(c.msg_send(b"after rtr"))
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


# ---- FPDU framing


def fpdu_case(x, raw, want=None, crc=False, after=None, recv_ok=0, mr="same",
              term=True, counters=None):
    c = x.p.establish(crc=crc)
    if callable(raw):
        raw = raw(c)
    c.send(raw)
    if after == "rst":
        time.sleep(0.3)
        rst_close(c.s)
        x.victim(c, mr=mr, recv_ok=recv_ok)
        return
    if after == "fin":
        c.s.shutdown(socket.SHUT_WR)
    fr = c.collect(4.0)
    if term:
        x.term(fr, want)
    else:
        x.closed(fr)
    c.close("rst")
    kv = x.victim(c, mr=mr, recv_ok=recv_ok)
    if kv and mr is None:
        x.note("victim MR %s" % kv["mr"])
    if counters is None:
        counters = dict(rx_proto_err=1, term_tx=1) if term else {}
    x.counters(**counters)


@case("fpdu-len0")
def c_len0(x):
    fpdu_case(x, b"\x00\x00" + bytes(30))


@case("fpdu-len1")
def c_len1(x):
    fpdu_case(x, b"\x00\x01\x43" + bytes(29))


@case("fpdu-len-short")
def c_lshort(x):
    """ULPDU shorter than the untagged header"""
    fpdu_case(x, lambda c: struct.pack(">H", 10) + untagged_hdr(SEND, 0, 1, 0)[:10] + bytes(20))


@case("fpdu-len-short-tagged")
def c_lshort_t(x):
    fpdu_case(x, lambda c: struct.pack(">H", 8) + tagged_hdr(WRITE, c.vpd["rkey"], c.vpd["addr"])[:8] + bytes(20))


@case("fpdu-len-ffff-send")
def c_lffff(x):
    """0xffff: longer than any receive buffer"""
    fpdu_case(x, lambda c: struct.pack(">H", 0xFFFF) + untagged_hdr(SEND, 0, 1, 0) + bytes(2000),
              want=(L_DDP, 2, 0x05))


@case("fpdu-len-ffff-write")
def c_lffff_w(x):
    """0xffff Write at the MR's end: beyond bounds"""
    fpdu_case(x, lambda c: struct.pack(">H", 0xFFFF) + tagged_hdr(WRITE, c.vpd["rkey"], c.vpd["addr"] + c.vpd["len"] - 1000) + bytes(2000),
              want=(L_DDP, 1, 0x01))


@case("fpdu-crc-bad")
def c_crc_bad(x):
    fpdu_case(x, lambda c: c.msg_send(b"bad crc" * 4, crc_val=0x12345678), crc=True,
              want=(L_LLP, 0, 0x02), counters=dict(rx_crc_err=1, term_tx=1), mr=None)


@case("fpdu-crc-missing")
def c_crc_missing(x):
    fpdu_case(x, lambda c: c.msg_send(b"no crc" * 4, crc=False), crc=True,
              want=(L_LLP, 0, 0x02), counters=dict(rx_crc_err=1, term_tx=1), mr=None)


@case("fpdu-crc-bad-write")
def c_crc_bad_w(x):
    """a Write with a bad CRC: placed bytes may land in the MR (direct
    placement), but nothing outside it, and the connection ends"""
    fpdu_case(x, lambda c: c.msg_write(c.vpd["rkey"], c.vpd["addr"], b"W" * 64, crc_val=0), crc=True,
              want=(L_LLP, 0, 0x02), counters=dict(rx_crc_err=1, term_tx=1), mr=None)


@case("fpdu-crc-not-negotiated")
def c_crc_nn(x):
    """CRC field ignored when CRC is off"""
    c = x.p.establish()
    c.send(c.msg_send(b"ignore my crc", crc_val=0xDEADBEEF))
    fr = c.collect(1.0, until_close=False)
    x.no_term(fr)
    c.close()
    x.victim(c, error=False, recv_ok=1)


@case("fpdu-pad-nonzero")
def c_pad(x):
    c = x.p.establish()
    c.send(c.msg_send(b"pad", pad=b"\xff"))   # 18+3=21 -> 3 pad bytes needed; give 1
    fr = c.collect(2.0)
    x.note("short pad: %s" % ("Terminate" if fr.terms() else fr.end))
    c.close("rst")
    x.victim(c, error=None, mr="same")


@case("fpdu-pad-nonzero-crc")
def c_pad_crc(x):
    """nonzero pad covered by a good CRC: taken or refused, never placed wrong"""
    c = x.p.establish(crc=True)
    c.send(c.msg_send(b"pad", pad=b"\xff\xee\xdd"))
    fr = c.collect(1.0, until_close=False)
    x.note("nonzero pad: %s" % ("Terminate" if fr.terms() else "taken"))
    c.close("rst")
    x.victim(c, error=None, mr="same")


for _how in ("fin", "rst"):
    @case("fpdu-truncated-%s" % _how)
    def _c(x, how=_how):
        fpdu_case(x, lambda c: c.msg_send(b"T" * 300)[:150], after=how, term=False,
                  recv_ok=0)

    @case("fpdu-hdr-truncated-%s" % _how)
    def _c(x, how=_how):
        fpdu_case(x, lambda c: c.msg_write(c.vpd["rkey"], c.vpd["addr"], b"T" * 64)[:9],
                  after=how, term=False, recv_ok=0)


@case("fpdu-garbage")
def c_garbage(x):
    r = random.Random(7)
    fpdu_case(x, bytes(r.randrange(256) for _ in range(400)), term=False)


# ---- DDP / RDMAP


@case("ddp-version-untagged")
def c_ddpv(x):
    fpdu_case(x, lambda c: c.f(untagged_hdr(SEND, 0, 1, 0, dv=0) + b"v0"), want=(L_DDP, 2, 0x06))


@case("ddp-version-tagged")
def c_ddpv_t(x):
    fpdu_case(x, lambda c: c.f(tagged_hdr(WRITE, c.vpd["rkey"], c.vpd["addr"], dv=2) + b"v2"),
              want=(L_DDP, 1, 0x04))


@case("rdmap-version")
def c_rdmapv(x):
    fpdu_case(x, lambda c: c.f(untagged_hdr(SEND, 0, 1, 0, rv=0) + b"r0"), want=(L_RDMAP, 2, 0x05))


for _op in range(8, 16):
    @case("rdmap-opcode-%d" % _op, full=_op not in (8, 15))
    def _c(x, op=_op):
        fpdu_case(x, lambda c: c.f(untagged_hdr(op, 0, 1, 0) + b"op"), want=(L_RDMAP, 2, 0x06))

    @case("rdmap-opcode-%d-tagged" % _op, full=_op != 9)
    def _c(x, op=_op):
        fpdu_case(x, lambda c: c.f(tagged_hdr(op, c.vpd["rkey"], c.vpd["addr"]) + b"op"),
                  want=(L_RDMAP, 2, 0x06))


@case("tagged-bit-send")
def c_tb_send(x):
    """Send with T=1"""
    fpdu_case(x, lambda c: c.f(tagged_hdr(SEND, c.vpd["rkey"], c.vpd["addr"]) + b"tag"), want=(L_RDMAP, 2, 0x06))


@case("tagged-bit-write")
def c_tb_write(x):
    """Write with T=0"""
    fpdu_case(x, lambda c: c.f(untagged_hdr(WRITE, 0, 1, 0) + b"untag"), want=(L_RDMAP, 2, 0x06))


@case("tagged-bit-rresp")
def c_tb_rresp(x):
    fpdu_case(x, lambda c: c.f(untagged_hdr(RRESP, 0, 1, 0) + b"untag"), want=(L_RDMAP, 2, 0x06))


def write_case(x, stag_fn, to_fn, n, want, full_msg=False):
    fpdu_case(x, lambda c: c.msg_write(stag_fn(c.vpd), to_fn(c.vpd), bytes(range(256)) * (n // 256) + bytes(n % 256)),
              want=want)


@case("stag-unknown")
def c_stag_unknown(x):
    write_case(x, lambda v: 0xDEADBE00, lambda v: 0, 64, (L_DDP, 1, 0x00))


for _d, _nm in ((1, "plus1"), (-1, "minus1"), (0x100, "index-next"), (-0x100, "index-prev"),
                (0x200, "index-next2")):
    @case("stag-guess-%s" % _nm, full=_nm not in ("plus1", "index-next"))
    def _c(x, d=_d):
        # a guessed STag is either invalid, or another QP's/PD's MR: refused
        write_case(x, lambda v: (v["rkey"] + d) & 0xFFFFFFFF, lambda v: v["addr"], 64,
                   (L_DDP, 1, {0x00, 0x02}))


@case("stag-other-pd")
def c_stag_pd(x):
    write_case(x, lambda v: v["rkey2"], lambda v: v["addr"], 64, (L_DDP, 1, 0x02))


@case("stag-no-remote-write")
def c_stag_acc(x):
    write_case(x, lambda v: v["rkey3"], lambda v: v["addr"], 64, (L_RDMAP, 1, 0x02))


@case("to-past-end")
def c_to_end(x):
    write_case(x, lambda v: v["rkey"], lambda v: v["addr"] + v["len"] - 8, 16, (L_DDP, 1, 0x01))


@case("to-after-end")
def c_to_after(x):
    write_case(x, lambda v: v["rkey"], lambda v: v["addr"] + v["len"], 4, (L_DDP, 1, 0x01))


@case("to-before-start")
def c_to_before(x):
    write_case(x, lambda v: v["rkey"], lambda v: v["addr"] - 16, 32, (L_DDP, 1, 0x01))


@case("to-wrap")
def c_to_wrap(x):
    write_case(x, lambda v: v["rkey"], lambda v: 2**64 - 8, 16, (L_DDP, 1, 0x03))


@case("to-near-wrap", full=True)
def c_to_nwrap(x):
    write_case(x, lambda v: v["rkey"], lambda v: 2**64 - 64, 16, (L_DDP, 1, 0x01))


@case("to-zero-length-bad-stag")
def c_zlw(x):
    """zero-length Write to a bad STag: nothing to place (RFC 5040 allows
    no check); must not crash, Terminate optional"""
    c = x.p.establish()
    c.send(c.msg_write(0xDEADBE00, 2**64 - 1, b"") + c.msg_send(b"after"))
    fr = c.collect(1.0, until_close=False)
    t = fr.terms()
    x.note("zero-length Write: %s" % ("Terminate" if t else "taken"))
    c.close()
    x.victim(c, error=bool(t), mr="same")


for _qn in (3, 4, 255, 0xFFFFFFFF):
    @case("qn-%d" % _qn, full=_qn in (4, 0xFFFFFFFF))
    def _c(x, qn=_qn):
        fpdu_case(x, lambda c: c.f(untagged_hdr(SEND, qn, 1, 0) + b"qn"), want=(L_DDP, 2, 0x01))


@case("qn-mismatch-rreq-on-0")
def c_qn_rreq(x):
    fpdu_case(x, lambda c: c.f(untagged_hdr(RREQ, 0, 1, 0) + rreq_body(1, 0, 4, c.vpd["rkey"], c.vpd["addr"])),
              want=(L_DDP, 2, 0x01))


for _msn in (0, 2, 0x80000000, 0xFFFFFFFF):
    @case("msn-%x" % _msn, full=_msn in (0x80000000,))
    def _c(x, msn=_msn):
        fpdu_case(x, lambda c: c.msg_send(b"msn", msn=msn), want=(L_DDP, 2, 0x03))


@case("msn-rreq")
def c_msn_rreq(x):
    fpdu_case(x, lambda c: c.msg_rreq(1, 0, 4, c.vpd["rkey"], c.vpd["addr"], msn=7), want=(L_DDP, 2, 0x03))


@case("mo-first-nonzero")
def c_mo_first(x):
    fpdu_case(x, lambda c: c.msg_send(b"m" * 16, mo=2000), want=(L_DDP, 2, 0x04))


@case("mo-past-buffer")
def c_mo_past(x):
    """second segment at an MO past the receive buffer"""
    fpdu_case(x, lambda c: c.msg_send(b"a" * 512, last=False) + c.msg_send(b"b" * 16, mo=4096),
              want=(L_DDP, 2, 0x04))


@case("mo-wrap")
def c_mo_wrap(x):
    """MO + len wrapping 2^32"""
    fpdu_case(x, lambda c: c.msg_send(b"a" * 512, last=False) + c.msg_send(b"b" * 512, mo=0xFFFFFF00),
              want=(L_DDP, 2, 0x04))


@case("mo-gap")
def c_mo_gap(x):
    fpdu_case(x, lambda c: c.msg_send(b"a" * 256, last=False) + c.msg_send(b"b" * 16, mo=512),
              want=(L_DDP, 2, 0x04))


@case("msg-too-long")
def c_toolong(x):
    """Send longer than the 1024-byte receive buffer, in two segments"""
    fpdu_case(x, lambda c: c.msg_send(b"a" * 768, last=False) + c.msg_send(b"b" * 768, mo=768),
              want=(L_DDP, 2, 0x05))


@case("no-receive-posted")
def c_norecv(x):
    """more Sends than posted receives"""
    fpdu_case(x, lambda c: b"".join(c.msg_send(b"s%d" % i) for i in range(c.vpd["nrecv"] + 1)),
              want=(L_DDP, 2, 0x02), recv_ok=4)


@case("last-segment-never-comes")
def c_nolast(x):
    c = x.p.establish()
    c.send(c.msg_send(b"x" * 256, last=False))
    fr = c.collect(1.5, until_close=False)
    x.no_term(fr)
    c.close("fin")
    x.victim(c, recv_ok=0)


@case("rreq-over-ird")
def c_rreq_ird(x):
    """more Read Requests outstanding than the IRD siw announced"""
    c = x.p.establish(rcvbuf=4096, ord_=1)
    v = c.vpd
    n = (c.ird or 4) + 6
    x.note("victim IRD %s, sending %d" % (c.ird, n))
    c.send(b"".join(c.msg_rreq(0x77, 0, v["len"], v["rkey"], v["addr"]) for _ in range(n)))
    time.sleep(1.0)
    fr = c.collect(8.0)
    x.term(fr)
    c.close("rst")
    x.victim(c, mr="same")
    x.counters(rx_proto_err=1, term_tx=1)


@case("rreq-4g")
def c_rreq_4g(x):
    fpdu_case(x, lambda c: c.msg_rreq(1, 0, 0xFFFFFFFF, c.vpd["rkey"], c.vpd["addr"]), want=(L_RDMAP, 1, 0x01))


@case("rreq-4g-wrap", full=True)
def c_rreq_4gw(x):
    fpdu_case(x, lambda c: c.msg_rreq(1, 0, 0xFFFFFFFF, c.vpd["rkey"], 2**64 - 0x1000), want=(L_RDMAP, 1, 0x04))


@case("rreq-past-end")
def c_rreq_end(x):
    fpdu_case(x, lambda c: c.msg_rreq(1, 0, 64, c.vpd["rkey"], c.vpd["addr"] + c.vpd["len"] - 32), want=(L_RDMAP, 1, 0x01))


@case("rreq-bad-stag")
def c_rreq_stag(x):
    fpdu_case(x, lambda c: c.msg_rreq(1, 0, 64, 0xDEADBE00, 0), want=(L_RDMAP, 1, 0x00))


@case("rreq-other-pd")
def c_rreq_pd(x):
    fpdu_case(x, lambda c: c.msg_rreq(1, 0, 64, c.vpd["rkey2"], c.vpd["addr"]), want=(L_RDMAP, 1, 0x03))


@case("rreq-no-remote-read")
def c_rreq_acc(x):
    fpdu_case(x, lambda c: c.msg_rreq(1, 0, 64, c.vpd["rkey3"], c.vpd["addr"]), want=(L_RDMAP, 1, 0x02))


@case("rreq-with-payload")
def c_rreq_pl(x):
    fpdu_case(x, lambda c: c.f(untagged_hdr(RREQ, 1, 1, 0) + rreq_body(1, 0, 4, c.vpd["rkey"], c.vpd["addr"]) + b"xxxx"),
              want=(L_DDP, 2, 0x04))


@case("rresp-unsolicited")
def c_rresp_none(x):
    fpdu_case(x, lambda c: c.f(tagged_hdr(RRESP, c.vpd["rkey"], c.vpd["addr"]) + b"R" * 64),
              want=(L_RDMAP, 2, 0x06))


@case("sendinv-other-pd")
def c_sinv_pd(x):
    fpdu_case(x, lambda c: c.msg_send(b"inv", op=SEND_INV, inval=c.vpd["rkey2"]),
              want=(L_RDMAP, 2, 0x09), recv_ok=0)


@case("sendinv-unknown")
def c_sinv_unk(x):
    fpdu_case(x, lambda c: c.msg_send(b"inv", op=SEND_SE_INV, inval=0xDEADBE00),
              want=(L_RDMAP, 2, 0x09), recv_ok=0)


@case("sendinv-user-mr", full=True)
def c_sinv_own(x):
    """invalidating the QP's own user MR: allowed or refused; then a Write
    to it must follow what was decided"""
    c = x.p.establish()
    c.send(c.msg_send(b"inv", op=SEND_INV, inval=c.vpd["rkey"]))
    fr = c.collect(1.0, until_close=False)
    x.note("Send with Invalidate of own MR: %s" % ("Terminate" if fr.terms() else "taken"))
    c.close("rst")
    x.victim(c, error=None, mr="same")


def term_frame(c, layer, etype, ecode, flags=0, copy=b"", msn=1, ulpdu=None):
    body = untagged_hdr(TERM, 2, msn, 0) + struct.pack(">I", layer << 28 | etype << 24 | ecode << 16 | flags) + copy
    if ulpdu is not None:
        return struct.pack(">H", ulpdu) + body + bytes(8)
    return c.f(body)


@case("term-garbage")
def c_term_garbage(x):
    """peer's Terminate with nonsense fields: siw stops, sends no Terminate back"""
    r = random.Random(3)
    c = x.p.establish()
    c.send(term_frame(c, 0xF, 0xF, 0xFF, 0xFFFF, bytes(r.randrange(256) for _ in range(28)), msn=0x12345))
    fr = c.collect(4.0)
    x.no_term(fr)
    x.closed(fr)
    c.close("rst")
    x.victim(c, mr="same")
    x.counters(term_rx=1)


@case("term-short")
def c_term_short(x):
    fpdu_case(x, lambda c: term_frame(c, 0, 0, 0, ulpdu=10), want=None)


@case("term-long")
def c_term_long(x):
    fpdu_case(x, lambda c: term_frame(c, 0, 0, 0, copy=bytes(200)), want=None)


@case("term-tagged")
def c_term_t(x):
    fpdu_case(x, lambda c: c.f(tagged_hdr(TERM, 0, 0) + bytes(8)), want=(L_RDMAP, 2, 0x06))


@case("data-after-term")
def c_after_term(x):
    c = x.p.establish()
    v = c.vpd
    c.send(term_frame(c, 0, 2, 0xFF) + c.msg_write(v["rkey"], v["addr"], b"late" * 16) +
           c.msg_send(b"late send"))
    fr = c.collect(4.0)
    x.no_term(fr)
    c.close("rst")
    x.victim(c, mr="same", recv_ok=0)
    x.counters(term_rx=1)


# ---- random mutation, slow sender, flood


def mutate_case(x, seed, nconn):
    r = random.Random(seed)
    for k in range(nconn):
        c = x.p.establish(crc=bool(r.randrange(2)))
        v = c.vpd
        frames = [c.msg_send(bytes(r.randrange(256) for _ in range(r.randrange(1, 200)))),
                  c.msg_write(v["rkey"], v["addr"] + r.randrange(0, 4096), bytes(r.randrange(1, 300))),
                  c.msg_rreq(0x99, 0, r.randrange(1, 512), v["rkey"], v["addr"]),
                  term_frame(c, 1, 2, 3)]
        raw = bytearray(b"".join(r.choice(frames[:3]) for _ in range(r.randrange(1, 5))))
        for _ in range(r.randrange(1, 5)):
            i = r.randrange(len(raw))
            op = r.randrange(3)
            if op == 0:
                raw[i] ^= 1 << r.randrange(8)
            elif op == 1:
                raw[i] = r.choice((0, 0xFF, 0x7F, 0x80, r.randrange(256)))
            else:
                del raw[i:i + r.randrange(1, 8)]
        c.send(bytes(raw))
        fr = c.collect(1.5, until_close=False)
        c.close("rst" if r.randrange(2) else "fin")
        x.victim(c, error=None, mr=None)
        t = fr.terms()
        x.note("m%d:%s" % (k, "%d/%d/%x" % (t[0]["layer"], t[0]["etype"], t[0]["ecode"]) if t else "-"))


@case("mutate-seed1")
def c_mut1(x):
    mutate_case(x, 1, x.p.a.mutations)


@case("mutate-seed2", full=True)
def c_mut2(x):
    mutate_case(x, 2, x.p.a.mutations * 4)


@case("mutate-seed3", full=True)
def c_mut3(x):
    mutate_case(x, 3, x.p.a.mutations * 4)


@case("slow-sender")
def c_slow(x):
    """MPA request and a Send, one byte per 100 ms"""
    c = x.p.establish(slow=0.1, pd=b"")
    c.send(c.msg_send(b"slow"), slow=0.1)
    c.close()
    x.victim(c, error=False, recv_ok=1)


@case("slow-sender-write", full=True)
def c_slow_w(x):
    c = x.p.establish()
    v = c.vpd
    c.send(c.msg_write(v["rkey"], v["addr"], b"S" * 40) + c.msg_send(b"done"), slow=0.1)
    c.close()
    x.victim(c, error=False, recv_ok=1, mr="changed")


@case("flood")
def c_flood(x):
    """a burst of connections: silent, half a request, a request then RST;
    siw must close every one and still serve a sane peer afterwards"""
    n = x.p.a.flood * (3 if x.p.a.full else 1)
    socks = []
    for i in range(n):
        try:
            s = x.p.tcp()
        except OSError as e:
            x.note("connect %d: %s" % (i, e))
            continue
        kind = i % 3
        if kind == 1:
            s.sendall(mpa_frame()[:10])
        elif kind == 2:
            s.sendall(mpa_frame())
        socks.append((kind, s))
    time.sleep(0.5)
    for kind, s in socks:
        if kind == 2:
            rst_close(s)
    # every silent/partial connection must be closed by siw by mpa_timeout
    end = time.time() + x.p.a.mpa_timeout + 8
    open_ = 0
    for kind, s in socks:
        if kind == 2:
            continue
        fr = Conn(s).collect(max(0.1, end - time.time()))
        if fr.end == "open":
            open_ += 1
        s.close()
    if open_:
        x.err("%d flood connections still open after mpa_timeout" % open_)
    # requests that got as far as the victim must end there too
    time.sleep(1.0)
    ids = [int(l.split()[1]) for l in x.p.vlog.since(x.vm) if l.startswith("CONN ")]
    for cid in ids:
        x.victim(cid, error=None, mr="same", timeout=15)
    x.note("%d connections, %d reached the victim" % (len(socks), len(ids)))
    x.counters(conn_fail=1)


@case("sane-after")
def c_sane_after(x):
    sane(x)


# ---- passive side: siw connects to us and parses our MPA reply


def reply_case(x, reply, want_event, extra=b"", after=None):
    c = x.p.take_request()
    c.send(reply + extra)
    if after == "fin":
        c.s.shutdown(socket.SHUT_WR)
    fr = c.collect(x.p.a.mpa_timeout + 5)
    x.closed(fr)
    c.close("rst")
    ev = x.p.vlog.wait(lambda l: re.match(r"^EV %s RDMA_CM_EVENT_(REJECTED|CONNECT_ERROR|UNREACHABLE|ESTABLISHED)" % c.cid, l), 10)
    if not ev:
        x.err("victim saw no connect outcome")
    elif want_event and want_event not in ev:
        x.err("victim event %s, want %s" % (ev, want_event))
    x.victim(c, error=None, mr="same")
    x.counters(conn_fail=1)


def rep(rev=2, flags=F_ENH, ird=4, ord_=4, pd=b"", pd_len=None, key=KEY_REP, v2=True):
    return mpa_frame(key, rev, flags, ird, ord_, pd, v2, pd_len)


@case("rep-sane", mode="passive")
def c_rep_sane(x):
    c = x.p.take_request()
    if not c.vpd:
        x.err("victim request without its private data")
        return
    r = c.req
    x.note("request rev %d bits 0x%04x ird %s ord %s" % (r["rev"], r["bits"], r.get("ird"), r.get("ord")))
    c.send(rep(ird=4, ord_=4))
    v = c.vpd
    c.send(c.msg_write(v["rkey"], v["addr"], b"P" * 64) + c.msg_send(b"passive sane"))
    fr = c.collect(1.0, until_close=False)
    x.no_term(fr)
    c.close()
    x.victim(c, error=False, mr="changed", recv_ok=1)


@case("rep-key", mode="passive")
def c_rep_key(x):
    reply_case(x, rep(key=KEY_REQ), "CONNECT_ERROR")


for _rev in (0, 3, 255):
    @case("rep-rev%d" % _rev, mode="passive")
    def _c(x, rev=_rev):
        reply_case(x, rep(rev=rev), None)


@case("rep-markers", mode="passive")
def c_rep_mark(x):
    reply_case(x, rep(flags=F_ENH | F_MARK), None)


@case("rep-reject", mode="passive")
def c_rep_rej(x):
    reply_case(x, rep(flags=F_ENH | F_REJ, pd=b"go away"), "REJECTED")


for _ln in (513, 0xFFFF):
    @case("rep-pdlen-%d" % _ln, mode="passive")
    def _c(x, ln=_ln):
        reply_case(x, rep(pd=b"x" * 8, pd_len=ln), None)

for _how in ("fin", "rst"):
    @case("rep-truncated-%s" % _how, mode="passive")
    def _c(x, how=_how):
        c = x.p.take_request()
        c.send(rep(pd=b"x" * 8, pd_len=100))
        time.sleep(0.2)
        if how == "rst":
            rst_close(c.s)
        else:
            c.s.shutdown(socket.SHUT_WR)
            c.collect(3.0)
            c.s.close()
        ev = x.p.vlog.wait(lambda l: re.match(r"^EV %s RDMA_CM_EVENT_(REJECTED|CONNECT_ERROR|UNREACHABLE|ESTABLISHED)" % c.cid, l), 10)
        if not ev or "ESTABLISHED" in ev:
            x.err("victim outcome %s" % ev)
        x.victim(c, error=None, mr="same")
        x.counters(conn_fail=1)


@case("rep-slow", mode="passive")
def c_rep_slow(x):
    """the reply one byte per 100 ms, inside the MPA timer"""
    c = x.p.take_request()
    c.send(rep(), slow=0.1)
    c.send(c.msg_send(b"slow reply"))
    fr = c.collect(1.0, until_close=False)
    x.no_term(fr)
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("rep-pd-500", mode="passive")
def c_rep_pd500(x):
    c = x.p.take_request()
    c.send(rep(pd=bytes(range(250)) * 2))
    c.send(c.msg_send(b"pd500"))
    fr = c.collect(1.0, until_close=False)
    x.no_term(fr)
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("rep-silence", mode="passive")
def c_rep_sil(x):
    reply_case(x, b"", None)


@case("rep-rev2-without-irdord", mode="passive")
def c_rep_noird(x):
    reply_case(x, rep(v2=False, pd_len=0), None)


@case("rep-crc-unasked", mode="passive")
def c_rep_crc(x):
    """reply turns CRC on: siw follows; then an FPDU without CRC is a CRC error"""
    c = x.p.take_request()
    c.send(rep(flags=F_ENH | F_CRC))
    c.crc = True
    c.send(c.msg_send(b"no crc here", crc=False))
    fr = c.collect(4.0)
    x.term(fr, (L_LLP, 0, 0x02))
    c.close("rst")
    x.victim(c, mr="same", recv_ok=0)
    x.counters(rx_crc_err=1)


@case("rep-second-reply", mode="passive")
def c_rep_twice(x):
    c = x.p.take_request()
    c.send(rep() + rep())
    fr = c.collect(4.0)
    x.term(fr)
    c.close("rst")
    x.victim(c, mr="same")
    x.counters(rx_proto_err=1, term_tx=1)


@case("rep-fpdu-with-reply", mode="passive")
def c_rep_glued(x):
    """an FPDU in the same segment as the reply belongs to the QP"""
    c = x.p.take_request()
    c.send(rep() + c.msg_send(b"glued to the reply"))
    fr = c.collect(1.0, until_close=False)
    x.no_term(fr)
    c.close()
    x.victim(c, error=False, mr="same", recv_ok=1)


@case("rep-ird-zero-read", mode="passive")
def c_rep_ird0(x):
    """responder says IRD 0: the victim's Read (-r) must not go out

    The Read completes in error (ORD 0 allows none) and that takes the
    QP to error, so the Send rides in the reply's segment: it must have
    landed before the victim sees ESTABLISHED and posts the Read.
    """
    c = x.p.take_request()
    c.send(rep(ird=0, ord_=0) + c.msg_send(b"ird0"))
    fr = c.collect(1.5, until_close=False)
    x.no_term(fr)
    if RREQ in fr.ops():
        x.err("siw sent a Read Request to a responder with IRD 0")
    c.close()
    if x.victim(c, error=True, mr="same", recv_ok=1) is None:
        return
    bad = [l for l in x.vlines if l.startswith("WC %d status=local QP operation error" % c.cid)]
    if len(bad) != 1:
        x.err("victim's Read with ORD 0 did not complete as a local QP "
              "operation error: %s" % x.vlines[-6:])


# -------------------------------------------------------------- driver

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("active", "passive"))
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--vlog", required=True)
    ap.add_argument("--dev", required=True)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--xfail", default="")
    ap.add_argument("--mpa-timeout", type=float, default=4.0)
    ap.add_argument("--mutations", type=int, default=6)
    ap.add_argument("--flood", type=int, default=24)
    ap.add_argument("--go", default="", help="passive: go-ahead file of siw_victim -g")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    sel = [(n, m, f, fn) for n, m, f, fn in CASES if m == a.mode and (a.full or not f)
           and (not a.only or re.search(a.only, n))]
    if a.list:
        for n, *_ in sel:
            print(n)
        return 0
    print("PLAN %s %d %s" % (a.mode, len(sel), " ".join(n for n, *_ in sel)), flush=True)
    xfail = set()
    if a.xfail and os.path.exists(a.xfail):
        for ln in open(a.xfail):
            ln = ln.split("#")[0].strip()
            if ln:
                xfail.add(ln)
    p = Peer(a)
    if a.mode == "passive":
        p.listen()
        print("# listening", flush=True)
    res = {"PASS": 0, "FAIL": 0, "XFAIL": 0, "XPASS": 0}
    t_all = time.time()
    for name, _, _, fn in sel:
        t0 = time.time()
        mid = kmsg_mark(name)
        x = Ctx(p, name)
        try:
            fn(x)
        except CaseFail as e:
            x.err(str(e))
        except (OSError, struct.error) as e:
            x.err("peer error: %r" % e)
        time.sleep(0.1)
        kp = kernel_problems(mid)
        if kp:
            x.err("kernel report: %s" % kp)
        key = "%s/%s" % (a.mode, name)
        ok = not x.errs
        if key in xfail or name in xfail:
            st = "XPASS" if ok else "XFAIL"
        else:
            st = "PASS" if ok else "FAIL"
        res[st] += 1
        print("CASE %s %s %.1fs %s" % (name, st, time.time() - t0,
                                       "; ".join(x.errs + x.notes)), flush=True)
    ran = sum(res.values())
    print("SUMMARY %s ran=%d of %d %s total %.0fs" % (a.mode, ran, len(sel),
                                                    " ".join("%s=%d" % kv for kv in res.items()),
                                                    time.time() - t_all), flush=True)
    if not sel or ran != len(sel):
        print("# ran %d of %d planned cases" % (ran, len(sel)), flush=True)
        return 1
    return 0 if res["FAIL"] == 0 and res["XPASS"] == 0 else 1



# ---- Read Responses to the victim's own RDMA Read (victim -r READLEN)


def rresp_case(x, make, want, mr="same", term=True, read_err=True):
    """make(c, sink_stag, sink_to, size) -> bytes answering the Read"""
    c = x.p.take_request()
    c.send(rep())
    fr = c.collect(3.0, until_close=False)
    rq = [b for b, _ in fr.fpdus if struct.unpack(">H", b[:2])[0] & 0xF == RREQ]
    if not rq:
        x.err("victim posted no Read (ops %s)" % fr.ops())
        c.close("rst")
        return
    sink_stag, sink_to, size, src_stag, src_to = struct.unpack(">IQIIQ", rq[0][18:46])
    if src_stag != 0xABC or src_to != 0x1000:
        x.err("Read Request source 0x%x/0x%x, victim asked 0xabc/0x1000" % (src_stag, src_to))
    c.send(make(c, sink_stag, sink_to, size))
    fr = c.collect(4.0 if term else 1.0, until_close=term)
    if term:
        x.term(fr, want)
        x.counters(rx_proto_err=1, term_tx=1)
    else:
        x.no_term(fr)
    c.close("rst")
    kv = x.victim(c, error=term, mr=mr)
    if kv and term and read_err and not any(re.match(r"^WC %d status=(?!success).* opcode=2 " % c.cid, l)
                                            for l in x.vlines):
        x.err("victim's Read did not complete in error")


def rresp_body(stag, to, data, last=True):
    return tagged_hdr(RRESP, stag, to, last) + data


@case("rresp-good", mode="passive")
def c_rresp_good(x):
    def mk(c, st, to, n):
        return c.f(rresp_body(st, to, b"G" * n))
    rresp_case(x, mk, None, mr="changed", term=False)
    if not any(re.match(r"^WC \d+ status=success opcode=2 ", l) for l in x.p.vlog.since(x.vm)):
        x.err("victim's Read did not complete successfully")


@case("rresp-too-long", mode="passive")
def c_rresp_long(x):
    """one byte more than asked: the sink is the MR's last bytes, the
    extra byte would hit the guard"""
    rresp_case(x, lambda c, st, to, n: c.f(rresp_body(st, to, b"L" * (n + 1))), (L_DDP, 1, 0x01))


@case("rresp-too-long-2seg", mode="passive")
def c_rresp_long2(x):
    rresp_case(x, lambda c, st, to, n: c.f(rresp_body(st, to, b"L" * n, last=False)) +
               c.f(rresp_body(st, to + n, b"M" * 64)), (L_DDP, 1, 0x01), mr=None)


@case("rresp-short", mode="passive")
def c_rresp_short(x):
    rresp_case(x, lambda c, st, to, n: c.f(rresp_body(st, to, b"S" * (n // 2))), (L_DDP, 1, 0x01), mr=None)


@case("rresp-wrong-stag", mode="passive")
def c_rresp_stag(x):
    rresp_case(x, lambda c, st, to, n: c.f(rresp_body(st ^ 0x100, to, b"W" * n)), (L_DDP, 1, 0x00))


@case("rresp-wrong-to", mode="passive")
def c_rresp_to(x):
    rresp_case(x, lambda c, st, to, n: c.f(rresp_body(st, to + 8, b"W" * n)), (L_DDP, 1, 0x01))


@case("rresp-two", mode="passive")
def c_rresp_two(x):
    """a second Read Response with nothing outstanding"""
    rresp_case(x, lambda c, st, to, n: c.f(rresp_body(st, to, b"A" * n)) + c.f(rresp_body(st, to, b"B" * n)),
               (L_RDMAP, 2, 0x06), mr=None, read_err=False)


@case("rresp-terminate", mode="passive")
def c_rresp_term(x):
    """the peer refuses the victim's Read with a Terminate (remote
    protection error, invalid STag): the Read completes with a remote
    access error, siw sends no Terminate back"""
    rresp_case(x, lambda c, st, to, n: term_frame(c, L_RDMAP, 1, 0x00),
               None, term=False)
    if not any(re.match(r"^WC \d+ status=remote access error opcode=2 ", l)
               for l in x.p.vlog.since(x.vm)):
        x.err("victim's Read did not complete with a remote access error: %s" %
              [l for l in x.p.vlog.since(x.vm) if l.startswith("WC")][:3])
    x.counters(term_rx=1)


@case("rresp-terminate-second-read", mode="passive")
def c_rresp_term2(x):
    """two Reads of the victim outstanding; the peer refuses the SECOND with
    a Terminate whose copied headers (RFC 5040 4.8: M, D and R set; the DDP
    Segment Length, the DDP untagged header with QN 1 and that Read
    Request's MSN, the RDMA Read Request header) name it. The Terminate
    fails the Read it names with its error (remote protection: remote
    access error); the first Read, which nothing refused, is flushed when
    the QP goes to error (issue 21, defect 10)"""
    c = x.p.take_request(reads=2)
    c.send(rep())
    raw, end = b"", time.time() + 4.0
    while time.time() < end:
        raw += c.collect(0.5, until_close=False).raw
        fr = Frames(raw, "open", c.crc)
        rq = [b for b, _ in fr.fpdus if struct.unpack(">H", b[:2])[0] & 0xF == RREQ]
        if len(rq) >= 2:
            break
    if len(rq) != 2:
        x.err("victim posted %d Read Requests, want 2 (ops %s)" % (len(rq), fr.ops()))
        c.close("rst")
        x.victim(c, error=None, mr=None)
        return
    qn2, msn2 = struct.unpack(">II", rq[1][6:14])
    msn1 = struct.unpack(">I", rq[0][10:14])[0]
    src2 = struct.unpack(">IQ", rq[1][34:46])
    x.note("Read Requests MSN %d and %d; the Terminate names MSN %d" % (msn1, msn2, msn2))
    if qn2 != 1 or msn2 != msn1 + 1 or src2 != (0xABC, 0x2000):
        x.err("second Read Request: qn %d msn %d source 0x%x/0x%x (want qn 1, msn %d, 0xabc/0x2000)"
              % (qn2, msn2, src2[0], src2[1], msn1 + 1))
    copy = struct.pack(">H", len(rq[1])) + rq[1]
    c.send(term_frame(c, L_RDMAP, 1, 0x00, flags=0xE000, copy=copy))
    fr = c.collect(4.0)
    x.no_term(fr)
    c.close("rst")
    if x.victim(c, error=True, mr="same") is None:
        return
    want = {100: "Work Request Flushed Error", 101: "remote access error"}
    got = {}
    for ln in x.vlines:
        m = re.match(r"^WC %d status=(.*) opcode=2 len=\d+ wr=(\d+)" % c.cid, ln)
        if m:
            got.setdefault(int(m.group(2)), []).append(m.group(1))
    x.note("Read completions %s" % sorted(got.items()))
    for wr, st in sorted(want.items()):
        if got.get(wr) != [st]:
            x.err("Read %d (wr %d, %s one) completed %s, want [%s]" %
                  (wr - 99, wr, "named" if wr == 101 else "unnamed", got.get(wr), st))
    x.counters(term_rx=1)


class Param:
    """Set a module parameter for one case."""

    def __init__(self, name, val):
        self.path = "/sys/module/siw/parameters/" + name
        self.val = val

    def __enter__(self):
        self.old = open(self.path).read().strip()
        with open(self.path, "w") as f:
            f.write(self.val)

    def __exit__(self, *a):
        with open(self.path, "w") as f:
            f.write(self.old)


def p2p_case(x, ird_bits, ord_bits, answer):
    with Param("mpa_p2p", "Y"):
        c = x.p.take_request()
    r = c.req
    if not (r.get("ird", 0) & P2P):
        x.err("victim's request (mpa_p2p=Y) does not offer peer-to-peer: ird 0x%04x" % r.get("ird", 0))
    c.send(rep(ird=4 | ird_bits, ord_=4 | ord_bits))
    return c, answer(c)


@case("rep-p2p-unoffered-rtr", mode="passive")
def c_p2p_unoff(x):
    """the responder picks the zero-length Send RTR the initiator did not offer"""
    c, _ = p2p_case(x, P2P | RTR_SEND, 0, lambda c: None)
    fr = c.collect(4.0)
    x.closed(fr)
    c.close("rst")
    ev = x.p.vlog.wait(lambda l: re.match(r"^EV %s RDMA_CM_EVENT_(REJECTED|CONNECT_ERROR|UNREACHABLE|ESTABLISHED)" % c.cid, l), 10)
    if not ev or "ESTABLISHED" in ev:
        x.err("victim outcome %s, want a failed connect" % ev)
    x.victim(c, error=None, mr="same")
    x.counters(conn_fail=1)


def p2p_rtr_flow(x, ord_bit, want_first):
    c, _ = p2p_case(x, P2P, ord_bit, lambda c: None)
    fr = c.collect(2.0, until_close=False)
    ops = [(struct.unpack(">H", b[:2])[0] & 0xF, len(b)) for b, _ in fr.fpdus]
    x.note("ops %s" % ops)
    if not ops or ops[0][0] != want_first[0] or ops[0][1] != want_first[1]:
        x.err("first FPDU %s, want the RTR %s" % (ops[:1], want_first))
    rq = [b for b, _ in fr.fpdus if struct.unpack(">H", b[:2])[0] & 0xF == RREQ]
    real = [b for b in rq if struct.unpack(">I", b[34:38])[0] == 0xABC]
    out = b""
    if ord_bit == RTR_READ:
        out += c.f(rresp_body(0, 0, b""))   # answers the RTR Read
    if real:
        sink_stag, sink_to, size = struct.unpack(">IQI", real[0][18:34])
        out += c.f(rresp_body(sink_stag, sink_to, b"R" * size))
    else:
        x.err("victim's Read did not go out after the RTR")
    c.send(out)
    fr2 = c.collect(1.0, until_close=False)
    x.no_term(fr2)
    c.close()
    x.victim(c, error=False, mr="changed" if real else "same")
    if real and not any(re.match(r"^WC %d status=success opcode=2 " % c.cid, l) for l in x.vlines):
        x.err("victim's Read did not complete after the RTR")


@case("rep-p2p-write-rtr", mode="passive")
def c_p2p_w(x):
    p2p_rtr_flow(x, RTR_WRITE, (WRITE, 14))


@case("rep-p2p-read-rtr", mode="passive")
def c_p2p_r(x):
    p2p_rtr_flow(x, RTR_READ, (RREQ, 46))


@case("rep-sane-after", mode="passive")
def c_rep_sane2(x):
    c_rep_sane(x)


if __name__ == "__main__":
    sys.exit(main())
