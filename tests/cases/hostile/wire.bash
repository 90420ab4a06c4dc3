#!/usr/bin/env bash
# Shared body of the hostile wire cases (sourced, not a case itself).
# wire_run MODE PORT: a siw device on veth2 in netns h2 with
# tests/bin/siw_victim on it (rdma_cm listener for MODE=active, client for
# MODE=passive), tests/tools/siw_wirepeer.py in netns h1 speaking plain
# TCP. The peer checks every case itself (see its header); here: the number
# of cases (the peer's own --list of the selection is the plan: every
# planned case must report exactly once), both tools' exit status (the
# victim, stopped with SIGINT once the peer is done, must end its
# connections and exit 0 with "EXIT bad_guard=0"), and the kernel log of
# the whole run.
# Known module bugs: cases named in tests/cases/hostile/expected-fail run
# and are reported as XFAIL, never hidden; the lead empties the list once
# fixed (an XPASS fails the case).
# Env: SIW_TEST_FULL=1 (tests/run --full) or SIW_GCOV=1 (the coverage
# build) runs the whole matrix;
# SIW_WIRE_ONLY=REGEX limits the cases (for bisecting by hand).
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"

wire_run() {
	local mode=$1 port=$2 full=() only=() m vrc=0 prc=0 vargs dev=siw2
	need_cmd rdma python3
	need_tool siw_victim
	[[ $RDEV_LTYPE == siw ]] || skip "the hostile peer attacks siw only (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
	# the coverage build (scripts/coverage.sh) runs the whole matrix: the
	# receive path's error branches are what it measures
	[[ ${SIW_TEST_FULL:-0} == 1 || ${SIW_GCOV:-0} == 1 ]] && full=(--full)
	[[ -n ${SIW_WIRE_ONLY:-} ]] && only=(--only "$SIW_WIRE_ONLY")
	m=$(dmesg_mark)
	rdev_module_load
	netns_pair
	rdev_add "$dev" veth2 h2
	# short MPA timer: the silence and flood cases wait for it
	local tpar=/sys/module/siw/parameters/mpa_timeout_ms
	[[ -w $tpar ]] || fail "no $tpar"
	local tsave
	tsave=$(<"$tpar")
	echo 4000 >"$tpar"
	on_exit "echo $tsave > $tpar"
	rdma stat show link "$dev/1" | sed 's/^/# before: /'

	local vlog=$TMPD/victim.log plog=$TMPD/peer.log
	if [[ $mode == active ]]; then
		vargs=(listen -t 1500 -w 60 "$H2_IP:$port")
	else
		vargs=(connect -t 1500 -n 400 -w 30 -r 512 -g "$TMPD/go" "$H1_IP:$port")
	fi
	: >"$vlog"
	ip netns exec h2 "$BIN/siw_victim" "${vargs[@]}" >"$vlog" 2>&1 &
	local vpid=$!
	on_exit "kill $vpid"
	[[ $mode == active ]] && wait_log "$vlog" '^READY' 30
	local counts=(--mutations "$(scale 6 3)" --flood "$(scale 24 12)")
	local peer=(python3 "$SIW_TOP/tests/tools/siw_wirepeer.py" "$mode"
		--addr "$([[ $mode == active ]] && echo "$H2_IP" || echo "$H1_IP")" --port "$port"
		--vlog "$vlog" --dev "$dev" --mpa-timeout 4 --go "$TMPD/go" --xfail "$SIW_TOP/tests/cases/hostile/expected-fail"
		"${counts[@]}" "${full[@]}" "${only[@]}")
	# the plan: the matrix's own selection for these options
	local plan nplan
	plan=$("${peer[@]}" --list) || fail "wire peer --list failed"
	nplan=$(grep -c . <<<"$plan" || true)
	((nplan > 0)) || fail "the $mode matrix selects no case (${only[*]:-no --only})"
	info "plan: $nplan $mode case(s)${only:+ (SIW_WIRE_ONLY=$SIW_WIRE_ONLY)}"
	timeout 1400 ip netns exec h1 "${peer[@]}" >"$plog" 2>&1 || prc=$?
	# the victim ends its connections and exits on SIGINT
	kill -INT "$vpid" 2>/dev/null || true
	wait_pid "$vpid" 15 || vrc=$?
	info "victim exit status $vrc (after SIGINT)"
	cat "$plog"
	echo "## victim log (last 60 of $(wc -l <"$vlog") lines)"
	tail -n 60 "$vlog" | sed 's/^/[victim] /'
	rdma stat show link "$dev/1" | sed 's/^/# after: /'
	grep -q '^SUMMARY' "$plog" || fail "wire peer did not finish (rc=$prc)"
	# every planned case reported exactly once, no other
	local ran
	ran=$(awk '$1 == "CASE" { print $2 }' "$plog" | sort)
	[[ $ran == "$(sort <<<"$plan")" ]] ||
		fail "wire peer ran $(grep -c . <<<"$ran" || true) case(s), the plan has $nplan: $(diff <(sort <<<"$plan") <(printf '%s\n' "$ran") | grep '^[<>]' | head -n 5 | tr '\n' ' ' || true)"
	grep -qE "^PLAN $mode $nplan( |\$)" "$plog" || fail "wire peer's plan differs from --list ($nplan): $(grep -m1 '^PLAN' "$plog" | cut -c1-80)"
	grep -qE "^SUMMARY $mode ran=$nplan of $nplan " "$plog" || fail "wire peer summary: $(grep '^SUMMARY' "$plog")"
	# each failed case as its own result line of tests/run
	awk -v m="$mode" '$1 == "CASE" && ($3 == "FAIL" || $3 == "XPASS") {
		r = $3; for (i = 5; i <= NF; i++) r = r " " $i
		print "@@SUBTEST FAIL " m "/" $2 " " substr(r, 1, 200) }' "$plog"
	grep -qE '^END [0-9]+ guard=bad' "$vlog" && fail "victim guard bytes changed: $(grep -m1 -E '^END [0-9]+ guard=bad' "$vlog")"
	((vrc == 0)) || fail "victim exit status $vrc, want 0: $(grep -m1 -E '^(EXIT|FAIL)' "$vlog" || tail -n 1 "$vlog")"
	grep -qE '^EXIT bad_guard=0 conns=[0-9]+ why=SIGINT$' "$vlog" ||
		fail "victim did not end cleanly on SIGINT: $(grep -m1 '^EXIT' "$vlog" || echo 'no EXIT line')"
	dmesg_since "$m" | grep -E 'siw|Terminate' | tail -n 25 | sed 's/^/[dmesg] /'
	dmesg_problems_since "$m"
	kmemleak_scan_check || fail "kmemleak after the $mode wire cases: $KMEMLEAK_WHY"
	((prc == 0)) || fail "wire peer: $(grep '^SUMMARY' "$plog") (rc=$prc)"
	echo "wire $mode passed: $nplan of $nplan planned cases ran; $(grep '^SUMMARY' "$plog"); victim $(grep -m1 '^EXIT' "$vlog")"
}
