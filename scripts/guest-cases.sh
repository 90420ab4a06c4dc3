#!/usr/bin/env bash
# shellcheck disable=SC2031,SC2016
# Guest side of tests/run: runs the cases of one boot (one group, or several
# groups one after the other) in this VM.
# Env (from tests/run via vm.sh):
#   SIW_CASES    "group/case.sh:TIMEOUT ..." in run order (paths below
#                tests/cases)
#   SIW_RESULTS  results file (absolute; [.<role>] added); the cases'
#                group/<case>[.<role>].out files go to its directory
# Each case runs in its own bash process with a hard timeout, cwd = tree
# top, SIW_CASE = its name, output to its .out file. Console markers:
#   @@CASE-BEGIN <case>      @@CASE-END <case> rc=N secs=S
# A case exiting 78 passes and powers this guest off at once, with its
# processes still running (a peer's power cut; the case must be the last
# of its boot: its group has an own-boot file, see tests/run).
# results line: "<case> PASS|FAIL|SKIP <rc> <secs> <reason...>"
set -uo pipefail
top=${SIW_TOP:?}
sfx=${SIW_ROLE:+.$SIW_ROLE}
res=${SIW_RESULTS:?}$sfx
out=$(dirname "$res")
mkdir -p "$out"
: >"$res"

peer_ok=1
if [[ -n ${SIW_ROLE:-} ]]; then
	# Wait for the other guests on the private link.
	end=$((SECONDS + 180))
	for ip in ${SIW_NODE_IPS:-$SIW_PEER_IP}; do
		[[ $ip == "$SIW_MY_IP" ]] && continue
		until ping -c1 -W1 "$ip" >/dev/null 2>&1; do
			if ((SECONDS >= end)); then peer_ok=0; break; fi
			sleep 0.5
		done
		((peer_ok)) || { echo "guest-cases: peer $ip unreachable"; break; }
	done
fi

# stuck_case NAME OUT: NAME outlived its timeout and the kill: log the
# blocked tasks' stacks (console) and a FAIL reason; later cases of this
# boot are not run, the kernel holds a task that cannot end
stuck_case() {
	echo "guest-cases: $1 still runs ${grace}s after its limit; blocked tasks:"
	echo w >/proc/sysrq-trigger
	{
		echo "processes in D state:"
		ps -eo pid,stat,wchan:32,args | awk 'NR == 1 || $2 ~ /^D/'
		echo "FAIL: still running ${grace}s after its ${t}s limit and the kill: a task is stuck in the kernel (stacks: console log, sysrq w)"
	} >>"$2" 2>&1
	stuck_name=$1
}

# seconds a case may outlive its timeout and kill before it counts as stuck
grace=60
stuck_name=
i=0
for spec in $SIW_CASES; do
	c=${spec%:*} t=${spec##*:}
	i=$((i + 1))
	name=${c%.sh}
	of=$out/$name$sfx.out
	mkdir -p "$(dirname "$of")"
	echo "@@CASE-BEGIN $name"
	start=$SECONDS
	if [[ -n $stuck_name ]]; then
		echo "FAIL: not run: $stuck_name is stuck in the kernel" >"$of"; rc=1
	elif ((!peer_ok)); then
		echo "FAIL: peer guest unreachable on the pair link" >"$of"; rc=1
	else
		rc=0
		if [[ -n ${SIW_ROLE:-} ]]; then
			# All guests start each case together.
			(source "$top/tests/lib/lib.sh"; node_barrier "case-$i-${name//\//-}" 600 $((46000 + i))) >"$of" 2>&1 || rc=1
		fi
		if ((rc == 0)); then
			# timeout makes itself a process-group leader and kills the whole
			# group on expiry; leftovers of a finished case are killed too.
			SIW_CASE=${name##*/} timeout -k 10 "$t" bash -c 'cd "$SIW_TOP" && exec bash "$0"' "$top/tests/cases/$c" </dev/null >>"$of" 2>&1 &
			tpid=$!
			# timeout(1) waits for its killed child: a task stuck in
			# the kernel (D state) would hold this boot until the
			# host's VM limit, hours in a long tier. A watchdog ends
			# the wait $grace s after the case's own limit instead.
			stuck=0
			trap 'stuck=1' USR1
			(sleep $((t + 10 + grace)) && kill -USR1 $$) 2>/dev/null &
			wpid=$!
			wait "$tpid" || rc=$?
			# the watchdog's sleep first: no orphan left per case
			((stuck)) || { pkill -P "$wpid" 2>/dev/null; kill "$wpid" 2>/dev/null; }
			wait "$wpid" 2>/dev/null
			trap - USR1
			if ((stuck)); then
				stuck_case "$name" "$of"
				rc=124
			fi
			# 78: the case asks for a power cut of this guest now, its
			# processes and connections as they are (pair-faults)
			((rc == 78)) || kill -KILL -- "-$tpid" 2>/dev/null
			((!stuck && (rc == 124 || rc == 137))) && echo "FAIL: case timed out after ${t}s" >>"$of"
		fi
	fi
	secs=$((SECONDS - start))
	reason=
	# a power cut (78) only in a group booted alone for it (own-boot)
	if ((rc == 78)) && [[ ! -e $top/tests/cases/${c%%/*}/own-boot ]]; then
		echo "FAIL: exit 78 (a power cut) outside a group with an own-boot file" >>"$of"
		rc=1
	fi
	case $rc in
	0 | 78) st=PASS ;;
	77)
		reason=$(sed -n 's/^SKIP: //p' "$of" | tail -n1)
		if [[ -n $reason ]]; then st=SKIP; else st=FAIL reason="exit 77 without a SKIP: reason line"; fi
		;;
	*)
		st=FAIL
		reason=$(grep -E '^FAIL: ' "$of" | tail -n1 | cut -c7-200)
		[[ -n $reason ]] || reason="exit status $rc"
		;;
	esac
	echo "$c $st $rc $secs $reason" >>"$res"
	sync "$res" 2>/dev/null || sync
	echo "@@CASE-END $name rc=$rc secs=$secs"
	if ((rc == 78)); then
		# like pulling the plug: no process exits, no socket closes (the
		# kernel log up to here is on the console; no kmemleak scan).
		# sysrq b resets at once; qemu runs with -no-reboot, so it ends.
		# Not sysrq o: its orderly device shutdown under live traffic
		# left virtio-net's NAPI spinning (a soft lockup in ksoftirqd).
		echo "guest-cases: $name asked for a power cut; cutting it at once"
		echo "@@SIWVM-EXIT rc=0 power cut by $name"
		sync
		echo b >/proc/sysrq-trigger
		sleep 600
	fi
done
exit 0
