#!/usr/bin/env python3
"""Tables and plot data for scripts/bench.sh.

usage: bench-report.py RAW.tsv META.txt OUTDIR
Writes OUTDIR/results.md (all tables), OUTDIR/profile.md (perf tops, when
OUTDIR/profile-*.txt exist), OUTDIR/sweep.dat and OUTDIR/qps.dat (gnuplot
input). Only reports; asserts nothing.
"""
import glob
import os
import statistics as st
import sys

raw, metaf, out = sys.argv[1], sys.argv[2], sys.argv[3]
meta = {}
for l in open(metaf):
    for kv in l.split():
        if '=' in kv:
            k, v = kv.split('=', 1)
            meta[k] = v
rows = [l.rstrip('\n').split('\t') for l in open(raw)]
hdr, rows = rows[0], rows[1:]
R = [dict(zip(hdr, r)) for r in rows]
# ---- the host's own speed during the runs (scripts/bench-hostwatch.py) ----
HOST_SLOW = 1.3
hostf = {}
probes = []
if os.path.exists(os.path.join(out, 'host.tsv')):
    hruns = []
    for line in open(os.path.join(out, 'host.tsv')):
        f = line.rstrip('\n').split('\t')
        if f[0] == 'probe' and len(f) == 3:
            probes.append((float(f[1]), float(f[2])))
        elif f[0] == 'run' and len(f) == 6:
            hruns.append((float(f[1]), f[2], f[3], f[4], float(f[5])))
    if probes:
        pmed = st.median(v for _, v in probes)
        for t, i, te, rp, d in hruns:
            # the line reaches the log within a probe's second of the run's end
            ps = [v for pt, v in probes if t - d - 1.5 <= pt <= t]
            if ps:
                hostf[(i, te, rp)] = max(ps) / pmed
# The main table's points for an implementation that did not run them in
# the table phase (the kernel's siw, rxe) come from the sweep's turns at
# the same size; its latency rows from the latency phase's turns.
ALIAS = {'write_bw_64k': 'sweep_write_65536', 'read_bw_64k': 'sweep_read_65536',
         'send_bw_1m': 'sweep_send_1048576', 'write_lat_64': 'mix_write_lat_64',
         'send_lat_64': 'mix_send_lat_64', 'read_lat_64': 'mix_read_lat_64'}
aliased = set()
for _t, _src in ALIAS.items():
    for _i in sorted({r['impl'] for r in R}):
        if not any(r['impl'] == _i and r['test'] == _t for r in R):
            extra = [dict(r, test=_t, run_test=_src) for r in R if r['impl'] == _i and r['test'] == _src]
            if extra:
                aliased.add((_i, _t))
            R += extra
MEM = []
if os.path.exists(os.path.join(out, 'mem.tsv')):
    m = [l.rstrip('\n').split('\t') for l in open(os.path.join(out, 'mem.tsv'))]
    MEM = [dict(zip(m[0], r)) for r in m[1:]]
o = open(os.path.join(out, 'results.md'), 'w')


def p(s=''):
    o.write(s + '\n')


def num(x):
    try:
        v = float(x)
        return v if v == v and v != float('inf') else None
    except (TypeError, ValueError):
        return None


def med(vals):
    vals = [v for v in vals if v is not None]
    return st.median(vals) if vals else None


def cell(impl, test, key='value'):
    rs = [r for r in R if r['impl'] == impl and r['test'] == test]
    if not rs:
        return None, ''
    ok = [r for r in rs if r['status'] == 'ok']
    v = med([num(r[key]) for r in ok])
    note = '' if len(ok) == len(rs) else f' ({len(ok)}/{len(rs)} ok)'
    if any(r['status'] == 'zero' for r in rs):
        note += ' (0.00 printed in %d)' % sum(r['status'] == 'zero' for r in rs)
    if ok and v is None:
        note = ' (inf)' if any(r[key] == 'inf' for r in ok) else note
    return v, note


def val(impl, test, key='value'):
    return cell(impl, test, key)[0]


def fmt(v, note='', d=1):
    return ('n/a' if v is None else f'{v:.{d}f}') + note


def ratio(a, b):
    return 'n/a' if a is None or b is None or b == 0 else f'{a / b:.2f}'


def cpu_ms(impl, test, key='cpu_kernel_s'):
    """median guest CPU ms per MiB moved"""
    rs = [r for r in R if r['impl'] == impl and r['test'] == test and r['status'] == 'ok']
    return med([num(r[key]) * 1000 / (float(r['bytes']) / 1048576)
                for r in rs if num(r['bytes']) and num(r[key]) is not None])


def cpu(impl, test):
    k, a = cpu_ms(impl, test), cpu_ms(impl, test, 'cpu_total_s')
    return 'n/a' if k is None else f'{k:.1f} / {a:.1f}'


def steady(impl, test, key='steady_kernel_ms'):
    """median steady-state CPU ms per MiB on the link (bench-guest.sh samp_stop)"""
    return med([num(r.get(key)) for r in R
                if r['impl'] == impl and r['test'] == test and r['status'] == 'ok'])


def sty(impl, test):
    k, a = steady(impl, test), steady(impl, test, 'steady_total_ms')
    return 'n/a' if k is None else f'{k:.1f} / {a:.1f}'


def size_name(s):
    s = int(s)
    if s >= 1 << 20:
        return f'{s >> 20} MiB'
    if s >= 1 << 10:
        return f'{s >> 10} KiB'
    return f'{s} B'


def runs(impl, test, key='value'):
    """{round: value} of the ok runs"""
    return {r['rep']: num(r[key]) for r in R
            if r['impl'] == impl and r['test'] == test and r['status'] == 'ok'
            and num(r[key]) is not None}


def span(impl, test, scale=1.0, d=1):
    v = [x * scale for x in runs(impl, test).values()]
    return 'n/a' if not v else f'{min(v):.{d}f}-{max(v):.{d}f}'


def turn_ratios(a, ta, b, tb, key='value'):
    ra, rb = runs(a, ta, key), runs(b, tb, key)
    return [ra[k] / rb[k] for k in ra if k in rb and rb[k]]


def turns(a, ta, b, tb, key='value'):
    q = turn_ratios(a, ta, b, tb, key)
    return 'n/a' if not q else f'{min(q):.2f}-{max(q):.2f} ({len(q)})'


bw = [('write_bw_64k', 'ib_write_bw 64 KiB'), ('read_bw_64k', 'ib_read_bw 64 KiB'),
      ('send_bw_1m', 'ib_send_bw 1 MiB')]
# diagnostic rows, not goals: perftest sleeping on completion events
diag = [('read_bw_64k_ev', 'ib_read_bw 64 KiB, events (-e)')]
lat = [('write_lat_64', 'ib_write_lat 64 B'), ('send_lat_64', 'ib_send_lat 64 B'),
       ('read_lat_64', 'ib_read_lat 64 B')]
reps = max([int(r['rep']) for r in R if r['test'] in dict(bw + lat)] or [0])
p(f"Benchmark {meta.get('date', '?')}, kernel {meta.get('kernel', '?')} "
  f"(qemu {meta.get('accel', 'tcg').upper()}, 2 vCPUs, two netns joined by veth, clock source "
  f"{meta.get('clock', 'hpet')}), "
  f"commit {meta.get('commit', '?')}; main table median of {reps} runs; host load at start "
  f"{meta.get('host_load', '?')} on {meta.get('host_cpus', '?')} CPUs; "
  f"{'quick run; ' if meta.get('quick') == '1' else ''}"
  f"whole bench {meta.get('wall', '?')} wall (build excluded).")
p()
tcp = val('tcp', 'iperf3')
if any(r['test'] in dict(bw) for r in R):
    p('### Main table')
    p()
    p('Throughput in MiB/s (higher is better); latency in us, perftest t_typical '
      '(lower is better; ratios < 1 mean ours is faster). The "events (-e)" row is a '
      'diagnostic, not a goal: perftest waits for completion events instead of busy-polling '
      'its CQ, leaving the vCPU to the kernel as iperf3 does by blocking in its system calls.')
    if aliased:
        p()
        src = sorted({f"{i} {t}" for i, t in aliased})
        p('Taken from the other phases\' turns (same tool, same size, fewer iterations for the '
          'bandwidth points, about 32 MiB a run): ' + ', '.join(src) + '.')
    p()
    p('| test | TCP (iperf3) | ours | ours zero-copy | ours CRC | reference siw | rxe | ours/ref | ours/rxe | ours/TCP | zero-copy/ours | CRC/ours |')
    p('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    tcp, tn = cell('tcp', 'iperf3')
    p(f'| TCP stream, 1 flow | {fmt(tcp, tn)} | | | | | | | | | | |')
    for t, name in bw + diag:
        o_, on = cell('ours', t); f, fn = cell('ref', t); x, xn = cell('rxe', t)
        z, zn = cell('ourszc', t); c, cn = cell('ourscrc', t)
        p(f'| {name} | | {fmt(o_, on)} | {fmt(z, zn)} | {fmt(c, cn)} | {fmt(f, fn)} | {fmt(x, xn)} | '
          f'{ratio(o_, f)} | {ratio(o_, x)} | {ratio(o_, tcp)} | {ratio(z, o_)} | {ratio(c, o_)} |')
    for t, name in lat:
        o_, on = cell('ours', t); f, fn = cell('ref', t); x, xn = cell('rxe', t)
        p(f'| {name} (us) | | {fmt(o_, on)} | | | {fmt(f, fn)} | {fmt(x, xn)} | {ratio(o_, f)} | {ratio(o_, x)} | | | |')
    p()
    p('Guest CPU time per MiB moved (ms/MiB; /proc/stat over the client run, both '
      'vCPUs, both netns; "kernel" = system+irq+softirq, "total" adds user time, '
      'which for perftest is mostly CQ busy-polling):')
    p()
    p('| test | TCP kernel / total | ours kernel / total | ours zero-copy | ours CRC | reference | rxe | ours kernel / TCP kernel |')
    p('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    p(f"| TCP stream | {cpu('tcp', 'iperf3')} | | | | | | |")
    tk = cpu_ms('tcp', 'iperf3')
    for t, name in bw + diag:
        p(f"| {name} | | {cpu('ours', t)} | {cpu('ourszc', t)} | {cpu('ourscrc', t)} | {cpu('ref', t)} | "
          f"{cpu('rxe', t)} | {ratio(cpu_ms('ours', t), tk)} |")
    p()
    if any(num(r.get('steady_kernel_ms')) is not None for r in R):
        p('The same, over the transfer alone (steady state): the guest samples /proc/stat and the '
          'bytes crossing the veth link (both directions, headers included) every 0.1 s during the '
          'run and sums the intervals that moved at least half the busiest one\'s bytes, so '
          'connection setup, buffer registration and perftest\'s TSC calibration (a gettimeofday '
          'loop) are left out. ms of CPU per '
          'MiB on the link, kernel / total (rxe runs on loopback, not over the link: n/a):')
        p()
        p('| test | TCP | ours | ours zero-copy | ours CRC | reference | ours kernel / TCP kernel |')
        p('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
        p(f"| TCP stream | {sty('tcp', 'iperf3')} | | | | | |")
        for t, name in bw + diag:
            p(f"| {name} | | {sty('ours', t)} | {sty('ourszc', t)} | {sty('ourscrc', t)} | {sty('ref', t)} | "
              f"{ratio(steady('ours', t), steady('tcp', 'iperf3'))} |")
        p()
    # every run and every turn: the spread behind the medians above
    p('Spread: min-max of the runs (MiB/s, us), and of the ratios taken turn by turn '
      '(each round runs every implementation once, in the order TCP, ours, its variants, '
      'the reference siw, rxe; in brackets the number of turns with both results):')
    p()
    p('| test | TCP | ours | reference siw | rxe | ours/ref per turn | ours/rxe per turn | ours/TCP per turn |')
    p('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    p(f"| TCP stream, 1 flow | {span('tcp', 'iperf3')} | | | | | | |")
    for t, name in bw + diag + lat:
        unit = ' (us)' if (t, name) in lat else ''
        tt = turns('ours', t, 'tcp', 'iperf3') if (t, name) not in lat else ''
        p(f"| {name}{unit} | | {span('ours', t)} | {span('ref', t)} | {span('rxe', t)} | "
          f"{turns('ours', t, 'ref', t)} | {turns('ours', t, 'rxe', t)} | {tt} |")
    p()
    avg = []
    for t, name in lat:
        avg.append(f"{name}: " + ', '.join(f"{i} {fmt(val(i, t, 'value2'))}" for i in ('ours', 'ref', 'rxe')))
    p('Latency averages (us): ' + '; '.join(avg) + '.')
    p()

# ---- message-size sweep and message rate ----
sizes = sorted({int(r['test'].rsplit('_', 1)[1]) for r in R if r['test'].startswith('sweep_')})
stcp = val('tcp', 'iperf3_sweep')
stcp_t = 'iperf3_sweep'
if stcp is None:
    stcp, stcp_t = tcp, 'iperf3'
if sizes:
    nr = max(int(r['rep']) for r in R if r['test'].startswith('sweep_'))
    p('### Bandwidth vs message size')
    p()
    # ours' runs from 64 KiB up may move more (SIW_BENCH_SWEEP_BIG): their rows say
    bigb = [num(r['bytes']) for r in R if r['impl'] == 'ours' and r['test'].startswith('sweep_')
            and int(r['test'].rsplit('_', 1)[1]) >= 65536 and num(r['bytes'])]
    big = f'{med(bigb) / 1048576:.0f}' if bigb else meta.get('sweep_mib', '32')
    big = '' if big == meta.get('sweep_mib', '32') else f'; ours from 64 KiB up about {big} MiB'
    p(f"{nr} run(s) per point (about {meta.get('sweep_mib', '32')} MiB moved per run{big}, 8 to 5000 "
      'iterations), taking turns: each round runs TCP (iperf3, one stream, 5 s), then every '
      'point for ours, the reference siw and rxe. Median MiB/s; ours/TCP is the median '
      'against the median of the TCP turns '
      f"({fmt(stcp)} MiB/s, runs {span('tcp', stcp_t)}), and per turn its min-max. Plot: "
      '[bench-sweep.svg](bench-sweep.svg).')
    p()
    with open(os.path.join(out, 'sweep.dat'), 'w') as d:
        d.write(f'# size then ours ref rxe for write, read, send; tcp={stcp}\n')
        for s in sizes:
            vals = [val(i, f'sweep_{k}_{s}') for k in ('write', 'read', 'send') for i in ('ours', 'ref', 'rxe')]
            d.write(f'{s} ' + ' '.join('NaN' if v is None else f'{v:.2f}' for v in vals) +
                    f" {'NaN' if stcp is None else f'{stcp:.2f}'}\n")
    for k in ('write', 'read', 'send'):
        p(f'| ib_{k}_bw size | ours | reference siw | rxe | ours/ref | ours/rxe | ours/TCP | ours/TCP per turn | ours runs |')
        p('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
        for s in sizes:
            t = f'sweep_{k}_{s}'
            o_, on = cell('ours', t); f, fn = cell('ref', t); x, xn = cell('rxe', t)
            p(f'| {size_name(s)} | {fmt(o_, on)} | {fmt(f, fn)} | {fmt(x, xn)} | {ratio(o_, f)} | '
              f"{ratio(o_, x)} | {ratio(o_, stcp)} | {turns('ours', t, 'tcp', stcp_t)} | {span('ours', t)} |")
        p()

# message rate: the small sizes of the sweep (one QP) and the mqN_ points
mq = sorted({r['test'].split('_')[0] for r in R if r['test'].startswith('mq')})
mr_sizes = sorted({int(r['test'].rsplit('_', 1)[1]) for r in R if r['test'].startswith('mq')})
mr_rows = []  # (label, test, size)
for s in mr_sizes:
    for k in ('write', 'read', 'send'):
        if any(r['test'] == f'sweep_{k}_{s}' for r in R):
            mr_rows.append((f'ib_{k}_bw {size_name(s)}, 1 QP', f'sweep_{k}_{s}', s))
        for m in mq:
            mr_rows.append((f'ib_{k}_bw {size_name(s)}, {m[2:]} QPs', f'{m}_{k}_{s}', s))
if mr_rows:
    p('### Message rate')
    p()
    p('The same runs as the sweep (one QP) and the same sizes with several QPs '
      '(`-q`, aggregate), taking turns. Million messages per second (perftest\'s '
      'MiB/s x 2^20 / size / 10^6), median of the rounds; per turn: min-max of the '
      'ratios within a round (in brackets the number of rounds).')
    p()
    p('| test | ours | reference siw | rxe | ours/ref | ours/ref per turn | ours/rxe | ours/rxe per turn |')
    p('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for name, t, sz in mr_rows:
        mp = 1048576 / sz / 1e6
        cells = []
        for i in ('ours', 'ref', 'rxe'):
            v, n_ = cell(i, t)
            cells.append(fmt(None if v is None else v * mp, n_, 3))
        o_, f, x = val('ours', t), val('ref', t), val('rxe', t)
        p(f"| {name} | {' | '.join(cells)} | {ratio(o_, f)} | {turns('ours', t, 'ref', t)} | "
          f"{ratio(o_, x)} | {turns('ours', t, 'rxe', t)} |")
    p()

# ---- QP count ----
qs = sorted({int(r['test'].rsplit('_', 1)[1]) for r in R if r['test'].startswith('qp_write_')})
if qs:
    p('### Bandwidth vs QP count')
    p()
    p('`ib_write_bw -s 65536 -q Q`, aggregate MiB/s over all QPs, one run per '
      'point; kernel CPU in ms per MiB moved. Plot: [bench-qps.svg](bench-qps.svg).')
    p()
    p('| QPs | ours | reference siw | rxe | ours/ref | ours/rxe | ours/TCP | ours kernel ms/MiB | ref kernel ms/MiB | rxe kernel ms/MiB |')
    p('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    with open(os.path.join(out, 'qps.dat'), 'w') as d:
        d.write(f'# qps ours ref rxe (MiB/s) then kernel ms/MiB ours ref rxe; tcp={tcp}\n')
        for q in qs:
            t = f'qp_write_{q}'
            o_, on = cell('ours', t); f, fn = cell('ref', t); x, xn = cell('rxe', t)
            ks = [cpu_ms(i, t) for i in ('ours', 'ref', 'rxe')]
            p(f'| {q} | {fmt(o_, on)} | {fmt(f, fn)} | {fmt(x, xn)} | {ratio(o_, f)} | {ratio(o_, x)} | '
              f'{ratio(o_, tcp)} | ' + ' | '.join(fmt(k) for k in ks) + ' |')
            d.write(f'{q} ' + ' '.join('NaN' if v is None else f'{v:.2f}' for v in [o_, f, x] + ks) +
                    f" {'NaN' if tcp is None else f'{tcp:.2f}'}\n")
    p()

# ---- connection setup ----
names = {'ours': 'ours', 'base': 'base', 'ref': 'reference siw', 'rxe': 'rxe (loopback)'}
cms = [r for r in R if r['test'] == 'cm_rate']
if cms:
    p('### Connection setup rate')
    p()
    p('`tests/bin/siw_cmrate rate -n N` in h1 against `siw_cmtest listen` in h2: '
      'N connections one after the other, each resolve + QP + connect + '
      'ESTABLISHED + disconnect + DISCONNECTED + destroy. Kernel CPU is the '
      'guest-wide system+irq+softirq time per connection.')
    p()
    held = max([int(m['n']) for m in MEM if m['kind'] == 'conn'] or [0])
    if held:
        p('The "held" rows measure the same while the memory phase holds '
          f'{held} established connections (siw_cmrate hold) on the same devices; '
          'its first round is the memory phase\'s own (ours, then the reference siw), '
          'further rounds take turns the same way.')
        p()
    p('Without connections held, the implementations take turns (phase cm: each '
      'round loads each once): cells are medians over the rounds, "per turn" the '
      'min-max of the ratios to the reference siw of the same round.')
    p()
    p('| implementation | connections | runs | per second | connect median (ms) | kernel CPU ms per connection | rate / ref | per turn | median / ref | per turn |')
    p('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for test, suffix in (('cm_rate', ''), ('cm_rate_held', f', {held} held' if held else ', held')):
        ref_rate, ref_med = val('ref', test), val('ref', test, 'value2')
        for i in ('ours', 'base', 'ref', 'rxe'):
            rs = [r for r in R if r['impl'] == i and r['test'] == test]
            ok = [r for r in rs if r['status'] == 'ok']
            if not rs:
                continue
            if not ok:
                p(f'| {names[i]}{suffix} | | {len(rs)} | failed | | | | | | |')
                continue
            n = float(ok[0]['bytes'])
            rate, mdn = val(i, test), val(i, test, 'value2')
            kcpu = med([float(r['cpu_kernel_s']) * 1000 / float(r['bytes']) for r in ok])
            tr = turns(i, test, 'ref', test) if i != 'ref' else ''
            tm = turns(i, test, 'ref', test, 'value2') if i != 'ref' else ''
            p(f"| {names[i]}{suffix} | {int(n)} | {len(ok)}/{len(rs)} | {rate:.1f} | {mdn:.2f} | "
              f"{kcpu:.2f} | {ratio(rate, ref_rate)} | {tr} | {ratio(mdn, ref_med)} | {tm} |")
    p()

# ---- connection setup, step by step ----
STEPS = [('resolve', 'address and route resolution (active)'),
         ('qp_active', 'CQ and QP created (active)'),
         ('connect_call', 'rdma_connect() returns'),
         ('to_request', 'rdma_connect() called -> CONNECT_REQUEST at the listener'),
         ('qp_passive', 'CQ and QP created (passive)'),
         ('accept_call', 'rdma_accept() returns'),
         ('accept_to_estab', 'rdma_accept() called -> ESTABLISHED at the active end'),
         ('connect', 'connect median: rdma_connect() called -> ESTABLISHED'),
         ('disconnect', 'rdma_disconnect() called -> DISCONNECTED (active)'),
         ('disc_passive', 'rdma_disconnect() called -> DISCONNECTED (passive)'),
         ('destroy_active', 'QP, CQ and id destroyed (active)'),
         ('destroy_passive', 'QP, CQ and id destroyed (passive)'),
         ('cycle', 'one connection, start to destroyed (active)')]
if any(r['test'].startswith('cm_rate_step_') for r in R):
    p('### Connection setup, step by step')
    p()
    p('The same connections as the rate rows, timed in the two programs '
      '(`siw_cmrate -T`, `siw_cmtest listen -T`, CLOCK_MONOTONIC in one guest) '
      'and joined by connection: per round the median over its connections, '
      'ms; cells the median over the rounds, "per turn" the min-max of the '
      'ratios to the reference siw of the same round. The steps overlap: the '
      'connect median is the way to CONNECT_REQUEST, the passive CQ and QP '
      'and rdma_accept() -> ESTABLISHED together (medians do not add up '
      'exactly), rdma_accept() returning lies within the last, and the '
      'passive end tears down while the active end does.')
    p()
    im = [i for i in ('ours', 'base', 'ref', 'rxe')
          if any(r['impl'] == i and r['test'].startswith('cm_rate_step_') for r in R)]
    vs = [i for i in ('ours', 'base') if i in im] if 'ref' in im else []
    p('| step | ' + ' | '.join(names[i] for i in im) + ''.join(f' | {i} / ref | per turn' for i in vs) + ' |')
    p('| --- |' + ' ---: |' * (len(im) + 2 * len(vs)))
    for k, what in STEPS:
        t = 'cm_rate_step_' + k
        if all(val(i, t) is None for i in im):
            continue
        p(f'| {what} | ' + ' | '.join(fmt(val(i, t), d=3) for i in im) +
          ''.join(f' | {ratio(val(i, t), val("ref", t))} | {turns(i, t, "ref", t)}' for i in vs) + ' |')
    p()

# ---- memory ----
if MEM:
    p('### Memory per QP and per connection')
    p()
    p('/proc/meminfo before (after drop_caches) and while N objects are held by '
      '`siw_cmrate qps` (RC QPs of 64+64 WRs, one 128-entry CQ each, not '
      'connected) or `siw_cmrate hold` (N established connections; a connection '
      'counts both ends: two QPs, two CQs, two TCP sockets). KiB per object; '
      '"free drop" is the fall of MemFree, user-space pages included.')
    p()
    p('| implementation | object | N | slab | vmalloc | page tables | percpu | free drop |')
    p('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    names = {'ours': 'ours', 'ref': 'reference siw', 'rxe': 'rxe'}
    for m in MEM:
        p(f"| {names.get(m['impl'], m['impl'])} | {m['kind']} | {m['n']} | " +
          ' | '.join(f"{float(m[k]):.1f}" for k in ('slab_kb', 'vmalloc_kb', 'pagetables_kb', 'percpu_kb', 'memfree_drop_kb')) + ' |')
    p()

# ---- latency, taking turns (phase lat) ----
def seq(impl, test):
    """values of every row of IMPL/TEST in run order (None: failed)"""
    return [num(r['value']) if r['status'] == 'ok' else None
            for r in R if r['impl'] == impl and r['test'] == test]


def round_ratios(test):
    a, b = seq('ours', test), seq('ref', test)
    return [x / y for x, y in zip(a, b) if x is not None and y]


mixed = [(k, f'mono_{k}_lat_64', f'mix_{k}_lat_64') for k in ('write', 'send', 'read')]
if any(seq('ours', m) or seq('ours', x) for _, m, x in mixed):
    rounds = max(len(seq(i, t)) for i in ('ours', 'ref', 'rxe') for _, m, x in mixed for t in (m, x))
    p('### Latency, implementations taking turns')
    p()
    p(f'{rounds} rounds in the same boot, after the other phases; each round loads ours, '
      'the reference siw and rxe in turn and runs, 64 B: `tests/bin/siw_lat` (median of '
      'per-iteration CLOCK_MONOTONIC times; write and send half the round trip, read the '
      'whole) and perftest (t_typical, TSC-timed). Cells: median over the rounds, us; '
      'ours/ref per round: min-max of the ratios of the same round.')
    p()
    p('| test | tool | ours | reference siw | rxe | ours/ref | ours/ref per round | ours/rxe |')
    p('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for k, m, x in mixed:
        for t, tool in ((m, 'siw_lat'), (x, f'ib_{k}_lat')):
            o_, on = cell('ours', t); f, fn = cell('ref', t); r_, rn = cell('rxe', t)
            rr = round_ratios(t)
            span = f'{min(rr):.2f}-{max(rr):.2f}' if rr else 'n/a'
            p(f'| {k} 64 B | {tool} | {fmt(o_, on, 2)} | {fmt(f, fn, 2)} | {fmt(r_, rn, 2)} | '
              f'{ratio(o_, f)} | {span} | {ratio(o_, r_)} |')
    p()

# ---- issue 24 goals ----
# goals: (goal, median ratio or None, limit, True if it must be >= limit, per-turn ratios)


def rat(a, b):
    return None if a is None or b is None or b == 0 else a / b


def goals_of():
    """the goals from the rows in R (module-global, as val() reads them)"""
    goals = []
    for name, t, sz in mr_rows:
        goals.append((f'message rate {name} vs reference', rat(val('ours', t), val('ref', t)), 1.5, True,
                      turn_ratios('ours', t, 'ref', t)))
        goals.append((f'message rate {name} vs rxe', rat(val('ours', t), val('rxe', t)), 1.0, True,
                      turn_ratios('ours', t, 'rxe', t)))
    for k in ('write', 'send', 'read'):
        for t, tool in ((f'mono_{k}_lat_64', 'siw_lat'), (f'mix_{k}_lat_64', f'ib_{k}_lat')):
            if val('ours', t) is not None:
                goals.append((f'latency {k} 64 B ({tool}, taking turns) vs reference',
                              rat(val('ours', t), val('ref', t)), 0.9, False, round_ratios(t)))
    for test, what in (('cm_rate', ''), ('cm_rate_held', ', connections held')):
        if any(r['test'] == test for r in R):
            goals.append((f'connections per second{what} vs reference', rat(val('ours', test), val('ref', test)),
                          1.0, True, turn_ratios('ours', test, 'ref', test)))
            goals.append((f'connect median{what} vs reference', rat(val('ours', test, 'value2'), val('ref', test, 'value2')),
                          1.0, False, turn_ratios('ours', test, 'ref', test, 'value2')))
    for s in sizes:
        if s < 65536:
            continue
        for k in ('write', 'read', 'send'):
            t = f'sweep_{k}_{s}'
            goals.append((f'bandwidth ib_{k}_bw {size_name(s)} (sweep) vs TCP', rat(val('ours', t), val('tcp', stcp_t)), 0.9, True,
                          turn_ratios('ours', t, 'tcp', stcp_t)))
    return goals


def is_met(g):
    return g[1] is not None and (g[1] >= g[2] if g[3] else g[1] <= g[2])


goals = goals_of()
# a diagnostic: the same goals without the runs taken while the host itself
# was slow, all implementations alike (rows not timed by the host watch, the
# connection rows, stay)
steady = None
if hostf:
    R_all = R
    R = [r for r in R if hostf.get((r['impl'], r.get('run_test', r['test']), r['rep']), 0) < HOST_SLOW]
    steady = goals_of()
    R = R_all

if hostf:
    p("### The host's speed during the runs")
    p()
    nslow = sum(1 for _, v in probes if v >= HOST_SLOW * pmed)
    p(f'`scripts/bench-hostwatch.py` timed a fixed piece of work on the host once a second by the CPU '
      f'time it took, so waiting for a CPU does not count: median {pmed:.1f} ms over {len(probes)} '
      f'probes, {nslow} of them ({100 * nslow / len(probes):.0f}%) at {HOST_SLOW}x that or more. '
      'The host is a container on a shared machine, whose other load it cannot see (no steal time). '
      '"host" is the slowest probe within a run against the median; a run at '
      f'{HOST_SLOW}x or more ran while the host itself was slow, for every implementation alike.')
    p()
    byi = {}
    for (i, _t, _r), v in hostf.items():
        a = byi.setdefault(i, [0, 0])
        a[0] += v >= HOST_SLOW
        a[1] += 1
    p('Runs with the host at ' + f'{HOST_SLOW}x or more: ' +
      ', '.join(f"{i} {a[0]} of {a[1]}" for i, a in sorted(byi.items())) + '.')
    p()
    bpts = [f'sweep_{k}_{sz}' for sz in sizes if sz >= 65536 for k in ('write', 'read', 'send')]
    reps_ = sorted({r['rep'] for r in R if r['test'] in bpts + [stcp_t]}, key=int)
    if reps_:
        p('The bandwidth goals\' runs, MiB/s and in brackets the host\'s factor, by round:')
        p()
        p('| run | ' + ' | '.join(f'round {x}' for x in reps_) + ' |')
        p('| --- |' + ' ---: |' * len(reps_))
        tcp_rows = [('tcp', stcp_t)] if any(r['impl'] == 'tcp' and r['test'] == stcp_t for r in R) else []
        for impl, t in tcp_rows + [('ours', b) for b in bpts]:
            cells = []
            for x in reps_:
                rr = [r for r in R if r['impl'] == impl and r['test'] == t and r['rep'] == x and r['status'] == 'ok']
                hf = hostf.get((impl, t, x))
                cells.append('' if not rr else f"{float(rr[0]['value']):.1f}" + ('' if hf is None else f' ({hf:.1f})'))
            p(f"| {'TCP (iperf3)' if impl == 'tcp' else t} | " + ' | '.join(cells) + ' |')
        p()

if goals:
    p('### Issue 24 goals, measured (ratio in this run)')
    p()
    p('Met when the median ratio clears the target; "per turn" is how far the ratios of '
      'single rounds reach (lower is better for latency and connect median).')
    p()
    p('| goal | target | median | per turn | met |')
    p('| --- | ---: | ---: | ---: | --- |')
    for g, v, lim, ge, q in goals:
        met = 'n/a' if v is None else ('yes' if (v >= lim if ge else v <= lim) else 'no')
        qs = f'{min(q):.2f}-{max(q):.2f}' if q else ''
        p(f"| {g} | {'>=' if ge else '<='} {lim:.1f} | {'n/a' if v is None else f'{v:.2f}'} | {qs} | {met} |")
    p()
    p(f'{sum(map(is_met, goals))} of {len(goals)} goals met.')
    p()
    if steady:
        nm = sum(map(is_met, steady))
        nn = sum(1 for g in steady if g[1] is None)
        p(f'A diagnostic, not the goals: with every perftest and iperf3 run taken while the host was at '
          f'{HOST_SLOW}x or more left out ("The host\'s speed" above; all implementations alike; the '
          f'connection rows are not timed so), {nm} of {len(steady)} goals met, {len(steady) - nm - nn} '
          f'missed and {nn} left without runs on one side.')
        p()

# ---- A/B: this tree against the module at another revision (--base) ----
ab = sorted({r['test'] for r in R if r['impl'] == 'base'} & {r['test'] for r in R if r['impl'] == 'ours'},
            key=lambda t: [r['test'] for r in R].index(t))
if ab:
    p(f"### A/B: this tree against {meta.get('base', 'the base revision')}")
    p()
    p('The module built from this tree ("ours") and at the base revision ("base"), taking '
      'turns in the same boot. Median of the rounds (MiB/s for bandwidth, us for latency); '
      'ours/base per turn: min-max of the ratios within a round.')
    p()
    p('| test | ours | base | ours/base | per turn |')
    p('| --- | ---: | ---: | ---: | ---: |')
    for t in ab:
        if t in ALIAS:
            continue
        o_, on = cell('ours', t); b_, bn = cell('base', t)
        p(f"| {t} | {fmt(o_, on, 2)} | {fmt(b_, bn, 2)} | {ratio(o_, b_)} | {turns('ours', t, 'base', t)} |")
    p()

fails = [r for r in R if r['status'] == 'fail']
if fails:
    p('Failed runs: ' + ', '.join(f"{r['impl']} {r['test']} rep {r['rep']}" for r in fails) + '.')
o.close()

# ---- profile ----
profs = sorted(glob.glob(os.path.join(out, 'profile-*.txt')))
if profs:
    order = ['tcp-iperf3', 'ours-write_bw_64k', 'ours-read_bw_64k', 'ours-send_bw_1m', 'lat-ours', 'lat-ref',
             'cm-ours', 'cm-ref']
    profs.sort(key=lambda f: order.index(os.path.basename(f)[8:-4]) if os.path.basename(f)[8:-4] in order else 9)
    with open(os.path.join(out, 'profile.md'), 'w') as q:
        q.write(f"Profile {meta.get('date', '?')}, kernel {meta.get('kernel', '?')}, commit "
                f"{meta.get('commit', '?')}: `perf record -a -g -e cpu-clock -F 499` in the bench "
                "guest for the whole client run (both vCPUs, both netns, connection setup "
                "included), `perf report --no-children --sort dso,sym`, top 15 entries "
                "(self time; `[k]` kernel, `[.]` user), then the top 15 kernel entries without the idle loop. "
                "The `*-write_lat_64` entries, ours and the reference siw in the same boot: `perf record -a "
                "-e cpu-clock -F 1999` (no call graphs) during a long `siw_lat` 64 B RDMA Write ping-pong; "
                "each symbol as CPU microseconds per round trip (both vCPUs summed), the idle loop left out. "
                "The `*-connect` entries: the same sampling (-F 999) during half the connection-rate "
                "phase's connections (`siw_cmrate rate`), as CPU microseconds per connection.\n\n")
        for f in profs:
            lines = open(f).read().splitlines()
            q.write(f"**{lines[0].lstrip('# ').split(':')[0]}**\n\n```\n")
            for l in lines[1:]:
                q.write(('\n' if l.startswith('## k') else '') + l.rstrip() + '\n')
            q.write('```\n\n')
