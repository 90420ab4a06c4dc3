#!/usr/bin/env bash
# Guest side of scripts/bench.sh (run by scripts/vm.sh on the stock kernel).
# One boot: netns h1/h2 joined by veth (tests/lib/lib.sh netns_pair), then
#   tcp   iperf3, one stream, h1 -> h2
#   ours  this project's siw (build/$KVER/siw.ko)
#   ourszc  the same with zero-copy transmit (modprobe siw zcopy_min=16384)
#   ref   the kernel's siw (build/ref/$KVER/siw.ko, scripts/build-ref.sh),
#         after rmmod of ours, same boot
#   rxe   rdma_rxe
# each perftest with -R in iteration mode (-n). Raw rows are appended to
# $SIW_BENCH_RAW (TSV, see the header line); scripts/bench.sh makes the
# table. Env: SIW_BENCH_REPS (3), SIW_BENCH_SCALE (1; iteration counts
# are multiplied by it, may be fractional), SIW_BENCH_IMPLS ("tcp ours ref rxe").
source tests/lib/lib.sh
set +e +E
trap - ERR
raw=${SIW_BENCH_RAW:?}
reps=${SIW_BENCH_REPS:-3}
scale=${SIW_BENCH_SCALE:-1}
impls=${SIW_BENCH_IMPLS:-tcp ours ourszc ref rxe}
H2=10.88.0.2
log() { echo "bench: $*"; }
mkdir -p "$(dirname "$raw")"
printf 'impl\ttest\trep\tstatus\tvalue\tvalue2\tbytes\tcpu_total_s\tcpu_kernel_s\twall_s\n' >"$raw"

# /proc/stat "cpu" line -> "busy kernel" in jiffies (USER_HZ)
cpu_now() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $4 + $7 + $8; exit }' /proc/stat; }
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
# row IMPL TEST REP STATUS VALUE VALUE2 BYTES CPU0 CPU1 T0 T1
row() {
	local c0=($8) c1=($9)
	awk -v OFS='\t' -v i="$1" -v t="$2" -v r="$3" -v s="$4" -v v="$5" -v v2="$6" -v b="$7" \
		-v ct=$((c1[0] - c0[0])) -v ck=$((c1[1] - c0[1])) -v hz="$hz" -v t0="${10}" -v t1="${11}" \
		'BEGIN { print i, t, r, s, v, v2, b, ct / hz, ck / hz, t1 - t0 }' >>"$raw"
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
log "kernel $(uname -r), $(nproc) vCPUs, reps $reps, scale $scale"

# ---- TCP -------------------------------------------------------------------
bench_tcp() {
	local r out c0 c1 t0 t1 bps bytes
	command -v iperf3 >/dev/null || { log "iperf3 missing"; return; }
	for r in $(seq "$reps"); do
		ip netns exec h2 iperf3 -s -1 -B $H2 -p 5201 >/tmp/iperf-s.log 2>&1 &
		local spid=$!
		wait_for 10 sh -c "ip netns exec h2 ss -Hltn 'sport = :5201' | grep -q ."
		c0=$(cpu_now) t0=$(now)
		out=$(ip netns exec h1 timeout 60 iperf3 -c $H2 -p 5201 -t 5 -J 2>&1)
		t1=$(now) c1=$(cpu_now)
		wait "$spid" 2>/dev/null
		bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
		bytes=$(jq -r '.end.sum_received.bytes // empty' <<<"$out" 2>/dev/null)
		if [[ -n $bps ]]; then
			row tcp iperf3 "$r" ok "$(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 8 / 1048576 }')" "" "$bytes" "$c0" "$c1" "$t0" "$t1"
			log "tcp rep $r: $(awk -v b="$bps" 'BEGIN { printf "%.1f MiB/s", b / 8 / 1048576 }')"
		else
			row tcp iperf3 "$r" fail "" "" "" "$c0" "$c1" "$t0" "$t1"
			log "tcp rep $r failed: $(tail -n 3 <<<"$out")"
		fi
	done
}

# ---- perftest --------------------------------------------------------------
# (test name, tool, size, iterations, kind)
sc() { awk -v n="$1" -v s="$scale" 'BEGIN { v = int(n * s); if (v < 5) v = 5; print v }'; }
tests=(
	"write_bw_64k ib_write_bw 65536 $(sc 800) bw"
	"read_bw_64k ib_read_bw 65536 $(sc 400) bw"
	"send_bw_1m ib_send_bw 1048576 $(sc 40) bw"
	"write_lat_64 ib_write_lat 64 $(sc 1000) lat"
	"send_lat_64 ib_send_lat 64 $(sc 1000) lat"
	"read_lat_64 ib_read_lat 64 $(sc 1000) lat"
)
port=19100
# perf IMPL DEV1 DEV2 [NS1 NS2 SERVER_IP]: server (DEV2) in NS2, client
# (DEV1) in NS1. An implementation whose first two runs fail is given up.
bench_perf() {
	local impl=$1 d1=$2 d2=$3 ns1=${4:-h1} ns2=${5:-h2} sip=${6:-$H2}
	local spec name tool size n kind r c0 c1 t0 t1 rc nok=0 nfail=0
	local x1=(ip netns exec "$ns1") x2=(ip netns exec "$ns2")
	[[ $ns1 == - ]] && x1=()
	[[ $ns2 == - ]] && x2=()
	for spec in "${tests[@]}"; do
		read -r name tool size n kind <<<"$spec"
		for r in $(seq "$reps"); do
			port=$((port + 1))
			if ((nok == 0 && nfail >= 2)); then
				row "$impl" "$name" "$r" fail "" "" "" "0 0" "0 0" 0 0
				continue
			fi
			"${x2[@]}" timeout 240 "$tool" -d "$d2" -R -p $port -F -s "$size" -n "$n" >/tmp/pt-s.log 2>&1 &
			local spid=$!
			if [[ $impl == rxe ]]; then
				sleep 2	# rxe's rdma_cm listener is no TCP socket
			else
				wait_for 60 sh -c "${x2[*]} ss -Hltn 'sport = :$port' | grep -q ." ||
					log "$impl $name rep $r: server not listening after 60 s"
			fi
			c0=$(cpu_now) t0=$(now)
			"${x1[@]}" timeout 240 "$tool" -d "$d1" -R -p $port -F -s "$size" -n "$n" "$sip" >/tmp/pt-c.log 2>&1
			rc=$?
			t1=$(now) c1=$(cpu_now)
			local src=0 v='' v2='' st=ok
			# a failed client leaves the server waiting: give it 5 s
			((rc == 0)) || { sleep 5; kill "$spid" 2>/dev/null; }
			wait "$spid" 2>/dev/null || src=$?
			# result row: first line starting with the size
			local line
			line=$(awk -v s="$size" '$1 == s && NF >= 4 { print; exit }' /tmp/pt-c.log)
			if ((rc != 0 || src != 0)) || [[ -z $line ]]; then
				st=fail
				log "$impl $name rep $r FAILED (client rc=$rc, server rc=$src): $(tail -n 3 /tmp/pt-c.log | tr '\n' '|') server: $(tail -n 2 /tmp/pt-s.log | tr '\n' '|')"
			elif [[ $kind == bw ]]; then
				# #bytes #iterations BW-peak BW-average MsgRate (MiB/s)
				v=$(awk '{ print $4 }' <<<"$line")
				# perftest under TCG sometimes reports 0.00 (clock trouble)
				[[ $v == 0.00 ]] && st=zero
			else
				# #bytes #iter t_min t_max t_typical t_avg ...
				v=$(awk '{ print $5 }' <<<"$line") v2=$(awk '{ print $6 }' <<<"$line")
			fi
			if [[ $st == ok ]]; then nok=$((nok + 1)); else nfail=$((nfail + 1)); fi
			row "$impl" "$name" "$r" "$st" "$v" "$v2" $((size * n)) "$c0" "$c1" "$t0" "$t1"
			[[ $st == ok ]] && log "$impl $name rep $r: $v${v2:+ (avg $v2)} ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
			sleep 0.5
		done
	done
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
modprobe -a ib_core ib_uverbs iw_cm rdma_cm rdma_ucm libcrc32c crc32c_generic 2>/dev/null

for impl in $impls; do
	case $impl in
	tcp) bench_tcp ;;
	ours | ourszc)
		# ourszc: ours with zero-copy transmit (zcopy_min=16384)
		zc=0
		[[ $impl == ourszc ]] && zc=16384
		(siw_install) >/dev/null 2>&1 || { log "$impl: install failed"; continue; }
		modprobe siw zcopy_min=$zc || { log "$impl: modprobe failed"; continue; }
		grep -q O /sys/module/siw/taint || { log "$impl: the loaded siw is not ours"; continue; }
		log "$impl: srcversion $(cat /sys/module/siw/srcversion 2>/dev/null) zcopy_min $(cat /sys/module/siw/parameters/zcopy_min)"
		devs_add siw siw || { log "$impl: device setup failed"; devs_del siw; siw_rm; continue; }
		bench_perf "$impl" siw1 siw2
		devs_del siw
		siw_rm || log "$impl: rmmod failed"
		;;
	ref)
		ko=$SIW_TOP/build/ref/$(uname -r)/siw.ko
		[[ -e $ko ]] || { log "ref: $ko missing (scripts/build-ref.sh)"; continue; }
		siw_rm
		insmod "$ko" || { log "ref: insmod failed"; continue; }
		log "ref: $ko srcversion $(cat /sys/module/siw/srcversion 2>/dev/null)"
		devs_add siw siw || { log "ref: device setup failed"; devs_del siw; siw_rm; continue; }
		bench_perf ref siw1 siw2
		devs_del siw
		siw_rm || log "ref: rmmod failed"
		;;
	rxe)
		# rxe on 6.1 has its UDP socket (4791) in init_net only: packets
		# arriving in h1/h2 are dropped (CM "unreachable"), so it cannot
		# span the two namespaces. It runs in init_net instead, on one veth
		# end (vr1 10.89.0.1, peer vr2 up), client and server both using
		# 10.89.0.1: rxe's own loopback path (no veth/IP/UDP), which
		# favours rxe.
		modprobe rdma_rxe || { log "rxe: modprobe failed"; continue; }
		ip link add vr1 type veth peer name vr2 && ip link set vr1 up && ip link set vr2 up &&
			ip addr add 10.89.0.1/24 dev vr1 || { log "rxe: veth setup failed"; continue; }
		rdma link add rxe0 type rxe netdev vr1 &&
			wait_for 15 test "$(ibdev_port_state rxe0)" = PORT_ACTIVE || { log "rxe: device setup failed"; continue; }
		log "rxe: rxe0 on vr1 (init netns, loopback 10.89.0.1 -> 10.89.0.1)"
		bench_perf rxe rxe0 rxe0 - - 10.89.0.1
		rdma link delete rxe0
		ip link del vr1
		;;
	esac
done
dmesg | grep -E 'siw|rxe' | grep -vE 'siwtest' | tail -n 20 | sed 's/^/bench: dmesg: /'
log "done"
