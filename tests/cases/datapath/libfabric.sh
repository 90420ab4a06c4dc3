#!/usr/bin/env bash
# libfabric's verbs provider over siw between two network namespaces, as
# MPI and libfabric applications use it (issue 22): fi_info lists the
# device; fi_pingpong with data checks (-c) over every size, first on a
# verbs MSG endpoint, then on an RDM endpoint through ofi_rxm (the type
# Open MPI's ofi MTL and most libfabric applications use). The RDM
# endpoint's fi_enable() used to fail with EINVAL: ofi_rxm asks for one
# CQ of (rx + tx size) x universe size = 262144 entries (libfabric 1.17
# defaults), siw allowed 65536.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma fi_info fi_pingpong ss
[[ $RDEV_LTYPE == siw ]] || skip "libfabric's verbs provider over siw only (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
m=$(dmesg_mark)
rdev_netns

ip netns exec h2 fi_info -p verbs >"$TMPD/fi_info.log" 2>&1 ||
	fail "fi_info -p verbs failed: $(tail -n 2 "$TMPD/fi_info.log")"
grep -qE "domain: +$RDEV2\$" "$TMPD/fi_info.log" ||
	fail "fi_info -p verbs does not list $RDEV2: $(grep -E 'domain:' "$TMPD/fi_info.log" | sort -u | tr '\n' ' ')"
info "fi_info lists $(grep -cE 'domain: ' "$TMPD/fi_info.log") verbs entries"

iters=$(scale 20 5)
bound=$(scale 120 600)
port=19800
# ping_pong NAME PROVIDER EP: one server and one client, every size, data
# checked; both must exit 0 and the client must report its sizes
ping_pong() {
	local name=$1 prov=$2 ep=$3 rc=0 srv
	port=$((port + 1))
	ip netns exec h2 timeout "$bound" env FI_LOG_LEVEL=warn fi_pingpong -p "$prov" -e "$ep" -d "$RDEV2" \
		-B "$port" -I "$iters" -S all -c >"$TMPD/$name-srv.log" 2>&1 &
	srv=$!
	on_exit "kill $srv 2>/dev/null"
	wait_listen h2 "$port"
	timeout "$bound" ip netns exec h1 env FI_LOG_LEVEL=warn fi_pingpong -p "$prov" -e "$ep" -d "$RDEV1" \
		-P "$port" -I "$iters" -S all -c "$H2_IP" >"$TMPD/$name-cli.log" 2>&1 || rc=$?
	sed "s/^/[$name client] /" "$TMPD/$name-cli.log"
	src=0
	wait_pid "$srv" 60 || src=$?
	sed "s/^/[$name server] /" "$TMPD/$name-srv.log" | grep -vE '^\[[a-z]+ server\] [0-9]'
	((src == 0)) || fail "$name: server exit $src (124: still running 60 s after its client, client rc=$rc): $(grep -m1 -E 'error|fail' "$TMPD/$name-srv.log")"
	((rc == 0)) || fail "$name: client exit $rc (124: not done in ${bound} s): $(tail -n 2 "$TMPD/$name-cli.log" | tr '\n' ' ')"
	# a row per size: "bytes iters total time MB/sec usec/xfer Mxfers/sec"
	n=$(grep -cE '^[0-9]+[kmg]? +[0-9]+[kmg]? ' "$TMPD/$name-cli.log" || true)
	((n >= 10)) || fail "$name: $n result rows, expected one per size (at least 10)"
	info "$name: $n sizes, data checked"
}
ping_pong rdm "verbs;ofi_rxm" rdm
ping_pong msg verbs msg
dmesg_problems_since "$m"
echo "libfabric passed"
