#!/usr/bin/env bash
# Helpers for guest test cases. Source it from a case script:
#   source "$(dirname "$0")/../../lib/lib.sh"
# Cases run as root inside the VM, cwd = tree top ($SIW_TOP, same absolute
# path as on the host). Exit 0 = pass, 77 = skip (print reason via skip),
# anything else = fail.
#
# Environment (set by scripts/vm.sh / scripts/guest-cases.sh):
#   SIW_TOP      project tree            SIW_KERNEL  stock|debug
#   SIW_ROLE     a|b (pair groups)       SIW_MY_IP / SIW_PEER_IP (pair)
#   SIW_CASE     case name
# and from here: SIW_KO (build/$(uname -r)/siw.ko unless set)
set -eEuo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

: "${SIW_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
SIW_KO=${SIW_KO:-$SIW_TOP/build/$(uname -r)/siw.ko}
export SIW_TOP SIW_KO

# ---- results ---------------------------------------------------------------
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: ${*:-no reason given}"; exit 77; }
info() { echo "# $*"; }
# notice TEXT: a retry or a repeat the case made (tests/run lists each as a
# NOTICE line above its final line, not only in the case's log)
notice() { echo "@@NOTICE $*"; }
# On an unexpected failing command (set -e), name it.
trap 'echo "FAIL: command failed (rc=$?) at line $LINENO: $BASH_COMMAND" >&2' ERR

# ---- cleanup on exit -------------------------------------------------------
_siw_exit_cmds=()
on_exit() { _siw_exit_cmds=("$*" "${_siw_exit_cmds[@]}"); }
_siw_run_exit() {
	local rc=$? c
	trap - ERR
	set +e
	for c in "${_siw_exit_cmds[@]}"; do eval "$c" >/dev/null 2>&1; done
	exit "$rc"
}
trap _siw_run_exit EXIT

# power_cut: end the case as passed and have scripts/guest-cases.sh power
# this guest off at once (exit 78), with no cleanup: processes keep running
# and connections stay open until the power goes, as in a power failure.
power_cut() {
	_siw_exit_cmds=()
	trap - EXIT ERR
	exit 78
}

# ---- misc ------------------------------------------------------------------
# need_cmd CMD...: a missing command fails the case, unless scripts/README.md
# lists it as optional (section "Optional tools"): then the case is skipped.
need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 && continue
		if optional_tools | grep -qxF "$c"; then
			skip "command '$c' not available (optional, scripts/README.md)"
		fi
		fail "command '$c' not available (scripts/deps.sh installs it; not listed as optional in scripts/README.md)"
	done
}
# optional_tools: the commands scripts/README.md lists as optional, one a line
optional_tools() {
	sed -n '/^## Optional tools/,/^## /s/^- `\([^`]*\)`.*/\1/p' "$SIW_TOP/scripts/README.md"
}
is_debug_kernel() { [[ $(uname -r) == *siwdebug* ]]; }

# pt_calib_missed FILE...: perftest printed that its TSC calibration missed.
# perftest fits the TSC against gettimeofday before it reports; on a busy
# TCG host the fit can fall below r^2 0.9 ("Correlation coefficient r^2:
# ... < 0.9"). The transfer itself ran, but the tool then reports nothing
# usable: without -F it exits 1 ("Can't produce a report"), with -F a
# bandwidth tool prints 0.00 and a latency tool inf. Such a run is repeated.
pt_calib_missed() { grep -qs 'Correlation coefficient r^2' "$@"; }
# PT_NOCONN: what perftest's client prints when its first connection
# failed: its own data-exchange connection, or (third) the test QP's,
# which the client makes right after a handshake after which the server
# only starts listening. TCP refuses it when that listen is not up yet
# (-111), perftest 4.5-0.17 retries it with the ids it has just freed
# (SIGSEGV), and the server waits for ever: perftest's race, not
# retried by the tool.
# shellcheck disable=SC2034 # used by caselib.sh and interop.bash
PT_NOCONN='Unable to perform rdma_client function|Unexpected CM event|Event: RDMA_CM_EVENT_REJECTED; error: -111'
# pt_klog_only_refused: stdin (kernel lines of one perftest run) holds no
# line of the module but a refused connect's ("TCP connect to ... failed:
# -111"): nothing the module saw explains the failure but perftest's race
pt_klog_only_refused() {
	awk 'tolower($0) ~ /siw/ && !/siwtest/ && !/TCP connect to [^ ]+ failed: -111$/ { bad = 1 }
		END { exit bad }'
}
# pt_has_figures FILE: a perftest results row with a nonzero figure (not
# the 0.00 or inf of a missed calibration)
pt_has_figures() { grep -qE '^ *[0-9]+ +[0-9]+ +[0-9.]*[1-9]' "$1"; }
# pt_result_ok FILE "PERFTEST ARGS": FILE (a client's output) has a result
# row with figures; or perftest's TSC calibration missed (under TCG it
# does, even three runs in a row), so the figures are its clock's, and a
# row shows all the -n iterations done (with the exit code, every work
# request completed). Sets PT_NOCLOCK=1 in that second case.
pt_result_ok() {
	local iters
	PT_NOCLOCK=0
	pt_has_figures "$1" && return 0
	iters=$(sed -nE 's/(^|.* )-n ([0-9]+)( .*|$)/\2/p' <<<"$2")
	[[ -n $iters ]] && pt_calib_missed "$1" &&
		grep -qE "^ *[0-9]+ +$iters +" "$1" || return 1
	# shellcheck disable=SC2034 # for the caller
	PT_NOCLOCK=1
}

# expect_fail CMD...: CMD must exit non-zero; its output in $EXPECT_OUT
expect_fail() {
	local rc=0
	EXPECT_OUT=$("$@" 2>&1) || rc=$?
	((rc != 0)) || fail "expected failure, but succeeded: $*${EXPECT_OUT:+ (output: $EXPECT_OUT)}"
	return 0
}
# run CMD...: run and fail with the output if it fails
run() {
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	((rc == 0)) || fail "'$*' failed (rc=$rc): $out"
	[[ -z $out ]] || printf '%s\n' "$out"
}

# wait_for TIMEOUT_S CMD...: poll CMD (every 0.2 s) until it succeeds.
wait_for() {
	local t=$1; shift
	local end=$((SECONDS + t))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# res_show ARGS..: `rdma res show ARGS`, or, if rdma fails, one line
# "RDMA-RES-FAILED ..." and status 1. Teardown checks grep or count what
# this prints for what is left: a failed query must not read as "none".
res_show() {
	local out rc=0
	out=$(rdma res show "$@" 2>&1) || rc=$?
	if ((rc)); then
		echo "RDMA-RES-FAILED (rc $rc) rdma res show $*: $out"
		return 1
	fi
	printf '%s\n' "$out"
}
# res_left PATTERN ARGS..: the lines of `rdma res show ARGS` matching the
# ERE PATTERN (what a teardown left), or res_show's failure line: empty
# only when rdma answered and nothing matched
res_left() {
	local pat=$1 out
	shift
	out=$(res_show "$@") || { printf '%s\n' "$out"; return 0; }
	grep -E "$pat" <<<"$out" || true
}

# rdma_listening PORT: an rdma_cm listener on PORT exists (any device and
# address, from `rdma res show cm_id`). rxe's rdma_cm listener is no TCP
# socket, so ss cannot see it. rdma_cm marks the ID LISTEN a moment before
# the transport listens (seen on siw: a perftest client connecting right
# then failed), so for siw wait for the TCP listener (tcp_listening), and
# for rxe give the client a retry or a moment more.
rdma_listening() {
	rdma res show cm_id 2>/dev/null | grep -qE "state LISTEN .*src-addr [^ ]+:$1( |$)"
}
# tcp_listening PORT [NETNS]: a TCP listener on PORT (in NETNS; none or
# empty: this one)
tcp_listening() {
	local ns=()
	[[ -n ${2:-} ]] && ns=(ip netns exec "$2")
	"${ns[@]}" ss -Hltn "sport = :$1" | grep -q .
}

# ---- dmesg -----------------------------------------------------------------
# m=$(dmesg_mark); ...; dmesg_since "$m"  -> kernel lines logged after mark
_siw_mark_n=0
dmesg_mark() {
	_siw_mark_n=$((_siw_mark_n + 1))
	local id="siwtest-mark-$$-$_siw_mark_n-$RANDOM"
	echo "siwtest: $id" >/dev/kmsg
	echo "$id"
}
# proc_stacks PID...: the kernel stack of each thread of each PID, a line
# per thread (where a process that should have ended is blocked)
proc_stacks() {
	local p t
	for p in "$@"; do
		for t in /proc/"$p"/task/*; do
			[[ -e $t ]] || continue
			echo "pid $p thread ${t##*/}: $(tr '\n' ' ' 2>/dev/null <"$t/stack" | cut -c1-400)"
		done
	done
}
# blocked_stacks: every task in uninterruptible sleep (D), kernel threads
# included, with its kernel stack, a line each (where a teardown waits)
blocked_stacks() {
	local s st comm
	for s in /proc/[0-9]*/task/[0-9]*; do
		read -r st 2>/dev/null <"$s/stat" || continue
		st=${st##*) }
		[[ ${st%% *} == D ]] || continue
		comm=$(cat "$s/comm" 2>/dev/null)
		echo "task ${s##*/} ($comm): $(tr '\n' ' ' 2>/dev/null <"$s/stack" | cut -c1-600)"
	done
}
dmesg_since() {
	dmesg | awk -v id="siwtest: $1" 'found { print; next } index($0, id) { found = 1 }'
}

# ---- module ----------------------------------------------------------------
_siw_updates() { echo "/lib/modules/$(uname -r)/updates"; }
# siw_install [KO]: our siw.ko into updates/ (wins over the in-tree siw in
# depmod's search order), then depmod. Idempotent.
# siw_install [KO]: our modules (build/$KVER/*.ko, siw.ko at least) into
# /lib/modules/$KVER/updates/ (wins over the in-tree siw in depmod's search
# order) and the module index updated; idempotent. Uses the index that
# scripts/build.sh prepared (build/$KVER/modindex) when it matches, else
# runs depmod -a (slow under TCG: it reads every module over 9p).
# shellcheck disable=SC2120
siw_install() {
	local ko=${1:-$SIW_KO} upd k changed=0
	upd=$(_siw_updates)
	[[ -e $ko ]] || fail "module not built: $ko missing (tests/run builds it; or scripts/build.sh $(uname -r))"
	local dir kos=()
	dir=$(dirname "$ko")
	kos=("$ko")
	for k in "$dir"/*.ko; do [[ $k == "$ko" ]] || kos+=("$k"); done
	mkdir -p "$upd"
	for k in "${kos[@]}"; do
		cmp -s "$k" "$upd/$(basename "$k")" && continue
		cp -f "$k" "$upd/"
		changed=1
	done
	if ((changed)); then
		local mi ok=1
		mi=$dir/modindex/lib/modules/$(uname -r)
		for k in "${kos[@]}"; do cmp -s "$k" "$mi/updates/$(basename "$k")" || ok=0; done
		if ((ok)) && [[ -e $mi/modules.dep.bin ]]; then
			cp -f "$mi"/modules.* "/lib/modules/$(uname -r)/"
		else
			depmod -a
		fi
	fi
	local p
	p=$(modinfo -n "$(basename "$ko" .ko)" 2>/dev/null) || fail "modinfo cannot find $(basename "$ko" .ko) after depmod"
	[[ $p == "$upd/$(basename "$ko")" ]] || fail "modinfo resolves $(basename "$ko" .ko) to $p, not $upd"
}
siw_loaded() { [[ -d /sys/module/siw ]]; }
siw_load() {
	siw_install "$SIW_KO"
	siw_loaded || run modprobe siw "$@"
	siw_loaded || fail "siw not loaded after modprobe"
	siw_is_ours || fail "the loaded siw is not $SIW_KO (in-tree module loaded?)"
}
# siw_is_ours: the loaded siw is the out-of-tree build (taint flag O; the
# in-tree siw of the debug kernel has none), same srcversion if exposed.
siw_is_ours() {
	siw_loaded || return 1
	grep -q O /sys/module/siw/taint 2>/dev/null || return 1
	if [[ -r /sys/module/siw/srcversion ]]; then
		[[ $(</sys/module/siw/srcversion) == "$(modinfo -F srcversion "$SIW_KO")" ]] || return 1
	fi
	return 0
}
# siw_fresh: start of a case: no siw loaded (removes its devices), ours installed
siw_fresh() {
	siw_unload
	siw_install "$SIW_KO"
}
# siw_add NAME NETDEV: rdma link add NAME type siw netdev NETDEV, must appear
siw_add() {
	run rdma link add "$1" type siw netdev "$2"
	rdma_link_exists "$1" || fail "rdma link add $1 succeeded but $1 is not listed: $(rdma link show)"
}
# siw_gone NAME: wait up to 10 s until no trace of device NAME is left
siw_gone() {
	wait_for "${2:-10}" _siw_absent "$1"
}
_siw_absent() {
	! rdma_link_exists "$1" && ! rdma_dev_exists "$1" && [[ ! -e /sys/class/infiniband/$1 ]] &&
		! ibv_devices 2>/dev/null | awk '{print $1}' | grep -qx "$1"
}
siw_unload() {
	siw_loaded || return 0
	local i
	for i in $(seq 50); do
		rmmod siw 2>/dev/null && break
		sleep 0.2
	done
	siw_loaded && fail "rmmod siw failed: $(rmmod siw 2>&1)"
	return 0
}

# ---- rdma / verbs ----------------------------------------------------------
rdma_link_exists() { rdma link show 2>/dev/null | grep -qE "^link $1/[0-9]+ "; }
rdma_dev_exists() { rdma dev show 2>/dev/null | grep -qE "^[0-9]+: $1:"; }
# ibdev_port_state DEV [PORT]: PORT_ACTIVE / PORT_DOWN / ... from ibv_devinfo
ibdev_port_state() {
	local port=${2:-1}
	ibv_devinfo -d "$1" -i "$port" 2>/dev/null | awk '$1 == "state:" { print $2; exit }'
}
# ibdev_attr DEV KEY: value of "KEY:" from ibv_devinfo -v (first match)
ibdev_attr() {
	ibv_devinfo -v -d "$1" 2>/dev/null | awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }'
}

# ---- networks --------------------------------------------------------------
# veth_pair [A B]: veth A <-> B in the root netns, both up (default veth1/veth2)
veth_pair() {
	local a=${1:-veth1} b=${2:-veth2}
	ip link del "$a" 2>/dev/null || true
	run ip link add "$a" type veth peer name "$b"
	run ip link set "$a" up
	run ip link set "$b" up
	on_exit "ip link del $a"
}
# netns_pair: netns h1 (veth1, 10.88.0.1/24) and h2 (veth2, 10.88.0.2/24)
netns_pair() {
	netns_cleanup
	run ip netns add h1
	run ip netns add h2
	on_exit netns_cleanup
	run ip link add veth1 netns h1 type veth peer name veth2 netns h2
	local i
	for i in 1 2; do
		run ip -n "h$i" link set lo up
		run ip -n "h$i" addr add "10.88.0.$i/24" dev "veth$i"
		run ip -n "h$i" link set "veth$i" up
	done
	wait_for 10 ip netns exec h1 ping -c1 -W1 10.88.0.2 || fail "netns_pair: no ping h1 -> h2"
}
netns_cleanup() {
	ip netns del h1 2>/dev/null || true
	ip netns del h2 2>/dev/null || true
	ip link del veth1 2>/dev/null || true
}

# ---- pair groups -----------------------------------------------------------
# One line from role a to role b: b listens on PORT, a connects and writes.
_pair_hear() { # NAME TIMEOUT PORT -> the line on stdout
	timeout "$2" busybox nc -l -p "$3" </dev/null || fail "barrier '$1': peer did not arrive in ${2}s"
}
_pair_say() { # NAME TIMEOUT PORT LINE [HOST]
	local end=$((SECONDS + $2)) host=${5:-$SIW_PEER_IP}
	until (exec 3<>"/dev/tcp/$host/$3" && echo "$4" >&3) 2>/dev/null; do
		((SECONDS < end)) || fail "barrier '$1': peer did not arrive in ${2}s"
		sleep 0.2
	done
}
# pair_barrier NAME [TIMEOUT [PORT]]: both guests wait here until the other
# arrives (role b listens, role a connects); fails if the names differ.
pair_barrier() {
	local name=$1 t=${2:-120} port=${3:-45999} got
	[[ -n ${SIW_ROLE:-} && -n ${SIW_PEER_IP:-} ]] || fail "pair_barrier outside a pair group"
	if [[ $SIW_ROLE == b ]]; then
		got=$(_pair_hear "$name" "$t" "$port")
		[[ $got == "$name" ]] || fail "barrier '$name': peer is at '$got'"
	else
		_pair_say "$name" "$t" "$port" "$name"
	fi
}
# node_barrier NAME [TIMEOUT [PORT]]: every guest of the boot waits here
# until all have arrived. A pair: pair_barrier. N nodes (SIW_NODES): each
# node but a tells a on a port of its own (derived from PORT and its
# role), a waits for all of them and then releases each on PORT. PORT:
# fresh per call, as for pair_barrier.
node_barrier() {
	local name=$1 t=${2:-120} port=${3:-45999} got i r
	if [[ -z ${SIW_NODES:-} ]]; then
		pair_barrier "$name" "$t" "$port"
		return
	fi
	local ips
	read -ra ips <<<"$SIW_NODE_IPS"
	if [[ $SIW_ROLE == a ]]; then
		for ((i = 1; i < ${#ips[@]}; i++)); do
			r=$(printf "\\$(printf '%03o' $((97 + i)))")
			got=$(_pair_hear "$name" "$t" $((50000 + port % 1000 * 10 + i)))
			[[ $got == "$name $r" ]] || fail "barrier '$name': node $r is at '$got'"
		done
		for ((i = 1; i < ${#ips[@]}; i++)); do
			_pair_say "$name" "$t" "$port" "$name" "${ips[$i]}"
		done
	else
		i=$(($(printf '%d' "'$SIW_ROLE") - 97))
		_pair_say "$name" "$t" $((50000 + port % 1000 * 10 + i)) "$name $SIW_ROLE" "${ips[0]}"
		got=$(_pair_hear "$name" "$t" "$port")
		[[ $got == "$name" ]] || fail "barrier '$name': node a is at '$got'"
	fi
}
# pair_or NAME FLAG [TIMEOUT]: a barrier at which both guests learn whether
# either passed FLAG 1: PAIR_OR is 1 or 0 on both (b tells a, a tells b).
pair_or() {
	local name=$1 mine=$2 t=${3:-120} port=45997 got
	[[ -n ${SIW_ROLE:-} && -n ${SIW_PEER_IP:-} ]] || fail "pair_or outside a pair group"
	if [[ $SIW_ROLE == b ]]; then
		_pair_say "$name" "$t" "$port" "$name $mine"
		got=$(_pair_hear "$name" "$t" "$port")
	else
		got=$(_pair_hear "$name" "$t" "$port")
		[[ $got == "$name "[01] ]] || fail "barrier '$name': peer is at '$got'"
		_pair_say "$name" "$t" "$port" "$name $((mine || ${got##* }))"
	fi
	[[ $got == "$name "[01] ]] || fail "barrier '$name': peer is at '$got'"
	# shellcheck disable=SC2034 # for the caller
	PAIR_OR=$((mine || ${got##* }))
}

# ---- kmemleak ----------------------------------------------------------------
# kmemleak_required: this kernel is built with kmemleak (its config says so,
# or it is the debug kernel), so kmemleak must be there, on and scanning
kmemleak_required() {
	is_debug_kernel || grep -qx 'CONFIG_DEBUG_KMEMLEAK=y' "/boot/config-$(uname -r)" 2>/dev/null
}
# kmemleak_report: scan and print what kmemleak holds (empty when nothing);
# returns 2 when this kernel has no kmemleak (no debugfs file), 3 when it
# has one that refuses to scan or to report: kmemleak turned itself off
# (after an internal error it disables itself; "scan" then fails with
# EPERM) - the reason on stderr.
kmemleak_report() {
	local f=/sys/kernel/debug/kmemleak why
	[[ -e $f ]] || return 2
	sleep 6 # objects younger than 5 s are never reported
	if ! { echo scan >"$f" && sleep 1 && echo scan >"$f" && cat "$f"; } 2>/dev/null; then
		why=$(dmesg | grep -E 'kmemleak: ' | grep -vE 'new suspected memory leak|kmemleak-' | tail -n 3 | tr '\n' ' ')
		echo "kmemleak is present but does not scan or report (off: disabled after an error?): ${why:-nothing in dmesg}" >&2
		return 3
	fi
}

# kmemleak_scan_check: 0 when kmemleak reports nothing new; on a kernel
# built without kmemleak also 0, with a "not checked" line. Else 1: a
# report (printed, then cleared: later checks see only newer leaks), or
# kmemleak missing or off on a kernel built with it (kmemleak_required);
# KMEMLEAK_WHY says which, for the caller's verdict.
kmemleak_scan_check() {
	local rep rc=0
	KMEMLEAK_WHY=
	rep=$(kmemleak_report 2>&1) || rc=$?
	if ((rc == 2)); then
		if kmemleak_required; then
			KMEMLEAK_WHY="kmemleak missing on $(uname -r), a kernel built with it (no /sys/kernel/debug/kmemleak)"
			echo "$KMEMLEAK_WHY" >&2
			return 1
		fi
		info "kmemleak: not checked ($(uname -r) is built without it)"
		return 0
	fi
	if ((rc != 0)); then
		KMEMLEAK_WHY=$rep
		echo "$KMEMLEAK_WHY" >&2
		return 1
	fi
	[[ -z $rep ]] && return 0
	KMEMLEAK_WHY="kmemleak found unreferenced objects"
	echo "$KMEMLEAK_WHY:" >&2
	printf '%s\n' "$rep" | head -n 80 >&2
	echo clear >/sys/kernel/debug/kmemleak
	return 1
}

# kmemleak_attribute REPORT KIND OURS_KO OTHER_KO [FUNCTION]: prove, object by
# object, that a kmemleak REPORT is not ours. An object is OTHER_KO's when its
# backtrace holds a function of module siw ("[siw]") that OTHER_KO defines and
# OURS_KO does not (with FUNCTION given: that function only). When every
# object has such proof: logs one "siwtest: kmemleak-waived ADDR KIND FN" line
# per object (scripts/logscan.sh then does not count the kmemleak scan line),
# clears kmemleak and returns 0. Else prints the first unproved object to
# stderr and returns 1, clearing nothing.
kmemleak_attribute() {
	local rep=$1 kind=$2 ours=$3 other=$4 only=${5:-} proofs
	[[ -n $rep ]] || return 0
	[[ -r $ours && -r $other ]] || { echo "kmemleak_attribute: missing $ours or $other" >&2; return 1; }
	proofs=$(awk -v ours=<(kmemleak_ko_funcs "$ours") -v other=<(kmemleak_ko_funcs "$other") -v only="$only" '
		BEGIN { while ((getline l < ours) > 0) o[l] = 1; while ((getline l < other) > 0) x[l] = 1 }
		function close_obj() {
			if (addr == "") return
			if (proof == "") { bad = 1; print "UNPROVED " addr; exit }
			print addr, proof
		}
		/^unreferenced object 0x/ { close_obj(); addr = $3; proof = ""; next }
		/\[siw\]/ && proof == "" {
			fn = $0
			# "    [<addr>] fn+0x1/0x2 [siw]" (6.1) or "    fn+0x1/0x2 [siw]" (6.12)
			sub(/^[ \t]*(\[<[0-9a-f]+>\] )?/, "", fn); sub(/\+0x.*/, "", fn)
			if ((only == "" || fn == only) && (fn in x) && !(fn in o)) proof = fn
		}
		END { if (!bad) close_obj() }' <<<"$rep")
	if [[ -z $proofs || $proofs == *UNPROVED* ]]; then
		local a=${proofs##*UNPROVED }
		echo "kmemleak: object ${a:-?} has no backtrace function that only $other has:" >&2
		awk -v a="$a" '$0 ~ "^unreferenced object " a { p = 1 } p && /^unreferenced object/ && $0 !~ a { exit } p' <<<"$rep" | head -n 30 >&2
		return 1
	fi
	local addr fn
	while read -r addr fn; do
		echo "siwtest: kmemleak-waived $addr $kind $fn" >/dev/kmsg
	done <<<"$proofs"
	echo clear >/sys/kernel/debug/kmemleak
	return 0
}
# kmemleak_ko_funcs KO: the function names KO defines, one a line
kmemleak_ko_funcs() { nm --defined-only "$1" | awk '$2 ~ /^[tT]$/ { print $3 }' | sort -u; }

# dmesg_problems_since MARK: fail if the kernel logged a problem report
# after MARK (the patterns of scripts/logscan.patterns, via logscan.sh).
dmesg_problems_since() {
	local bad f
	f=$(mktemp)
	dmesg_since "$1" >"$f"
	bad=$("$SIW_TOP/scripts/logscan.sh" "$f") || true
	rm -f "$f"
	[[ -z $bad ]] || fail "kernel reported a problem: $(printf '%s\n' "$bad" | sed 's/^[^:]*:[0-9]*: //' | head -n 5)"
}
# rdma_links: names of all RDMA links
rdma_links() { rdma link show 2>/dev/null | awk '$1 == "link" { sub(/\/.*/, "", $2); print $2 }'; }
