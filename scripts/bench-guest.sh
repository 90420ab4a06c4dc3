#!/usr/bin/env bash
# Guest side of scripts/bench.sh (run by scripts/vm.sh on the stock kernel).
# One boot: netns h1/h2 joined by veth (tests/lib/lib.sh netns_pair), then
#   tcp   iperf3, one stream, h1 -> h2
#   ours  this project's siw (build/$KVER/siw.ko)
#   ourszc  the same with zero-copy transmit (modprobe siw zcopy_min=16384)
#   ref   the kernel's siw (build/ref/$KVER/siw.ko, scripts/build-ref.sh),
#         after rmmod of ours, same boot
#   rxe   rdma_rxe
#   ourscrc ours loaded with mpa_crc_required=1 (CRC on both ends)
# each perftest with -R in iteration mode (-n). Phases (SIW_BENCH_PHASES,
# default "table sweep cm mem lat"; qps and ourszc on request):
#   table    the main table (SIW_BENCH_REPS repetitions, median)
#   sweep    write/read/send bandwidth, 64 B .. 4 MiB, one QP, and the
#            message rate at 64 B and 4 KiB with 4 QPs; TCP, ours, ref and
#            rxe taking turns (ref and rxe up to 4 KiB, 64 KiB, 1 MiB),
#            SIW_BENCH_SWEEP_ROUNDS (3) rounds (SIW_BENCH_SWEEP_ONLY: a
#            regex, only the points it matches)
#   qps      ib_write_bw 64 KiB with -q 1 4 16 64 (ours ref rxe)
#   cm       rdma_cm connect+disconnect rate (tests/bin/siw_cmrate rate
#            against siw_cmtest listen), ours, base, ref and rxe taking
#            turns, SIW_BENCH_CM_ROUNDS (3) rounds
#   mem      slab/vmalloc/free memory before and while N QPs / connections
#            are held (siw_cmrate qps / hold) -> $SIW_BENCH_OUT/mem.tsv;
#            with the connections held, the cm rate again (cm_rate_held)
#   profile  perf record -a -g during ib_write/read/send_bw (ours) and
#            iperf3 -> $SIW_BENCH_OUT/profile-*.txt (not in the default
#            list: scripts/bench.sh --profile)
#   proflat  CPU per 64 B write, send and read round trip and per
#            connection by symbol (perf record -a), ours and ref taking
#            turns, SIW_BENCH_PROF_ROUNDS (3) rounds ->
#            profile-lat-IMPL-OP-rN.txt, profile-cm-IMPL-rN.txt,
#            proflat.tsv (not in the default list: scripts/bench.sh --proflat)
#   hops     scheduler/work queue/softirq events per connection and per
#            64 B round trip (ours, ref) -> profile-hops-*.txt (not in the
#            default list: scripts/bench.sh --hops)
#   apps     NVMe over Fabrics: nvme-rdma over ours and the kernel's siw
#            and nvme-tcp to one nvmet target, taking turns (scripts/
#            bench-apps.sh; not in the default list: scripts/bench.sh --apps)
#   lat      64 B latency of ours, ref and rxe taking turns, round by round
#            (SIW_BENCH_LAT_ROUNDS, 3): tests/bin/siw_lat (CLOCK_MONOTONIC)
#            and perftest's ib_*_lat; after the other phases
# Raw rows are appended to $SIW_BENCH_RAW (TSV, see the header line);
# scripts/bench.sh makes the tables. Env: SIW_BENCH_REPS (3),
# SIW_BENCH_SCALE (1; iteration counts are multiplied by it, may be
# fractional), SIW_BENCH_IMPLS ("tcp ours ourszc ourscrc ref rxe"),
# SIW_BENCH_QUICK (1: fewer sweep/QP points, 50 connections), SIW_BENCH_PIN
# (1: clients on vCPU 0, servers on vCPU 1).
source tests/lib/lib.sh
set +e +E
trap - ERR
raw=${SIW_BENCH_RAW:?}
reps=${SIW_BENCH_REPS:-3}
scale=${SIW_BENCH_SCALE:-1}
impls=${SIW_BENCH_IMPLS:-tcp ours ourscrc ref rxe}
phases=" ${SIW_BENCH_PHASES:-table sweep cm mem lat} "
quick=${SIW_BENCH_QUICK:-0}
out=${SIW_BENCH_OUT:-$(dirname "$raw")}
has() { [[ $phases == *" $1 "* ]]; }
# SIW_BENCH_PIN=1: every client on vCPU 0 and every server on vCPU 1
# (taskset), as two hosts would never share a CPU; unpinned, the guest's
# scheduler sometimes puts both on one vCPU, which halves a stream
# (docs/results/2026-12-06-sweep-slow-mode-placement.txt)
pin1=() pin2=()
[[ ${SIW_BENCH_PIN:-0} == 1 ]] && pin1=(taskset -c 0) pin2=(taskset -c 1)
H2=10.88.0.2
log() { echo "bench: $*"; }
mkdir -p "$(dirname "$raw")"
printf 'impl\ttest\trep\tstatus\tvalue\tvalue2\tbytes\tcpu_total_s\tcpu_kernel_s\twall_s\tsteady_kernel_ms\tsteady_total_ms\n' >"$raw"
printf 'impl\tkind\tn\tslab_kb\tvmalloc_kb\tpagetables_kb\tpercpu_kb\tmemfree_drop_kb\n' >"$out/mem.tsv"
rm -f "$out"/profile-*.txt "$out/proflat.tsv"

# /proc/stat "cpu" line -> "busy kernel" in jiffies (USER_HZ)
cpu_now() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $4 + $7 + $8; exit }' /proc/stat; }
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
# row IMPL TEST REP STATUS VALUE VALUE2 BYTES CPU0 CPU1 T0 T1; the steady
# state's CPU per MiB (samp_stop) goes along when it was measured
steady=("" "")
row() {
	local c0=($8) c1=($9)
	awk -v OFS='\t' -v i="$1" -v t="$2" -v r="$3" -v s="$4" -v v="$5" -v v2="$6" -v b="$7" \
		-v ct=$((c1[0] - c0[0])) -v ck=$((c1[1] - c0[1])) -v hz="$hz" -v t0="${10}" -v t1="${11}" \
		-v sk="${steady[0]}" -v st="${steady[1]}" \
		'BEGIN { print i, t, r, s, v, v2, b, ct / hz, ck / hz, t1 - t0, sk, st }' >>"$raw"
	steady=("" "")
}

# CPU per MiB of the transfer alone. /proc/stat over a whole client run
# also counts what every run pays once: perftest's TSC calibration (a
# gettimeofday loop, a system call per read with this guest's HPET
# clock), buffer allocation and registration, connection setup. So a
# sampler reads the CPU counters and the bytes crossing the veth link
# (both directions, headers included: the same basis for TCP and RDMA)
# every 0.1 s, and samp_stop sums the intervals that moved at least half
# the busiest interval's bytes: ms of CPU (kernel, total) per MiB on the
# link, in steady[]. Needs 5 such intervals, else none is given.
samp_start() {
	rm -f /tmp/samples /tmp/samp.fifo && mkfifo /tmp/samp.fifo
	ip netns exec h2 bash -c '
		exec 3<>/tmp/samp.fifo
		while :; do
			read -r _ u n s _ _ irq sirq st _ </proc/stat
			read -r rx </sys/class/net/veth2/statistics/rx_bytes
			read -r tx </sys/class/net/veth2/statistics/tx_bytes
			echo "$EPOCHREALTIME $((u + n + s + irq + sirq + st)) $((s + irq + sirq)) $((rx + tx))"
			read -r -t 0.1 -u 3 _
		done' >/tmp/samples 2>/dev/null &
	samp_pid=$!
}
samp_stop() {
	kill "$samp_pid" 2>/dev/null
	wait "$samp_pid" 2>/dev/null
	read -r -a steady < <(awk -v hz="$hz" '
		NR > 1 { db[NR] = $4 - pb; dk[NR] = $3 - pk; dt[NR] = $2 - pt; if (db[NR] > mx) mx = db[NR] }
		{ pb = $4; pk = $3; pt = $2 }
		END {
			for (i in db) if (mx > 0 && db[i] >= mx / 2) { n++; B += db[i]; K += dk[i]; T += dt[i] }
			if (n >= 5) printf "%.2f %.2f\n", K * 1000 / hz / (B / 1048576), T * 1000 / hz / (B / 1048576)
			else print "" }' /tmp/samples)
	((${#steady[@]} == 2)) || steady=("" "")
	rm -f /tmp/samp.fifo
}
now() { date +%s.%N; }

# netns h1/h2 joined by veth1/veth2 (as tests/lib/lib.sh netns_pair) but with
# distinct ifindexes: the kernel's siw binds a wildcard listener of each
# device to that device's ifindex, in the LISTENING process's netns; with
# veth1 and veth2 both ifindex 2 (per-netns numbering) the second listener
# of a wildcard rdma_listen (perftest's server) fails with EADDRINUSE
# ("cma_listen_on_dev, error -98") and every reference connect is refused.
bench_netns() {
	local i
	ip netns add h1 && ip netns add h2 || return 1
	ip link add veth1 index 11 netns h1 type veth peer name veth2 index 12 netns h2 || return 1
	for i in 1 2; do
		ip -n "h$i" link set lo up
		ip -n "h$i" addr add "10.88.0.$i/24" dev "veth$i"
		ip -n "h$i" link set "veth$i" up
	done
	wait_for 10 ip netns exec h1 ping -c1 -W1 $H2
}
bench_netns || { log "netns setup failed"; exit 1; }
# Pinned memory unlimited, as RDMA hosts are set up (rdma-core's docs,
# perftest's README): the kernel's siw counts every registration against
# RLIMIT_MEMLOCK even for root, and perftest's 4 MiB buffers failed there
# with ENOMEM under the default 8 MiB
ulimit -l unlimited || log "ulimit -l unlimited failed: memlock $(ulimit -l) KiB"
log "kernel $(uname -r), $(nproc) vCPUs, reps $reps, scale $scale, clock source $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"

# ---- TCP -------------------------------------------------------------------
# bench_tcp [FIRST LAST]: runs FIRST..LAST (default 1..reps), labelled so;
# the rows' test name is $TCP_TEST (iperf3)
bench_tcp() {
	local r out c0 c1 t0 t1 bps bytes
	command -v iperf3 >/dev/null || { log "iperf3 missing"; return; }
	for r in $(seq "${1:-1}" "${2:-$reps}"); do
		ip netns exec h2 "${pin2[@]}" iperf3 -s -1 -B $H2 -p 5201 >/tmp/iperf-s.log 2>&1 &
		local spid=$!
		wait_for 10 tcp_listening 5201 h2
		samp_start
		c0=$(cpu_now) t0=$(now)
		out=$(ip netns exec h1 "${pin1[@]}" timeout 60 iperf3 -c $H2 -p 5201 -t 5 -J 2>&1)
		t1=$(now) c1=$(cpu_now)
		samp_stop
		wait "$spid" 2>/dev/null
		bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
		bytes=$(jq -r '.end.sum_received.bytes // empty' <<<"$out" 2>/dev/null)
		if [[ -n $bps ]]; then
			row tcp "${TCP_TEST:-iperf3}" "$r" ok "$(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 8 / 1048576 }')" "" "$bytes" "$c0" "$c1" "$t0" "$t1"
			log "tcp ${TCP_TEST:-iperf3} rep $r: $(awk -v b="$bps" 'BEGIN { printf "%.1f MiB/s", b / 8 / 1048576 }') ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
		else
			row tcp "${TCP_TEST:-iperf3}" "$r" fail "" "" "" "$c0" "$c1" "$t0" "$t1"
			log "tcp ${TCP_TEST:-iperf3} rep $r failed: $(tail -n 3 <<<"$out")"
		fi
	done
}

# ---- perftest --------------------------------------------------------------
# A spec is "NAME TOOL SIZE ITERS KIND [QPS [FLAG]]"; bytes moved =
# SIZE*ITERS*QPS; FLAG is one more perftest option for both ends (-e: wait
# for completion events instead of busy-polling the CQ).
sc() { awk -v n="$1" -v s="$scale" 'BEGIN { v = int(n * s); if (v < 5) v = 5; print v }'; }
# the table: ours and its variants against TCP; the kernel's siw and rxe
# have the same points in the sweep's turns, and latency its own phase
table_tests=(
	"write_bw_64k ib_write_bw 65536 $(sc 3200) bw"
	"read_bw_64k ib_read_bw 65536 $(sc 1600) bw"
	"read_bw_64k_ev ib_read_bw 65536 $(sc 1600) bw 1 -e"
	"send_bw_1m ib_send_bw 1048576 $(sc 160) bw"
)
# sweep: per point and run about $target bytes, 8 .. $mr_cap iterations
# (per QP; 2000 made a 64 B run a quarter of a second, too short to be
# steady); mr_sizes: the message rate with $mr_qps QPs
mr_qps=4 mr_cap=5000
if ((quick)); then
	sweep_sizes="64 4096 65536 1048576 4194304" target=$((4 << 20)) qp_counts="1 16 64" qp_bytes=$((12 << 20))
	big_target=$target
	mr_sizes="64 4096"
	cm_n=50 mem_qps=64 mem_conns=32
else
	# 32 MiB: about 0.25 s at TCP's rate, three runs per point (iperf3
	# streams for 5 s)
	sweep_sizes="64 512 4096 65536 262144 1048576 4194304" target=$((32 << 20)) qp_counts="1 4 16 64" qp_bytes=$((48 << 20))
	# ours from 64 KiB up, the bandwidth goal's points: 256 MiB, about
	# 1.5 s; in 32 MiB runs its per-turn ratios to TCP spanned 0.5-1.6x
	big_target=$((256 << 20))
	# the three sizes issue 24's message-rate goals name
	mr_sizes="64 512 4096"
	cm_n=500 mem_qps=256 mem_conns=1000
fi
mem_conns=${SIW_BENCH_MEM_CONNS:-$mem_conns}
big_target=${SIW_BENCH_SWEEP_BIG:-$big_target}
# iters SIZE [TARGET]: iterations (per QP) for about TARGET ($target)
# bytes, 8 .. $mr_cap
iters() { awk -v t="${2:-$target}" -v s="$1" -v f="$scale" -v mx="$mr_cap" 'BEGIN { n = int(t * f / s); if (n < 8) n = 8; if (n > mx) n = mx; print n }'; }
# sweep_tests: ours, every point; peer_tests: the kernel's siw and rxe, the
# message-rate sizes (up to 4 KiB) and 64 KiB and 1 MiB (the main table's
# points): a run takes about 7 s under TCG, most of it perftest's start-up,
# and the whole bench is to stay near 30 min
sweep_tests=() peer_tests=()
for s in $sweep_sizes; do
	n=$(iters "$s") nb=$n
	((s >= 65536)) && nb=$(iters "$s" "$big_target")
	for k in write read send; do
		sweep_tests+=("sweep_${k}_$s ib_${k}_bw $s $nb bw")
		((s <= 4096 || s == 65536 || s == 1048576)) && peer_tests+=("sweep_${k}_$s ib_${k}_bw $s $n bw")
	done
done
for s in $mr_sizes; do
	n=$(iters "$s")
	for k in write read send; do
		sweep_tests+=("mq${mr_qps}_${k}_$s ib_${k}_bw $s $n bw $mr_qps")
		peer_tests+=("mq${mr_qps}_${k}_$s ib_${k}_bw $s $n bw $mr_qps")
	done
done
# SIW_BENCH_SWEEP_ONLY: an extended regex; only the sweep's points whose
# name matches (a focused A/B with more rounds, e.g. "send_512$")
if [[ -n ${SIW_BENCH_SWEEP_ONLY:-} ]]; then
	only() { local t; for t in "$@"; do [[ ${t%% *} =~ $SIW_BENCH_SWEEP_ONLY ]] && echo "$t"; done; }
	mapfile -t sweep_tests < <(only "${sweep_tests[@]}")
	mapfile -t peer_tests < <(only "${peer_tests[@]}")
fi
qp_tests=()
for q in $qp_counts; do
	n=$(awk -v t="$qp_bytes" -v q="$q" -v f="$scale" 'BEGIN { n = int(t * f / 65536 / q); if (n < 8) n = 8; print n }')
	qp_tests+=("qp_write_$q ib_write_bw 65536 $n bw $q")
done
port=19100
# bench_perf IMPL DEV1 DEV2 NS1 NS2 SERVER_IP REPS SPEC...: server (DEV2) in
# NS2 ("-": init netns), client (DEV1) in NS1. An implementation whose
# first two runs fail is given up for this call. PERF_REP: the rep number
# to record (one rep per call, the table phase's turns)
bench_perf() {
	local impl=$1 d1=$2 d2=$3 ns1=$4 ns2=$5 sip=$6 nrep=$7
	shift 7
	local spec name tool size n kind q flag r c0 c1 t0 t1 rc nok=0 nfail=0 qa samp
	local x1=(ip netns exec "$ns1") x2=(ip netns exec "$ns2")
	[[ $ns1 == - ]] && x1=()
	[[ $ns2 == - ]] && x2=()
	x1+=("${pin1[@]}") x2+=("${pin2[@]}")
	for spec in "$@"; do
		read -r name tool size n kind q flag <<<"$spec"
		q=${q:-1} qa=() samp=0
		((q > 1)) && qa=(-q "$q")
		[[ -n $flag ]] && qa+=("$flag")
		# the steady state of a bandwidth run over the link (veth2 in h2)
		[[ $kind == bw && $ns2 == h2 ]] && samp=1
		local rr
		for rr in $(seq "$nrep"); do
			r=${PERF_REP:-$rr}
			port=$((port + 1))
			if ((nok == 0 && nfail >= 2)); then
				row "$impl" "$name" "$r" fail "" "" "" "0 0" "0 0" 0 0
				continue
			fi
			# perftest's TSC calibration can miss under TCG (pt_calib_missed
			# in tests/lib/lib.sh; with -F it then prints 0.00 or inf):
			# such an attempt is not a measurement, it is run again
			local att
			for att in 1 2 3; do
				"${x2[@]}" timeout 240 "$tool" -d "$d2" -R -p $port -F -s "$size" -n "$n" "${qa[@]}" >/tmp/pt-s.log 2>&1 &
				local spid=$!
				if [[ $d2 == rxe* ]]; then
					# rxe's rdma_cm listener is no TCP socket. Its per-device
					# ID shows LISTEN just before ib_cm_insert_listen() in the
					# same call (rdma_listen()), a window far shorter than
					# the client's start; siw's TCP listen comes later (ss)
					wait_for 60 rdma_listening "$port" ||
						log "$impl $name rep $r: no rdma_cm listener after 60 s"
				else
					wait_for 60 tcp_listening "$port" "${ns2#-}" ||
						log "$impl $name rep $r: server not listening after 60 s"
				fi
				((samp)) && samp_start
				c0=$(cpu_now) t0=$(now)
				${PERF_WRAP:-} "${x1[@]}" timeout 240 "$tool" -d "$d1" -R -p $port -F -s "$size" -n "$n" "${qa[@]}" "$sip" >/tmp/pt-c.log 2>&1
				rc=$?
				t1=$(now) c1=$(cpu_now)
				((samp)) && samp_stop
				local src=0 v='' v2='' st=ok
				# a client that failed its first connection (perftest's
				# race, PT_NOCONN in tests/lib/lib.sh) leaves the server
				# waiting for ever: stopped at once, and the attempt run
				# again; another failed client: the server gets 5 s
				local noconn=0
				if ((rc != 0)) && grep -qE "$PT_NOCONN" /tmp/pt-c.log; then
					noconn=1
					kill "$spid" 2>/dev/null
				elif ((rc != 0)); then
					sleep 5
					kill "$spid" 2>/dev/null
				fi
				wait "$spid" 2>/dev/null || src=$?
				if ((noconn)); then
					log "$impl $name rep $r: perftest's client failed its first connection (attempt $att: $(grep -m1 -E "$PT_NOCONN" /tmp/pt-c.log))"
					port=$((port + 1))
					continue
				fi
				pt_calib_missed /tmp/pt-c.log /tmp/pt-s.log || break
				log "$impl $name rep $r: perftest's TSC calibration missed (attempt $att)"
				port=$((port + 1))
			done
			# result row: first line starting with the size
			local line
			line=$(awk -v s="$size" '$1 == s && NF >= 4 { print; exit }' /tmp/pt-c.log)
			if ((rc != 0 || src != 0)) || [[ -z $line ]]; then
				st=fail
				log "$impl $name rep $r FAILED (client rc=$rc, server rc=$src): $(tail -n 3 /tmp/pt-c.log | tr '\n' '|') server: $(tail -n 2 /tmp/pt-s.log | tr '\n' '|')"
			elif [[ $kind == bw ]]; then
				# #bytes #iterations BW-peak BW-average MsgRate (MiB/s)
				v=$(awk '{ print $4 }' <<<"$line")
				# 0.00: the TSC calibration missed in every attempt
				[[ $v == 0.00 ]] && st=zero
			else
				# #bytes #iter t_min t_max t_typical t_avg ...
				v=$(awk '{ print $5 }' <<<"$line") v2=$(awk '{ print $6 }' <<<"$line")
			fi
			if [[ $st == ok ]]; then nok=$((nok + 1)); else nfail=$((nfail + 1)); fi
			row "$impl" "$name" "$r" "$st" "$v" "$v2" $((size * n * q)) "$c0" "$c1" "$t0" "$t1"
			[[ $st == ok ]] && log "$impl $name rep $r: $v${v2:+ (avg $v2)} ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
		done
	done
}

# ---- connection setup rate and memory ---------------------------------------
# cm_listen NS ADDR N LOG: siw_cmtest listener in the background ($cm_pid)
cm_listen() {
	local x=(ip netns exec "$1")
	[[ $1 == - ]] && x=()
	"${x[@]}" timeout 600 "$SIW_TOP/tests/bin/siw_cmtest" listen -n "$3" -t 590 -T /tmp/cm-steps-p.txt "$2" >"$4" 2>&1 &
	cm_pid=$!
	wait_for 30 grep -q '^# listening' "$4"
}
# bench_cm IMPL NS1 NS2 SERVER_IP: N sequential connect+disconnect
# ($CM_N, default $cm_n; the client under $CM_WRAP if set; rows named
# $CM_TEST, default cm_rate); the rate line is left in $cm_line ("" on
# failure)
bench_cm() {
	local impl=$1 ns1=$2 ns2=$3 sip=$4 c0 c1 t0 t1 out x1=(ip netns exec "$2") n=${CM_N:-$cm_n}
	[[ $ns1 == - ]] && x1=()
	cm_line=
	port=$((port + 1))
	cm_listen "$ns2" "$sip:$port" "$n" /tmp/cm-s.log || { log "$impl cm: listener failed: $(tail -n 2 /tmp/cm-s.log)"; kill $cm_pid 2>/dev/null; return; }
	c0=$(cpu_now) t0=$(now)
	rm -f /tmp/cm-steps-[ap].txt
	out=$(${CM_WRAP:-} "${x1[@]}" timeout 240 "$SIW_TOP/tests/bin/siw_cmrate" rate -n "$n" -T /tmp/cm-steps-a.txt "$sip:$port" 2>&1)
	t1=$(now) c1=$(cpu_now)
	wait_for 20 sh -c "! kill -0 $cm_pid 2>/dev/null"
	kill $cm_pid 2>/dev/null
	wait $cm_pid 2>/dev/null
	local l
	l=$(grep '^# rate ' <<<"$out")
	cm_line=$l
	if [[ -n $l ]]; then
		# "# rate N T RATE P50 P90": value = connections/s, value2 = median ms
		read -r _ _ n t rate p50 p90 <<<"$l"
		row "$impl" "${CM_TEST:-cm_rate}" "${CM_REP:-1}" ok "$rate" "$p50" "$n" "$c0" "$c1" "$t0" "$t1"
		log "$impl ${CM_TEST:-cm_rate}: $n connections in $t s, $rate/s, connect median $p50 ms, p90 $p90 ms"
		cm_steps "$impl" "${CM_TEST:-cm_rate}_step" "${CM_REP:-1}"
	else
		row "$impl" "${CM_TEST:-cm_rate}" "${CM_REP:-1}" fail "" "" "" "$c0" "$c1" "$t0" "$t1"
		log "$impl ${CM_TEST:-cm_rate} FAILED: $(tail -n 3 <<<"$out" | tr '\n' '|') server: $(tail -n 2 /tmp/cm-s.log | tr '\n' '|')"
	fi
}
# cm_steps IMPL TEST REP: each step of a connection (siw_cmrate -T and
# siw_cmtest -T, joined by connection index), rows "TEST_NAME": value the
# median ms over the connections, value2 the 90th percentile
cm_steps() {
	local name v p9
	[[ -s /tmp/cm-steps-a.txt && -s /tmp/cm-steps-p.txt ]] || { log "$1 $2: no step times"; return; }
	python3 - /tmp/cm-steps-a.txt /tmp/cm-steps-p.txt <<'PY' >/tmp/cm-steps.txt
import sys
A = {int(l.split()[1]): [float(x) for x in l.split()[2:]] for l in open(sys.argv[1])}
P = {int(l.split()[1]): [float(x) for x in l.split()[2:]] for l in open(sys.argv[2])}
# A (siw_cmrate): a0 start, a1 route, a2 QP (rdma_connect called), a3
# rdma_connect returned, a4 ESTABLISHED, a5 rdma_disconnect called, a6
# DISCONNECTED, a7 destroyed. P (siw_cmtest): p0 request, p1 QP
# (rdma_accept called), p2 rdma_accept returned, p3 ESTABLISHED, p4
# DISCONNECTED, p5 destroyed. A step: its name, its end, its start.
steps = """resolve a1 a0, qp_active a2 a1, connect_call a3 a2, to_request p0 a2,
qp_passive p1 p0, accept_call p2 p1, accept_to_estab a4 p1, connect a4 a2,
disconnect a6 a5, disc_passive p4 a5, destroy_active a7 a6,
destroy_passive p5 p4, cycle a7 a0"""
def at(a, p, x):
    return (a if x[0] == 'a' else p)[int(x[1:])]
for name, end, start in (w.split() for w in steps.split(',')):
    v = sorted((at(A[i], P[i], end) - at(A[i], P[i], start)) * 1000 for i in A if i in P)
    if v:
        print(name, f'{v[len(v) // 2]:.3f}', f'{v[len(v) * 9 // 10]:.3f}')
PY
	while read -r name v p9; do
		row "$1" "$2_$name" "$3" ok "$v" "$p9" "" "" "" "" ""
	done </tmp/cm-steps.txt
	log "$1 $2: $(tr '\n' ' ' </tmp/cm-steps.txt)"
}
# meminfo fields in kB: Slab VmallocUsed PageTables Percpu MemFree
mem_now() {
	awk '/^(Slab|VmallocUsed|PageTables|Percpu|MemFree):/ { v[$1] = $2 }
	     END { print v["Slab:"], v["VmallocUsed:"], v["PageTables:"], v["Percpu:"], v["MemFree:"] }' /proc/meminfo
}
# mem_hold IMPL KIND N CMD...: snapshot, start CMD (prints "# holding N",
# then waits for stdin), snapshot while held, run $HELD_HOOK if set,
# release. Per-object deltas.
mem_hold() {
	local impl=$1 kind=$2 n=$3 a b fifo=/tmp/hold.fifo pid
	shift 3
	rm -f $fifo && mkfifo $fifo
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 1
	a=$(mem_now)
	"$@" <$fifo >/tmp/hold.log 2>&1 &
	pid=$!
	exec 9>$fifo
	# until it holds them, or gave up (the reference siw runs out of CQs)
	wait_for 150 sh -c "grep -q '^# holding' /tmp/hold.log || ! kill -0 $pid 2>/dev/null"
	if grep -q '^# holding' /tmp/hold.log; then
		sleep 1
		b=$(mem_now)
		if [[ ${MEM_ROW:-1} == 1 ]]; then
			awk -v OFS='\t' -v i="$impl" -v k="$kind" -v n="$n" -v a="$a" -v b="$b" 'BEGIN {
				split(a, x, " "); split(b, y, " ")
				print i, k, n, (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n, (y[4] - x[4]) / n, (x[5] - y[5]) / n }' >>"$out/mem.tsv"
			log "$impl mem $kind x$n: per object $(tail -n 1 "$out/mem.tsv" | cut -f4-)"
		fi
		${HELD_HOOK:-}
	else
		log "$impl mem $kind FAILED: $(tail -n 3 /tmp/hold.log | tr '\n' '|')"
	fi
	exec 9>&-
	wait_for 120 sh -c "! kill -0 $pid 2>/dev/null"
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	rm -f $fifo
}
# bench_cm_held IMPL NS1 NS2 SERVER_IP: bench_cm, its listener's pid kept
bench_cm_held() {
	local keep=$cm_pid
	CM_TEST=cm_rate_held bench_cm "$@"
	cm_pid=$keep
}
# bench_mem IMPL DEV NS1 NS2 SERVER_IP
bench_mem() {
	local impl=$1 dev=$2 ns1=$3 ns2=$4 sip=$5 x1=(ip netns exec "$3")
	[[ $ns1 == - ]] && x1=()
	# warm the page cache with the tool's libraries first
	echo | "${x1[@]}" "$SIW_TOP/tests/bin/siw_cmrate" qps -n 1 -d "$dev" >/dev/null 2>&1
	mem_hold "$impl" qp "$mem_qps" "${x1[@]}" "$SIW_TOP/tests/bin/siw_cmrate" qps -n "$mem_qps" -d "$dev"
	[[ $impl == rxe ]] && return # rxe's listener: measured for the siw pair only
	bench_mem_conn "$@"
}
# bench_mem_conn IMPL DEV NS1 NS2 SERVER_IP: $mem_conns connections held,
# their memory (unless MEM_ROW=0) and the connection rate while they are
# (rows cm_rate_held, rep $CM_REP)
bench_mem_conn() {
	local impl=$1 ns1=$3 ns2=$4 sip=$5 x1=(ip netns exec "$3")
	[[ $ns1 == - ]] && x1=()
	port=$((port + 1))
	cm_listen "$ns2" "$sip:$port" "$mem_conns" /tmp/cm-s.log || { log "$impl mem: listener failed"; kill $cm_pid 2>/dev/null; return; }
	# one connection = both ends (client QP+CQ in ns1, server QP+CQ in ns2)
	# while they are held: the connection rate again
	HELD_HOOK="bench_cm_held $impl $ns1 $ns2 $sip" \
		mem_hold "$impl" conn "$mem_conns" "${x1[@]}" "$SIW_TOP/tests/bin/siw_cmrate" hold -n "$mem_conns" "$sip:$port"
	wait_for 30 sh -c "! kill -0 $cm_pid 2>/dev/null"
	kill $cm_pid 2>/dev/null
	wait $cm_pid 2>/dev/null
}

# ---- profile ----------------------------------------------------------------
# perf_top NAME: the report of /tmp/perf.data, top symbols, to profile-NAME.txt
perf_top() {
	local rep=/tmp/perf-report.txt
	perf report -i /tmp/perf.data --no-children --sort dso,sym --stdio -g none --percent-limit 0.1 2>/dev/null |
		grep -vE '^#|^$' >$rep
	{
		echo "# $1: perf record -a -g -e cpu-clock (guest, 2 vCPUs); perf report --no-children --sort dso,sym"
		echo "## all"
		head -n 15 $rep
		echo "## kernel, idle excluded (percent of all samples)"
		grep -F '[k]' $rep | grep -vE 'native_safe_halt|default_idle|cpuidle|acpi_idle' | head -n 15
		# who calls the kernel entries that are not the transport's own
		# work: page zeroing, the clock, lock waits
		local sym
		for sym in clear_page_erms read_hpet mutex_spin_on_owner native_queued_spin_lock_slowpath; do
			grep -qF "] $sym" $rep || continue
			echo "## callers of $sym"
			perf report -i /tmp/perf.data --no-children --symbols "$sym" --stdio \
				-g graph,2,callee,function,percent --percent-limit 0.1 2>/dev/null |
				grep -vE '^#|^[[:space:]|]*$' | head -n 30
		done
	} >"$out/profile-$1.txt"
	log "profile $1: $(sed -n 3p "$out/profile-$1.txt")"
	rm -f /tmp/perf.data $rep
}
# perf_ready: perf is there and may sample the whole system with kernel
# symbols
perf_ready() {
	command -v perf >/dev/null || { log "profile: perf missing"; return 1; }
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	echo 0 >/proc/sys/kernel/kptr_restrict
}
bench_profile() {
	perf_ready || return
	local spec name
	for spec in "write_bw_64k ib_write_bw 65536 3000 bw" "read_bw_64k ib_read_bw 65536 1000 bw" "send_bw_1m ib_send_bw 1048576 200 bw"; do
		name=${spec%% *}
		PERF_WRAP="perf record -q -a -g -e cpu-clock -F 499 -o /tmp/perf.data --" \
			bench_perf prof_ours siw1 siw2 h1 h2 $H2 1 "$spec"
		perf_top "ours-$name"
	done
}
# tcp_segs NETNS: TCP's OutSegs and InSegs counters in that namespace
tcp_segs() {
	ip netns exec "$1" awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ { print $12, $11 }' /proc/net/snmp
}
# proflat_awk: awk function printing a proflat.tsv line from perf_per_op's
# summary line (the current record)
proflat_awk='function proflat_line(i, o, t, p,  k, ke, sw) {
	gsub(/[(),;]/, " ")
	for (k = 1; k <= NF; k++) { if ($k == "kernel") ke = $(k + 1); if ($k == "functions") sw = $(k + 1) }
	print i, o, t, p, $1, ke, sw, $NF }'
# bench_profile_lat IMPL [OP [TAG]]: where the CPU of a 64 B round trip
# (OP: write, the default, send or read) goes, to set ours beside the
# reference: perf record -a (no call graphs) during a long siw_lat run ->
# profile-lat-IMPL.txt (write) or profile-lat-IMPL-OP[TAG].txt, each
# symbol's share as CPU microseconds per round trip (samples / sampling
# rate / round trips, both vCPUs summed; the idle loop left out); its
# summary line also goes to proflat.tsv
bench_profile_lat() {
	perf_ready || return
	local op=${2:-write} n f=1999 s1 s2 e1 e2 file
	file=$out/profile-lat-$1.txt
	[[ -z ${2:-} ]] || file=$out/profile-lat-$1-$op${3:-}.txt
	if [[ $op == read ]]; then n=$(sc 20000); else n=$(sc 40000); fi
	read -ra s1 < <(tcp_segs h1)
	read -ra s2 < <(tcp_segs h2)
	LAT_WRAP="perf record -q -a -e cpu-clock -F $f -o /tmp/perf.data --" LAT_N=$n \
		mono_lat "prof_$1" 1 "$op"
	read -ra e1 < <(tcp_segs h1)
	read -ra e2 < <(tcp_segs h2)
	perf_report_flat
	{
		echo "# $1-${op}_lat_64${3:-}: perf record -a -e cpu-clock -F $f during $n siw_lat $op round trips (64 B)"
		awk -v a=$((e1[0] - s1[0])) -v b=$((e2[0] - s2[0])) -v n="$n" -v l="$(grep -F "prof_$1" "$raw" | tail -n 1 | cut -f5)" \
			'BEGIN { printf "TCP segments per round trip: client to server %.2f, server to client %.2f; p50 under perf %s us (siw_lat: half a round trip, a whole one for read)\n", a / n, b / n, l }'
		perf_per_op "$n" $f "round trip"
	} >"$file"
	log "profile lat $1 $op${3:-}: $(sed -n 2,3p "$file" | tr '\n' ' ')"
	# impl op tag p50 busy kernel siw idle (us per round trip)
	awk -v i="$1" -v o="$op" -v t="${3:--}" 'NR == 2 { for (k = 1; k <= NF; k++) if ($k == "under") p = $(k + 2) }
		NR == 3 { proflat_line(i, o, t, p) }'" $proflat_awk" "$file" >>"$out/proflat.tsv"
	rm -f /tmp/perf.data /tmp/perf-report.txt
}
# bench_proflat: the CPU of a 64 B write, send and read round trip and of
# a connection, ours and the kernel's siw taking turns
# (SIW_BENCH_PROF_ROUNDS rounds, 3), so that drift within the boot falls
# on both: profile-lat-IMPL-OP-rN.txt, profile-cm-IMPL-rN.txt and a line
# per run in proflat.tsv (us per round trip or per connection)
bench_proflat() {
	perf_ready || return
	local r impl op
	for r in $(seq "${SIW_BENCH_PROF_ROUNDS:-3}"); do
		for impl in $impls; do
			[[ $impl == ours || $impl == ref ]] || continue
			impl_up "$impl" quiet || continue
			for op in write send read; do
				bench_profile_lat "$impl" "$op" "-r$r"
			done
			bench_profile_cm "$impl" $H2 "-r$r"
			impl_down "$impl"
		done
	done
	log "proflat (impl op round p50 busy_us kernel_us siw_us idle_us per round trip or connection; p50: siw_lat's in us, the connect median in ms):"
	sed 's/^/bench:   /' "$out/proflat.tsv"
}
# perf_report_flat: /tmp/perf.data -> /tmp/perf-report.txt, one line per
# symbol: "  12.34%  123  [kernel.kallsyms]  [k] sym" (percent, samples,
# dso, kind, symbol)
perf_report_flat() {
	perf report -i /tmp/perf.data --no-children --sort dso,sym -n --stdio -g none 2>/dev/null |
		grep -vE '^#|^$' >/tmp/perf-report.txt
}
# perf_per_op N F WHAT: that report as CPU microseconds per WHAT (N of them,
# sampled at F Hz): the sum without the idle loop, the kernel's and the
# siw_* functions' parts, then the top 25 symbols
perf_per_op() {
	awk -v f="$2" -v n="$1" -v what="$3" '
		function us(x) { return x * 1e6 / f / n }
		$5 ~ /^(native_safe_halt|default_idle|cpuidle|acpi_idle|pv_native_safe_halt)/ { idle += $2; next }
		{ busy += $2; if ($4 == "[k]") k += $2
		  if ($4 == "[k]" && $5 ~ /^siw_/) { sw += $2; if (++m <= 15) own[m] = sprintf("%8.2f  %s", us($2), $5) }
		  if (++i <= 25) top[i] = sprintf("%8.2f  %-20s %s %s", us($2), $3, $4, $5) }
		END {
			printf "%8.2f  CPU us per %s, idle loop excluded (kernel %.2f, of it siw_* functions %.2f); idle %.2f\n", us(busy), what, us(k), us(sw), us(idle)
			print "## top 25: CPU us per " what ", symbol"
			for (j = 1; j <= i && j <= 25; j++) print top[j]
			print "## the module: top 15 siw_* functions, CPU us per " what
			for (j = 1; j <= m && j <= 15; j++) print own[j]
		}' /tmp/perf-report.txt
}
# bench_profile_cm IMPL SERVER_IP [TAG]: where the CPU of a connection goes
# (h1 connects to h2): perf record -a during siw_cmrate ->
# profile-cm-IMPL[TAG].txt, CPU microseconds per connection (connect,
# disconnect, QP create and destroy, both ends) per symbol; with TAG its
# summary also goes to proflat.tsv (p50: the connect median, ms)
bench_profile_cm() {
	perf_ready || return
	local n=$((cm_n / 2)) f=999 file=$out/profile-cm-$1${3:-}.txt
	CM_WRAP="perf record -q -a -e cpu-clock -F $f -o /tmp/perf.data --" CM_N=$n \
		bench_cm "prof_$1" h1 h2 "$2"
	[[ -n $cm_line ]] || return
	perf_report_flat
	{
		echo "# $1-connect${3:-}: perf record -a -e cpu-clock -F $f during $n rdma_cm connections (siw_cmrate rate: connect, disconnect, QP and CQ create and destroy, both ends)"
		echo "$cm_line (connections, seconds, per second, connect median and p90 in ms) under perf"
		perf_per_op "$n" $f connection
	} >"$file"
	log "profile cm $1${3:-}: $(sed -n 2,3p "$file" | tr '\n' ' ')"
	[[ -z ${3:-} ]] || awk -v i="$1" -v t="$3" 'NR == 2 { p = $6 }
		NR == 3 { proflat_line(i, "connect", t, p) }'" $proflat_awk" "$file" >>"$out/proflat.tsv"
	rm -f /tmp/perf.data /tmp/perf-report.txt
}
# bench_hops IMPL: the hand-offs a connection, a 64 B round trip and a
# 64 B message of a stream cost: scheduler, work queue, softirq and IPI
# tracepoints and the perftest client's system calls, counted with perf
# record -a (no sampling: every event) during siw_cmrate rate, siw_lat
# write, send and read, and ib_write_bw, ib_send_bw and ib_read_bw 64 B ->
# profile-hops-IMPL.txt, events per connection, round trip or message:
# context switches, wake-ups (by the woken task's name), work items (by
# function), softirqs (by vector), IPIs; per message also the packets on
# the link (veth2, both directions). rxe (no link, no rdma_cm of siw's
# tools): the messages only.
hops_events=(-e sched:sched_switch -e sched:sched_wakeup -e workqueue:workqueue_execute_start
	-e irq:softirq_entry -e irq_vectors:call_function_single_entry -e irq_vectors:reschedule_entry
	-e raw_syscalls:sys_enter)
# hops_count N WHAT: /tmp/hops.data -> events per WHAT
hops_count() {
	perf script -i /tmp/hops.data -F comm,event,trace 2>/dev/null | awk -v n="$1" -v what="$2" '
		{ cm = $1; $1 = ""; $0 = $0; ev = $1; sub(/:$/, "", ev) }
		ev == "sched:sched_switch" { c["switch"]++ }
		ev == "sched:sched_wakeup" { t = $2; sub(/^comm=/, "", t); sub(/[:\/].*$/, "", t); sub(/[0-9]+$/, "", t)
			c["wakeup"]++; w[t]++ }
		ev == "workqueue:workqueue_execute_start" { f = $NF; c["work"]++; wk[f]++ }
		ev == "irq:softirq_entry" { v = $NF; gsub(/[\[\]]|action=/, "", v); c["softirq"]++; sq[v]++ }
		ev ~ /call_function_single_entry|reschedule_entry/ { c["ipi"]++ }
		ev == "raw_syscalls:sys_enter" && cm ~ /^(ib_|siw_lat|siw_cmrate|fio)/ { c["sys"]++ }
		function per(x) { return x / n }
		END {
			printf "%6.2f context switches, %6.2f wake-ups, %6.2f work items, %6.2f softirqs, %6.2f IPIs, %6.2f system calls of the tools (both ends) per %s\n",
				per(c["switch"]), per(c["wakeup"]), per(c["work"]), per(c["softirq"]), per(c["ipi"]), per(c["sys"]), what
			srt = "sort"
			for (k in w) if (per(w[k]) >= 0.05) printf "  wake-ups of %-22s %6.2f\n", k, per(w[k]) | srt
			for (k in wk) if (per(wk[k]) >= 0.05) printf "  work item %-24s %6.2f\n", k, per(wk[k]) | srt
			for (k in sq) if (per(sq[k]) >= 0.05) printf "  softirq %-26s %6.2f\n", k, per(sq[k]) | srt
			close(srt)
		}'
}
# link_pkts: packets through veth2 (h2), both directions
link_pkts() {
	ip netns exec h2 cat /sys/class/net/veth2/statistics/rx_packets /sys/class/net/veth2/statistics/tx_packets |
		awk '{ s += $1 } END { print s }'
}
# hops_msg IMPL: a 64 B message stream per verb (perftest, one QP)
hops_msg() {
	local n k p0 p1 pk
	n=$(sc 3000)
	for k in write send read; do
		p0=$(link_pkts)
		PERF_WRAP="perf record -q -a ${hops_events[*]} -o /tmp/hops.data --" \
			bench_perf "hops_$1" "$D1" "$D2" "$N1" "$N2" "$SIP" 1 "hops_${k}_64 ib_${k}_bw 64 $n bw"
		p1=$(link_pkts)
		pk=$([[ $N2 == - ]] && echo "n/a (loopback)" || awk -v a="$p0" -v b="$p1" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / n }')
		echo "## $n ib_${k}_bw messages, 64 B, one QP ($(grep -F "hops_$1" "$raw" | tail -n 1 | cut -f5) MiB/s under perf; packets on the link per message: $pk)"
		hops_count "$n" message
	done
}
bench_hops() {
	perf_ready || return
	local n op
	[[ -d /sys/kernel/tracing/events ]] || mount -t tracefs nodev /sys/kernel/tracing
	[[ $(perf list tracepoint 2>/dev/null) == *workqueue:workqueue_execute_start* ]] ||
		{ log "hops: no tracepoints for perf"; return; }
	n=$(sc 200)
	{
		echo "# $1: perf record -a of scheduler, work queue, softirq, IPI and system call tracepoints (every event, both vCPUs, both ends)"
		if [[ $1 != rxe ]]; then
			CM_WRAP="perf record -q -a ${hops_events[*]} -o /tmp/hops.data --" CM_N=$n bench_cm "hops_$1" h1 h2 $H2
			echo "## $n rdma_cm connections (siw_cmrate rate; connect median $(cut -d' ' -f6 <<<"$cm_line") ms under perf)"
			hops_count "$n" connection
			n=$(sc 2000)
			for op in write send read; do
				LAT_WRAP="perf record -q -a ${hops_events[*]} -o /tmp/hops.data --" LAT_N=$n \
					mono_lat "hops_$1" 1 "$op"
				echo "## $n siw_lat $op round trips, 64 B (p50 half round trip under perf $(grep -F "hops_$1" "$raw" | tail -n 1 | cut -f5) us)"
				hops_count "$n" "round trip"
			done
		fi
		hops_msg "$1"
	} >"$out/profile-hops-$1.txt"
	log "hops $1: $(grep -A1 '^## ' "$out/profile-hops-$1.txt" | grep -v '^--' | tr '\n' ' ')"
	rm -f /tmp/hops.data
}
bench_profile_tcp() {
	perf_ready || return
	ip netns exec h2 iperf3 -s -1 -B $H2 -p 5202 >/tmp/iperf-s.log 2>&1 &
	local spid=$!
	wait_for 10 tcp_listening 5202 h2
	perf record -q -a -g -e cpu-clock -F 499 -o /tmp/perf.data -- \
		ip netns exec h1 timeout 60 iperf3 -c $H2 -p 5202 -t 5 >/tmp/iperf-c.log 2>&1
	wait "$spid" 2>/dev/null
	log "profile tcp: $(grep -E 'receiver' /tmp/iperf-c.log | tail -n 1)"
	perf_top tcp-iperf3
}

devs_add() { # TYPE PFX
	ip netns exec h1 rdma link add "${2}1" type "$1" netdev veth1 || return 1
	ip netns exec h2 rdma link add "${2}2" type "$1" netdev veth2 || return 1
	wait_for 15 test "$(ibdev_port_state "${2}1")" = PORT_ACTIVE || return 1
	wait_for 15 test "$(ibdev_port_state "${2}2")" = PORT_ACTIVE || return 1
}
devs_del() {
	rdma link delete "${1}1" 2>/dev/null
	rdma link delete "${1}2" 2>/dev/null
	sleep 0.5
}
siw_rm() {
	local i
	for i in $(seq 50); do
		[[ -d /sys/module/siw ]] || return 0
		rmmod siw 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
# The CRC32c driver libcrc32c binds when it loads is the one it keeps: on
# a real host udev loads crc32c_intel (SSE4.2) at boot, before anything
# needs CRC; this guest has no udev, so load it first, as a host would.
modprobe crc32c_intel 2>/dev/null || modprobe crc32c_generic 2>/dev/null
modprobe -a ib_core ib_uverbs iw_cm rdma_cm rdma_ucm libcrc32c 2>/dev/null
# the crypto API uses the crc32c driver of the highest priority (/proc/crypto
# lists the newest first, which need not be the one in use)
log "crc32c driver: $(awk '/^name/ { n = $3 } /^driver/ { d = $3 }
	/^priority/ && n == "crc32c" && $3 > p { p = $3; best = d }
	END { print best " (priority " p ")" }' /proc/crypto)"
# How fast this guest computes CRC32c at all, with that driver: tcrypt's
# speed test (mode 319; the module prints, then refuses to stay loaded).
# Against it the CRC column's cost per byte can be read (docs/bench.md).
if has table && [[ " $impls " == *" ourscrc "* ]]; then
	mark=$(dmesg | wc -l)
	modprobe tcrypt mode=319 sec=1 2>/dev/null
	# "( 4096 byte blocks, 4096 bytes per update, ...): N opers/sec, M bytes/sec"
	# (the figures may come as a continuation record of their own: joined)
	dmesg | tail -n +$((mark + 1)) |
		awk '/bytes per update/ && !/bytes\/sec/ { p = $0; next } p != "" { $0 = p " " $0; p = "" } { print }' |
		sed -n 's/.*( *\(1024\|4096\|8192\) byte blocks, *\1 bytes per update.*[ ,]\([0-9][0-9]*\) bytes\/sec.*/\1 \2/p' |
		while read -r b bps; do
			log "crc32c speed: $b-byte updates $(awk -v v="$bps" 'BEGIN { printf "%.0f MiB/s", v / 1048576 }') on one vCPU"
		done
fi

# bw tests of the table only (zero-copy, CRC variants)
bw_tests=()
for spec in "${table_tests[@]}"; do [[ $spec == *" bw" ]] && bw_tests+=("$spec"); done
# phases for the siw-like implementation IMPL on devices siw1/siw2 in h1/h2
siw_phases() {
	local impl=$1
	has qps && bench_perf "$impl" siw1 siw2 h1 h2 $H2 1 "${qp_tests[@]}"
	has mem && bench_mem "$impl" siw1 h1 h2 $H2
}

# impl_up IMPL: load IMPL and create its two devices; sets D1 D2 (client and
# server device), N1 N2 (their netns, "-": init netns) and SIP (server
# address) for bench_perf. ours/ourszc/ourscrc: this module with zero-copy
# transmit off / from 16 KiB, or MPA CRC required on both ends (both devices
# are in this one module); ref: the kernel's siw, in the same boot.
impl_up() {
	local args=(zcopy_min=0) ko
	case $1 in
	ours | ourszc | ourscrc)
		[[ $1 == ourszc ]] && args=(zcopy_min=16384)
		[[ $1 == ourscrc ]] && args=(zcopy_min=0 mpa_crc_required=1)
		(siw_install) >/dev/null 2>&1 || { log "$1: install failed"; return 1; }
		modprobe siw "${args[@]}" || { log "$1: modprobe failed"; return 1; }
		grep -q O /sys/module/siw/taint || { log "$1: the loaded siw is not ours"; siw_rm; return 1; }
		[[ -n ${2:-} ]] || log "$1: srcversion $(cat /sys/module/siw/srcversion 2>/dev/null) zcopy_min $(cat /sys/module/siw/parameters/zcopy_min) mpa_crc_required $(cat /sys/module/siw/parameters/mpa_crc_required)"
		;;
	base)
		# this module at another revision (bench.sh --base), its deps
		# loaded by an earlier modprobe of ours or here
		ko=${SIW_BENCH_BASE_KO:-}
		[[ -n $ko && -e $ko ]] || { log "base: no module (bench.sh --base REV)"; return 1; }
		siw_rm
		modprobe -a ib_uverbs iw_cm rdma_ucm libcrc32c 2>/dev/null
		insmod "$ko" zcopy_min=0 || { log "base: insmod failed"; return 1; }
		[[ -n ${2:-} ]] || log "base: $ko srcversion $(cat /sys/module/siw/srcversion 2>/dev/null)"
		;;
	ref)
		ko=$SIW_TOP/build/ref/$(uname -r)/siw.ko
		[[ -e $ko ]] || { log "ref: $ko missing (scripts/build-ref.sh)"; return 1; }
		siw_rm
		insmod "$ko" || { log "ref: insmod failed"; return 1; }
		[[ -n ${2:-} ]] || log "ref: $ko srcversion $(cat /sys/module/siw/srcversion 2>/dev/null)"
		;;
	rxe)
		# rxe on 6.1 has its UDP socket (4791) in init_net only: packets
		# arriving in h1/h2 are dropped (CM "unreachable"), so it cannot
		# span the two namespaces. It runs in init_net instead, on one veth
		# end (vr1 10.89.0.1, peer vr2 up), client and server both using
		# 10.89.0.1: rxe's own loopback path (no veth/IP/UDP), which
		# favours rxe.
		modprobe rdma_rxe || { log "rxe: modprobe failed"; return 1; }
		ip link add vr1 type veth peer name vr2 && ip link set vr1 up && ip link set vr2 up &&
			ip addr add 10.89.0.1/24 dev vr1 || { log "rxe: veth setup failed"; return 1; }
		rdma link add rxe0 type rxe netdev vr1 &&
			wait_for 15 test "$(ibdev_port_state rxe0)" = PORT_ACTIVE || { log "rxe: device setup failed"; impl_down rxe; return 1; }
		[[ -n ${2:-} ]] || log "rxe: rxe0 on vr1 (init netns, loopback 10.89.0.1 -> 10.89.0.1)"
		D1=rxe0 D2=rxe0 N1=- N2=- SIP=10.89.0.1
		return 0
		;;
	*) log "unknown implementation $1"; return 1 ;;
	esac
	devs_add siw siw || { log "$1: device setup failed"; impl_down "$1"; return 1; }
	D1=siw1 D2=siw2 N1=h1 N2=h2 SIP=$H2
}
impl_down() {
	if [[ $1 == rxe ]]; then
		rdma link delete rxe0 2>/dev/null
		ip link del vr1 2>/dev/null
		return 0
	fi
	devs_del siw
	siw_rm || log "$1: rmmod failed"
}

# ---- latency, interleaved ---------------------------------------------------
# Latency drifts within one boot by more than the ratios compared (see
# docs/bench.md), so the lat phase takes turns: each round loads every
# implementation once and measures 64 B write/send/read with tests/bin/siw_lat
# (CLOCK_MONOTONIC per iteration; row value p50, value2 average) and with
# perftest's ib_*_lat (t_typical). Ratios are taken round by round.
lat_rounds=${SIW_BENCH_LAT_ROUNDS:-3}
mix_tests=(
	"mix_write_lat_64 ib_write_lat 64 $(sc 1000) lat"
	"mix_send_lat_64 ib_send_lat 64 $(sc 1000) lat"
	"mix_read_lat_64 ib_read_lat 64 $(sc 1000) lat"
)
# mono_lat IMPL ROUND OP: one siw_lat run on the devices impl_up set
mono_lat() {
	local x1=(ip netns exec "$N1") x2=(ip netns exec "$N2") c0 c1 t0 t1 rc l
	local n bin=$SIW_TOP/tests/bin/siw_lat
	[[ $N1 == - ]] && x1=()
	[[ $N2 == - ]] && x2=()
	n=${LAT_N:-$(sc 2000)}
	port=$((port + 1))
	"${x2[@]}" timeout 120 "$bin" server -o "$3" -n "$n" "$SIP:$port" >/tmp/lat-s.log 2>&1 &
	local spid=$!
	wait_for 30 grep -q '^# listening' /tmp/lat-s.log
	c0=$(cpu_now) t0=$(now)
	${LAT_WRAP:-} "${x1[@]}" timeout 120 "$bin" client -o "$3" -n "$n" "$SIP:$port" >/tmp/lat-c.log 2>&1
	rc=$?
	t1=$(now) c1=$(cpu_now)
	((rc == 0)) || kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	# "# lat OP SIZE N MIN P50 P90 P99 AVG CLK"
	l=$(grep '^# lat ' /tmp/lat-c.log)
	if ((rc != 0)) || [[ -z $l ]]; then
		row "$1" "mono_$3_lat_64" "$2" fail "" "" "" "$c0" "$c1" "$t0" "$t1"
		log "$1 siw_lat $3 round $2 FAILED (rc $rc): $(tail -n 2 /tmp/lat-c.log | tr '\n' '|') server: $(tail -n 2 /tmp/lat-s.log | tr '\n' '|')"
		return
	fi
	local p50 avg clk
	read -r _ _ _ _ _ _ p50 _ _ avg clk _ <<<"$l"
	row "$1" "mono_$3_lat_64" "$2" ok "$p50" "$avg" $((64 * n)) "$c0" "$c1" "$t0" "$t1"
	log "$1 siw_lat $3 round $2: p50 $p50 us, avg $avg us (a clock read, $clk us, taken off each)"
}
bench_lat() {
	local r impl op
	for r in $(seq "$lat_rounds"); do
		for impl in $impls; do
			[[ $impl == ours || $impl == base || $impl == ref || $impl == rxe ]] || continue
			impl_up "$impl" quiet || continue
			for op in write send read; do
				mono_lat "$impl" "$r" "$op"
			done
			PERF_REP=$r bench_perf "$impl" "$D1" "$D2" "$N1" "$N2" "$SIP" 1 "${mix_tests[@]}"
			impl_down "$impl"
		done
	done
}

# ---- connection setup rate, interleaved -------------------------------------
# One run per implementation moved by as much as the gap between them
# from boot to boot, so the rate takes turns as latency
# does (rows' rep = the round; the report's per-turn ratios pair rounds).
# The rate with connections held stays in the memory phase, once each.
cm_rounds=${SIW_BENCH_CM_ROUNDS:-3}
bench_cm_turns() {
	local r impl
	for r in $(seq "$cm_rounds"); do
		for impl in $impls; do
			[[ $impl == ours || $impl == base || $impl == ref || $impl == rxe ]] || continue
			impl_up "$impl" quiet || continue
			CM_REP=$r bench_cm "$impl" "$N1" "$N2" "$SIP"
			impl_down "$impl"
		done
	done
}

# ---- the main table, implementations taking turns -----------------------------
# Bandwidth drifts within a boot as latency does: each round runs TCP, ours
# and its variants once, so a drift falls on all of them; ratios can be
# taken turn by turn (the rep number is the round). The kernel's siw and
# rxe run the same points in the sweep's turns (bench-report.py puts them
# into the table).
bench_table() {
	local r impl q
	for r in $(seq "$reps"); do
		for impl in $impls; do
			q=quiet
			((r == 1)) && q=
			case $impl in
			tcp) bench_tcp "$r" "$r" ;;
			ours | base)
				impl_up "$impl" ${q:+"$q"} || continue
				PERF_REP=$r bench_perf "$impl" "$D1" "$D2" "$N1" "$N2" "$SIP" 1 "${table_tests[@]}"
				impl_down "$impl"
				;;
			ourszc | ourscrc)
				impl_up "$impl" ${q:+"$q"} || continue
				PERF_REP=$r bench_perf "$impl" siw1 siw2 h1 h2 $H2 1 "${bw_tests[@]}"
				impl_down "$impl"
				;;
			esac
		done
	done
}

# ---- sweep and message rate, taking turns ------------------------------------
# Each round: TCP (iperf3, rows iperf3_sweep), then ours (and base) at
# every point, the kernel's siw and rxe at peer_tests', so ratios can be
# taken turn by turn as in the table.
sweep_rounds=${SIW_BENCH_SWEEP_ROUNDS:-3}
((quick)) && sweep_rounds=${SIW_BENCH_SWEEP_ROUNDS:-1}
bench_sweep() {
	local r impl tests
	for r in $(seq "$sweep_rounds"); do
		for impl in $impls; do
			case $impl in
			tcp) TCP_TEST=iperf3_sweep bench_tcp "$r" "$r" ;;
			ours | base | ref | rxe)
				# the first load of each is logged (module, srcversion)
				if ((r == 1)); then impl_up "$impl"; else impl_up "$impl" quiet; fi || continue
				tests=("${sweep_tests[@]}")
				[[ $impl == ref || $impl == rxe ]] && tests=("${peer_tests[@]}")
				PERF_REP=$r bench_perf "$impl" "$D1" "$D2" "$N1" "$N2" "$SIP" 1 "${tests[@]}"
				impl_down "$impl"
				;;
			esac
		done
	done
}

tb=$SECONDS
if has table; then
	ts=$SECONDS
	bench_table
	log "phase table ($reps rounds, implementations taking turns) took $((SECONDS - ts)) s"
fi
if has sweep; then
	ts=$SECONDS
	bench_sweep
	log "phase sweep ($sweep_rounds rounds, implementations taking turns) took $((SECONDS - ts)) s"
fi
if has cm; then
	ts=$SECONDS
	bench_cm_turns
	log "phase cm ($cm_rounds rounds, implementations taking turns) took $((SECONDS - ts)) s"
fi
if has proflat; then
	ts=$SECONDS
	bench_proflat
	log "phase proflat (${SIW_BENCH_PROF_ROUNDS:-3} rounds, ours and ref taking turns) took $((SECONDS - ts)) s"
fi
# the per-implementation phases (an apps-only run loads nothing here)
for impl in $impls; do
	has profile || has hops || has qps || has mem || break
	ts=$SECONDS
	case $impl in
	tcp)
		has profile && bench_profile_tcp
		;;
	ours)
		impl_up ours || continue
		has profile && { bench_profile; bench_profile_lat ours; bench_profile_cm ours $H2; }
		has hops && bench_hops ours
		siw_phases ours
		impl_down ours
		;;
	ourszc | ourscrc | base)
		continue	# the turns of table, sweep and lat only
		;;
	ref)
		impl_up ref || continue
		has profile && { bench_profile_lat ref; bench_profile_cm ref $H2; }
		has hops && bench_hops ref
		siw_phases ref
		impl_down ref
		;;
	rxe)
		impl_up rxe || continue
		has hops && bench_hops rxe
		has qps && bench_perf rxe "$D1" "$D2" "$N1" "$N2" "$SIP" 1 "${qp_tests[@]}"
		has mem && bench_mem rxe "$D1" "$N1" "$N2" "$SIP"
		impl_down rxe
		;;
	esac
	log "phase $impl took $((SECONDS - ts)) s"
done
# The rate with connections held, more rounds: the memory phase above gave
# the first, ours' and the reference's back to back; these take turns the
# same way, so the held rows have per-turn ratios too (one round drifted
# like any single run: 0.65x in one, 0.76-0.89x in turns in another boot,
# docs/results/2026-12-06-cm-rate-held.txt)
held_rounds=${SIW_BENCH_HELD_ROUNDS:-3}
((quick)) && held_rounds=${SIW_BENCH_HELD_ROUNDS:-1}
if has mem && ((held_rounds > 1)); then
	ts=$SECONDS
	for r in $(seq 2 "$held_rounds"); do
		for impl in $impls; do
			[[ $impl == ours || $impl == ref ]] || continue
			impl_up "$impl" quiet || continue
			CM_REP=$r MEM_ROW=0 bench_mem_conn "$impl" siw1 h1 h2 $H2
			impl_down "$impl"
		done
	done
	log "phase held (rounds 2-$held_rounds, ours and ref taking turns) took $((SECONDS - ts)) s"
fi
if has apps; then
	ts=$SECONDS
	# shellcheck source=scripts/bench-apps.sh
	source "$SIW_TOP/scripts/bench-apps.sh"
	bench_apps
	log "phase apps ($apps_rounds rounds) took $((SECONDS - ts)) s"
fi
if has lat; then
	ts=$SECONDS
	bench_lat
	log "phase lat ($lat_rounds rounds) took $((SECONDS - ts)) s"
fi
dmesg | grep -E 'siw|rxe' | grep -vE 'siwtest' | tail -n 20 | sed 's/^/bench: dmesg: /'
log "done in $((SECONDS - tb)) s"
