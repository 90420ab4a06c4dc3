#!/usr/bin/env bash
# Helpers shared by the verbs/, datapath/ and pair-datapath/ cases.
# Source AFTER tests/lib/lib.sh:
#   source "$(dirname "$0")/../../lib/lib.sh"
#   source "$SIW_TOP/tests/lib/caselib.sh"
#
# SIW_DEV_TYPE selects the RDMA device type the cases run on:
#   siw      (default) this project's module (siw_load, our siw.ko)
#   siw-ref  the kernel's in-tree siw (debug kernel ships it), for comparison
#   rxe      the kernel's soft-RoCE, to validate the tools/cases themselves
# (a host SIW_DEV_TYPE reaches the guest: it is on tests/run's allow-list
# of the SIW_* variables passed in; no other host SIW_* variable is)
#
# Device names: "${RDEV_PFX}0" on lo, "${RDEV_PFX}1" on veth1 (netns h1),
# "${RDEV_PFX}2" on veth2 (netns h2); RDEV_PFX is siw or rxe.
#
# Network namespaces and rdma devices: `rdma link add` looks the netdev up
# in the caller's netns, so the veth ends (already moved into h1/h2 by
# netns_pair) are bound with `ip netns exec hN rdma link add ...`. The rdma
# subsystem is in "shared" netns mode by default (rdma system show), so both
# devices are visible from both namespaces; rdma_cm picks the device by the
# IP address it binds/resolves, and each side uses its own namespace's IP
# (10.88.0.1 in h1, 10.88.0.2 in h2).
# shellcheck disable=SC2034 # variables for the sourcing case scripts
BIN=$SIW_TOP/tests/bin
SIW_DEV_TYPE=${SIW_DEV_TYPE:-siw}
case $SIW_DEV_TYPE in
siw | siw-ref) RDEV_PFX=siw; RDEV_LTYPE=siw ;;
rxe) RDEV_PFX=rxe; RDEV_LTYPE=rxe ;;
*) fail "unknown SIW_DEV_TYPE=$SIW_DEV_TYPE" ;;
esac
H1_IP=10.88.0.1
H2_IP=10.88.0.2

need_tool() {
	local t
	for t in "$@"; do
		[[ -x $BIN/$t ]] || fail "$BIN/$t not built (make -C tests/tools)"
	done
}

# rdma_stat DEV COUNTER: one counter of `rdma stat show link DEV/1`
rdma_stat() {
	rdma stat show link "$1/1" 2>/dev/null |
		grep -oE "(^| )$2 [0-9]+" | awk '{ print $2 }'
}

# scale N_STOCK N_DEBUG: pick the iteration count for this kernel
scale() { if is_debug_kernel; then echo "$2"; else echo "$1"; fi; }

rdev_module_load() {
	case $SIW_DEV_TYPE in
	siw) siw_load ;;
	siw-ref)
		local ko
		ko=$(find "/lib/modules/$(uname -r)/kernel/drivers/infiniband/sw/siw" -name 'siw.ko*' 2>/dev/null | head -n1)
		[[ -n $ko ]] || skip "no in-tree siw.ko for $(uname -r)"
		modprobe ib_core; modprobe ib_uverbs; modprobe rdma_ucm
		[[ -d /sys/module/siw ]] || modprobe libcrc32c 2>/dev/null || true
		[[ -d /sys/module/siw ]] || insmod "$ko" || fail "insmod $ko"
		;;
	rxe) modprobe rdma_rxe || fail "modprobe rdma_rxe" ;;
	esac
	modprobe rdma_ucm 2>/dev/null || true
	modprobe ib_uverbs 2>/dev/null || true
}

# rdev_add NAME NETDEV [NETNS]: create an rdma link, wait for PORT_ACTIVE,
# delete it on exit.
rdev_add() {
	local name=$1 nd=$2 ns=${3:-}
	local pre=()
	[[ -n $ns ]] && pre=(ip netns exec "$ns")
	on_exit "rdma link delete $name"
	"${pre[@]}" rdma link add "$name" type "$RDEV_LTYPE" netdev "$nd" ||
		fail "rdma link add $name type $RDEV_LTYPE netdev $nd${ns:+ (netns $ns)} failed"
	wait_for 15 test "$(ibdev_port_state "$name")" = PORT_ACTIVE ||
		fail "$name: port not active ($(ibdev_port_state "$name"))"
}

# rdev_lo: device ${RDEV_PFX}0 on lo; sets RDEV
rdev_lo() {
	rdev_module_load
	ip link set lo up
	RDEV=${RDEV_PFX}0
	rdev_add "$RDEV" lo
}

# rdev_netns: netns h1/h2 joined by veth1/veth2, device ${RDEV_PFX}1 on
# veth1 (h1) and ${RDEV_PFX}2 on veth2 (h2); sets RDEV1 RDEV2
rdev_netns() {
	rdev_module_load
	netns_pair
	RDEV1=${RDEV_PFX}1 RDEV2=${RDEV_PFX}2
	rdev_add "$RDEV1" veth1 h1
	rdev_add "$RDEV2" veth2 h2
}

# wait_port NETNS IP PORT [TIMEOUT]: until a TCP listener (rdma_cm iWARP
# listens on a real TCP port; rxe does not) or the server's "listening"
# line shows up. Used with a server log file: wait_log FILE REGEX TIMEOUT
wait_log() {
	local f=$1 re=$2 t=${3:-30}
	wait_for "$t" grep -qE "$re" "$f"
}

# bg NAME CMD...: start CMD in the background, output to $TMPD/NAME.log,
# pid in BG_PID; killed on exit.
TMPD=$(mktemp -d /tmp/siwcase.XXXXXX)
on_exit "rm -rf $TMPD"
bg() {
	local name=$1; shift
	"$@" >"$TMPD/$name.log" 2>&1 &
	BG_PID=$!
	on_exit "kill $BG_PID"
}
# wait_pid PID TIMEOUT: wait for PID with a bound; returns its status
# (124 on timeout, after killing it)
wait_pid() {
	local pid=$1 t=$2 end=$((SECONDS + $2)) rc=0
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= end)); then
			kill -TERM "$pid" 2>/dev/null; sleep 1; kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 124
		fi
		sleep 0.2
	done
	wait "$pid" || rc=$?
	return "$rc"
}
# show NAME: print a background log with a prefix
show() { sed "s/^/[$1] /" "$TMPD/$1.log"; }

# zcclose_start ZCOPY_MIN PORT N SIZE SRV_SECS: siw's zcopy_min set to
# ZCOPY_MIN (its value back on exit); a siw_zcclose server in h2 and a
# client in h1 that will post N Sends of SIZE, connected; then the path
# h1 -> h2 black-holed (netem loss 100%, removed on exit). Logs srv and
# cli; the client waits for $TMPD/go.post and $TMPD/go.close. Sets
# ZC_SPID and ZC_CPID. Needs rdev_netns.
zcclose_start() {
	local zmin=$1 port=$2 n=$3 size=$4 st=$5 par=/sys/module/siw/parameters old
	[[ -w $par/zcopy_min ]] || fail "siw has no writable zcopy_min parameter"
	old=$(<"$par/zcopy_min")
	echo "$zmin" >"$par/zcopy_min"
	on_exit "if [[ -w $par/zcopy_min ]]; then echo $old >$par/zcopy_min; fi"
	bg srv ip netns exec h2 "$BIN/siw_zcclose" server -t "$st" "$H2_IP:$port"
	ZC_SPID=$BG_PID
	wait_log "$TMPD/srv.log" '^# listening' 30 || { show srv; fail "server did not start"; }
	bg cli ip netns exec h1 "$BIN/siw_zcclose" client -n "$n" -s "$size" -t 30 \
		-P "$TMPD/go.post" -g "$TMPD/go.close" "$H2_IP:$port"
	ZC_CPID=$BG_PID
	wait_log "$TMPD/cli.log" '^# connected' 30 || { show cli; show srv; fail "client not connected"; }
	wait_log "$TMPD/srv.log" '^# ready' 30 || { show cli; show srv; fail "server not connected"; }
	on_exit "ip netns exec h1 tc qdisc del dev veth1 root"
	run ip netns exec h1 tc qdisc add dev veth1 root netem loss 100%
}

# wait_listen NETNS PORT: wait until a TCP listener on PORT exists in NETNS
# (iWARP listeners are real kernel TCP sockets). Devices without a TCP
# listener (rxe) get a fixed 2 s grace period instead.
wait_listen() {
	local ns=$1 p=$2
	if [[ $RDEV_LTYPE == siw ]]; then
		wait_for 60 tcp_listening "$p" "$ns" || fail "no listener on port $p in netns $ns"
	else
		# rdma_cm shows LISTEN just before rxe's CM listens (lib.sh)
		wait_for 60 rdma_listening "$p" || fail "no rdma_cm listener on port $p"
		sleep 1
	fi
}

# srv_cli T NAME PORT "SRV CMD" "CLI CMD": server in h2, client in h1 (both
# commands are run through ip netns exec, word-split), bounded by T
# seconds each. Output in $TMPD/NAME.srv / NAME.cli; sets SRV_RC CLI_RC.
srv_cli() {
	local t=$1 name=$2 p=$3 scmd=$4 ccmd=$5
	# shellcheck disable=SC2086
	timeout "$t" ip netns exec h2 $scmd >"$TMPD/$name.srv" 2>&1 &
	local spid=$!
	on_exit "kill $spid"
	wait_listen h2 "$p"
	CLI_RC=0 SRV_RC=0 SRV_STOPPED=0
	# shellcheck disable=SC2086
	timeout "$t" ip netns exec h1 $ccmd >"$TMPD/$name.cli" 2>&1 || CLI_RC=$?
	if ((CLI_RC != 0)) && [[ -n ${SRV_CLI_NOCONN:-} ]] &&
		grep -qE "$SRV_CLI_NOCONN" "$TMPD/$name.cli" && kill -0 "$spid" 2>/dev/null; then
		# the client failed before it connected: the server waits for
		# a connection that will not come. What it waits in is logged.
		srv_left_waiting "$name" "$spid"
		kill -TERM "$spid" 2>/dev/null || true
		SRV_STOPPED=1
	fi
	wait_pid "$spid" "$t" || SRV_RC=$?
	echo "## $name: server '$scmd' rc=$SRV_RC$( ((SRV_STOPPED)) && echo ' (stopped)'), client '$ccmd' rc=$CLI_RC"
	sed "s/^/[$name srv] /" "$TMPD/$name.srv" | tail -n 40
	sed "s/^/[$name cli] /" "$TMPD/$name.cli" | tail -n 40
	((CLI_RC != 124 && SRV_RC != 124)) || fail "$name: timed out after ${t}s"
}
srv_left_waiting() { # NAME PID: stacks, cm_ids, QPs and sockets of a stuck server
	local name=$1 pid=$2
	info "$name: the client failed before it connected; the server is stopped. It waited in:"
	# shellcheck disable=SC2046 # pids, one word each
	proc_stacks "$pid" $(pgrep -P "$pid" || true) | sed "s/^/# [$name stuck] /"
	{ rdma res show cm_id; rdma res show qp; ip netns exec h2 ss -tan; } 2>&1 |
		sed "s/^/# [$name stuck] /"
}

# srv_cli_pt: srv_cli for a perftest pair. A run whose TSC calibration
# missed (pt_calib_missed) and that therefore has no result row or a
# failed side is repeated, twice at most. A run whose client could not
# make its first connection (PT_NOCONN: perftest's race, lib.sh) while
# the module logged nothing but the refused connect is repeated, twice at
# most; its server, left waiting, is stopped at once. Every repeat is a
# NOTICE.
# The caller checks the last run. PT_RUNS: how many runs it took, of them
# PT_NOCONN_RUNS for the failed first connection.
srv_cli_pt() {
	local name=$2 m calib=0 line
	PT_NOCONN_RUNS=0
	for PT_RUNS in 1 2 3 4 5; do
		m=$(dmesg_mark)
		SRV_CLI_NOCONN=$PT_NOCONN srv_cli "$@"
		((CLI_RC == 0 && SRV_RC == 0)) &&
			pt_has_figures "$TMPD/$name.cli" && return 0
		if pt_calib_missed "$TMPD/$name.cli" "$TMPD/$name.srv" && ((calib < 2)); then
			calib=$((calib + 1))
			info "$name: perftest's TSC calibration missed (run $PT_RUNS), no figures; repeating"
			# a retry: tests/run lists it as a NOTICE in its summary
			echo "@@NOTICE $name: perftest's TSC calibration missed (run $PT_RUNS); repeated"
			sleep 1
			continue
		fi
		if ((SRV_STOPPED && PT_NOCONN_RUNS < 2)) && dmesg_since "$m" | pt_klog_only_refused; then
			PT_NOCONN_RUNS=$((PT_NOCONN_RUNS + 1))
			line=$(grep -m1 -E "$PT_NOCONN" "$TMPD/$name.cli" | sed 's/^ *//')
			info "$name: perftest's client could not make its first connection (run $PT_RUNS); repeating"
			echo "@@NOTICE $name: perftest's client failed its first connection (run $PT_RUNS: $line, client rc $CLI_RC); repeated"
			continue
		fi
		return 0
	done
}

# rdev_veth_local: device ${RDEV_PFX}0 on veth end vh1 (10.89.0.1/24, peer
# vh2 up, both in the init netns); sets RDEV and RDEV_IP. For one process
# that connects to itself over rdma_cm: an iWARP device on lo cannot be
# found by address (lo has no hardware address, so the GID never matches
# and rdma_resolve_addr fails), but connecting 10.89.0.1 -> 10.89.0.1 runs
# the TCP connection over loopback with the device resolved through vh1.
rdev_veth_local() {
	rdev_module_load
	veth_pair vh1 vh2
	ip addr add 10.89.0.1/24 dev vh1 || fail "ip addr add on vh1"
	RDEV=${RDEV_PFX}0 RDEV_IP=10.89.0.1
	rdev_add "$RDEV" vh1
}

# ---- wire checks (tshark's iWARP dissectors) --------------------------------
# tshark costs seconds per start in a TCG guest (tens of seconds on the debug
# kernel), so a capture is read once for all counts (wire_scan) and once more
# for the CRC verdicts (wire_crc); the detailed queries run only when a count
# says something is wrong. The SMB-Direct / RPC-over-RDMA heuristics on
# iWARP Send payloads are not wire checks (they raised exceptions on
# perftest's small Sends): off.
wire_tsh() { # CAP ARGS...
	local cap=$1
	shift
	tshark -n --disable-heuristic smb_direct_iwarp --disable-heuristic rpcrdma_iwarp \
		-r "$cap" "$@" 2>>"$TMPD/tshark.err"
}

# Display filters wire_scan counts frames of, by name.
WIRE_FILTERS=(
	all 'frame'
	req 'iwarp_mpa.req'
	rep 'iwarp_mpa.rep'
	fpdu 'iwarp_mpa.fpdu'
	ddp 'iwarp_ddp'
	rdma 'iwarp_rdma'
	malformed '_ws.malformed'
	complaint 'iwarp_mpa.bad_length || iwarp_mpa.res.not_set0 || iwarp_mpa.rev.not_set1 || iwarp_mpa.rej_flag == 1'
	terminate 'iwarp_rdma.opcode == 7'
	crc_check 'iwarp_mpa.crc_check'
	rep_crc 'iwarp_mpa.rep && iwarp_mpa.crc_flag == 1'
	expert '(iwarp_mpa || iwarp_ddp || iwarp_rdma) && _ws.expert.severity >= 6291456'
)

wire_filter() { # NAME -> its display filter
	local i
	for ((i = 0; i < ${#WIRE_FILTERS[@]}; i += 2)); do
		[[ ${WIRE_FILTERS[i]} == "$1" ]] && { echo "${WIRE_FILTERS[i + 1]}"; return 0; }
	done
	return 1
}

# wire_scan CAP: one tshark pass. Sets WIRE[name] (frame counts for
# WIRE_FILTERS), writes $TMPD/wire.mpa ("frame req rep rev marker crc rej
# pdlen" per MPA request/reply frame) and $TMPD/wire.ops (RDMAP opcode
# counts). Fails the case if tshark gives no statistics.
declare -gA WIRE=()
wire_scan() {
	local cap=$1 z=io,stat,0 i raw=$TMPD/wire.raw
	for ((i = 1; i < ${#WIRE_FILTERS[@]}; i += 2)); do z+=",${WIRE_FILTERS[i]}"; done
	wire_tsh "$cap" -Y 'iwarp_mpa.req || iwarp_mpa.rep || iwarp_rdma' -T fields \
		-e frame.number -e iwarp_mpa.req -e iwarp_mpa.rep -e iwarp_mpa.rev -e iwarp_mpa.marker_flag \
		-e iwarp_mpa.crc_flag -e iwarp_mpa.rej_flag -e iwarp_mpa.pdlength -e iwarp_rdma.opcode \
		-z "$z" >"$raw" || true
	awk -F'\t' '/^[0-9]+\t/ && ($2 != "" || $3 != "") { print $1, ($2 != "" ? 1 : 0), ($3 != "" ? 1 : 0), $4, $5, $6, $7, $8 }' \
		"$raw" >"$TMPD/wire.mpa"
	awk -F'\t' '/^[0-9]+\t/ && $9 != "" { n = split($9, a, ","); for (k = 1; k <= n; k++) c[a[k]]++ }
		END { for (o in c) printf "%7d %s\n", c[o], o }' "$raw" | sort -k2 >"$TMPD/wire.ops"
	# io,stat's data row: "| 0.000 <> 1.234 | f1 | b1 | f2 | b2 | ..."
	local row
	row=$(awk -F'|' '/<>/ { s = ""; for (k = 3; k < NF; k += 2) { gsub(/ /, "", $k); s = s " " $k } print s; exit }' "$raw")
	local -a cnt
	read -r -a cnt <<<"$row"
	((${#cnt[@]} == ${#WIRE_FILTERS[@]} / 2)) ||
		fail "tshark gave no statistics for $cap: $(tail -n 3 "$raw") $(tail -n 3 "$TMPD/tshark.err")"
	WIRE=()
	for ((i = 0; i < ${#cnt[@]}; i++)); do WIRE[${WIRE_FILTERS[2 * i]}]=${cnt[i]}; done
}

# wire_crc CAP: second pass for the FPDU CRC verdicts tshark gives only in
# its verbose text ("CRC check: 0x... (Good CRC32)" / "(Bad CRC32, should
# be 0x...)"). Sets WIRE[crc_good], WIRE[crc_bad]; $TMPD/wire.crc has the bad lines.
wire_crc() {
	local cap=$1
	wire_tsh "$cap" -Y iwarp_mpa.fpdu -V -O iwarp_mpa | grep -E '^ *CRC check: ' >"$TMPD/wire.crc.all" || true
	WIRE[crc_good]=$(grep -c 'Good CRC32' "$TMPD/wire.crc.all" || true)
	grep -v 'Good CRC32' "$TMPD/wire.crc.all" >"$TMPD/wire.crc" || true
	WIRE[crc_bad]=$(wc -l <"$TMPD/wire.crc")
}

# wire_faults CAP: empty when WIRE (from wire_scan) shows no fault; else one
# line naming the first kind with the frames (and decodes them to stdout).
# Faults: malformed frames, MPA header complaints, Terminates, expert
# warnings/errors inside iWARP frames (TCP-level ones such as window or
# retransmission notes are not iWARP faults).
wire_faults() {
	local cap=$1 bad f
	if ((WIRE[malformed])); then
		bad=$(wire_tsh "$cap" -Y '_ws.malformed' -T fields -e frame.number | head -n 5 | xargs)
		f=${bad%% *}
		[[ -n $f ]] && wire_tsh "$cap" -Y "frame.number == $f" -V | sed -n '/Transmission Control Protocol/,$p' | tail -n 60 >&2
		echo "malformed frames: $bad"
		return
	fi
	if ((WIRE[complaint])); then
		echo "MPA complaints (bad length / reserved / revision / reject) in frames: $(wire_tsh "$cap" -Y "$(wire_filter complaint)" -T fields -e frame.number | head -n 5 | xargs)"
		return
	fi
	if ((WIRE[terminate])); then
		echo "RDMAP Terminate in frames: $(wire_tsh "$cap" -Y 'iwarp_rdma.opcode == 7' -T fields -e frame.number | head -n 3 | xargs)"
		return
	fi
	if ((WIRE[expert])); then
		bad=$(wire_tsh "$cap" -Y "$(wire_filter expert)" -T fields -e frame.number -e _ws.expert.message |
			grep -viE 'tcp|window|retransmission|dup ack|keep-alive' | head -n 5 || true)
		[[ -z $bad ]] || echo "expert warnings/errors in iWARP frames: $(xargs <<<"$bad")"
	fi
}
