#!/usr/bin/env bash
# fio's rdma engine (issue 22) between two network namespaces: its server
# (rw=read, the passive side, in h2) registers the buffers; its client (h1)
# moves data with RDMA Write and RDMA Read (verb=write|read). Each client
# job must finish with no error having moved exactly its size, the server
# must exit 0 (it ends on the client's completion message), and
# siw's counters must show the bytes on the wire. fio's engine is IPv4
# only (struct sockaddr_in): no IPv6 form. Its server ignores bindname's
# address (it converts the string's first byte), so it listens on any.
# verb=send is not run: the engine's sender does not wait for the
# receiver to post its buffers (it sleeps 0.5 s once), and an iWARP Send
# that finds no posted receive ends the connection (an untagged buffer
# must be there when the message arrives: RFC 5041).
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma fio ss python3
fio --enghelp 2>&1 | grep -qw rdma || skip "this fio is built without its rdma engine"
m=$(dmesg_mark)
rdev_netns
size=$(scale $((64 << 20)) $((16 << 20)))
bound=$(scale 120 400)
port=19871

# fio_result JSON: the error and bytes the job moved and its error, from fio's JSON output
fio_result() {
	python3 -c 'import json,sys
j=json.load(open(sys.argv[1]))["jobs"][0]
print(j["error"], j["write"]["io_bytes"] + j["read"]["io_bytes"])' "$1"
}
for verb in write read; do
	for bs in 4k 64k 1m; do
		what="$verb bs=$bs"
		port=$((port + 1))
		tx0=$(rdma_stat "$RDEV1" tx_bytes)
		rx0=$(rdma_stat "$RDEV1" rx_bytes)
		# the server's buffers: as many and as large as the client's
		bg srv ip netns exec h2 fio --name=srv --ioengine=rdma \
			--port="$port" --rw=read --bs=1m --iodepth=16 --size=$((size * 2)) \
			--output-format=json --output="$TMPD/srv.json"
		spid=$BG_PID
		wait_listen h2 "$port"
		rc=0
		timeout "$bound" ip netns exec h1 fio --name=cli --ioengine=rdma \
			--hostname="$H2_IP" --port="$port" --verb="$verb" --rw=write --bs="$bs" \
			--iodepth=8 --size="$size" --output-format=json \
			--output="$TMPD/cli.json" >"$TMPD/cli.log" 2>&1 || rc=$?
		((rc == 0)) || { show cli; cat "$TMPD/cli.json" 2>/dev/null; fail "$what: client exit $rc"; }
		wait_pid "$spid" 60 || { show srv; fail "$what: the server did not end cleanly"; }
		read -r err bytes < <(fio_result "$TMPD/cli.json") || fail "$what: no fio result"
		((err == 0 && bytes == size)) || fail "$what: error $err, $bytes bytes of $size"
		tx=$(($(rdma_stat "$RDEV1" tx_bytes) - tx0))
		rx=$(($(rdma_stat "$RDEV1" rx_bytes) - rx0))
		# Write: the client sends the data; Read: it receives it
		moved=$tx
		[[ $verb == read ]] && moved=$rx
		((moved >= size)) || fail "$what: $RDEV1 carried $moved bytes for $size"
		info "$what: $bytes bytes, $RDEV1 tx $tx rx $rx"
	done
done
left() { res_left " comm fio" qp | grep -c . || true; }
wait_for 30 test "$(left)" -eq 0 || fail "fio QPs left: $(rdma res show qp)"
dmesg_problems_since "$m"
echo "fio-rdma passed: RDMA Write and Read at 4 KiB, 64 KiB, 1 MiB"
