#!/usr/bin/env bash
# MPI and libfabric across a three-host cluster over siw (issue 22): three
# guests on one L2 segment (roles a, b, c; siw0 on each one's eth0).
# - Open MPI 4.1, 6 ranks, 2 per host, through the ofi MTL on libfabric's
#   verbs;ofi_rxm (the way Debian's Open MPI reaches iWARP, see
#   datapath/mpi): tests/bin/siw_mpi ping-pongs 1 B..4 MiB between rank 0
#   and every other rank with each byte checked (rank 0 prints latency
#   and bandwidth by size against rank 5, on host c), then Allreduce,
#   Alltoall and Bcast with known answers. mpirun on a starts the remote
#   ranks with tests/tools/siw_rexec.py as its launch agent (no ssh in
#   the guests). The ofi MTL must name siw0 as its provider's domain and
#   siw0 on a must carry the ping-pong's bytes.
# - libfabric around the ring (a->b, b->c, c->a, one link at a time):
#   fi_pingpong with data checks (-c) over every size, on an RDM endpoint
#   (verbs;ofi_rxm) and on a MSG endpoint (verbs).
# The figures are those of three TCG guests sharing two host cores.
# timeout: 900
# timeout-debug: 3000
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd mpirun orted rdma fi_pingpong ss python3
need_tool siw_mpi
[[ -n ${SIW_NODES:-} ]] || skip "cluster case run outside a cluster boot"
[[ $RDEV_LTYPE == siw ]] || skip "runs over siw (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
m=$(dmesg_mark)
read -ra ips <<<"$SIW_NODE_IPS"
T=$(scale 300 1200)
rdev_module_load
RDEV=${RDEV_PFX}0
rdev_add "$RDEV" eth0
for ip in "${ips[@]}"; do
	wait_for 30 ping -c1 -W1 "$ip" || fail "no ping to $ip"
done
rexec=$SIW_TOP/tests/tools/siw_rexec.py
if [[ $SIW_ROLE != a ]]; then
	bg rexec python3 "$rexec" --serve 46777
	wait_for 30 tcp_listening 46777 || { show rexec; fail "siw_rexec does not listen"; }
fi
ulp_barrier ready "$T"

# ---- MPI: a runs the job ----------------------------------------------------
if [[ $SIW_ROLE == a ]]; then
	rounds=$(scale 3 1)
	b0=$(rdma_stat "$RDEV" rx_bytes)
	rc=0
	timeout "$(scale 300 1500)" mpirun --allow-run-as-root -np 6 \
		--host "${ips[0]}:2,${ips[1]}:2,${ips[2]}:2" \
		--mca plm_rsh_agent "$rexec" --mca oob_tcp_if_include "${ips[0]}/24" \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include 'verbs;ofi_rxm' \
		--mca mtl_base_verbose 30 \
		"$BIN/siw_mpi" "$rounds" >"$TMPD/mpi.log" 2>&1 || rc=$?
	b1=$(rdma_stat "$RDEV" rx_bytes)
	grep -vE 'btl_base_verbose|select: init' "$TMPD/mpi.log" | tail -n 40 | sed 's/^/[mpi] /'
	((rc == 0)) || ulp_fail "mpirun exited $rc: $(grep -m1 -E 'FAIL|rror' "$TMPD/mpi.log")"
	grep -q '^ok - siw_mpi: 6 ranks' "$TMPD/mpi.log" || ulp_fail "siw_mpi printed no summary"
	grep -qE "mtl:ofi:provider: $RDEV" "$TMPD/mpi.log" ||
		ulp_fail "Open MPI's ofi MTL did not name $RDEV as its provider"
	n=$(grep -c '^# pingpong 0<->5: ' "$TMPD/mpi.log" || true)
	((n == 12)) || ulp_fail "$n ping-pong rows of 12 (1 B .. 4 MiB)"
	# rank 0 ping-pongs with 4 ranks on b and c: rounds x 5.6 MB each way
	((b1 - b0 > 4 * rounds * 5000000)) ||
		ulp_fail "$RDEV received $((b1 - b0)) bytes: the job did not run over siw"
	info "mpi: 6 ranks on 3 hosts passed, $RDEV on a received $((b1 - b0)) bytes"
fi
ulp_barrier mpi-done "$T"

# ---- libfabric: a ring of fi_pingpong -----------------------------------------
# one link of the ring at a time (a->b, b->c, c->a): three guests under
# TCG on two host cores, each side busy-polling, leave little CPU for two
# ping-pongs at once (all three at once ran at ~2 MB/s per link)
iters=$(scale 5 2)
bound=$(scale 300 1200)
me=$(($(printf '%d' "'$SIW_ROLE") - 97))
port=19850
for spec in "rdm verbs;ofi_rxm" "msg verbs"; do
	read -r ep prov <<<"$spec"
	for k in 0 1 2; do
		srv=$(((k + 1) % 3)) port=$((port + 1))
		if ((me == srv)); then
			timeout "$bound" env FI_LOG_LEVEL=warn fi_pingpong -p "$prov" -e "$ep" -d "$RDEV" \
				-B "$port" -I "$iters" -S all -c >"$TMPD/$ep-srv.log" 2>&1 &
			spid=$!
			on_exit "kill $spid 2>/dev/null"
			wait_for 30 tcp_listening "$port" || fail "fi_pingpong $ep server does not listen on $port"
		fi
		ulp_barrier "fi-$ep-$k-server" "$T"
		if ((me == k)); then
			rc=0
			timeout "$bound" env FI_LOG_LEVEL=warn fi_pingpong -p "$prov" -e "$ep" -d "$RDEV" \
				-P "$port" -I "$iters" -S all -c "${ips[$srv]}" >"$TMPD/$ep-cli.log" 2>&1 || rc=$?
			sed "s/^/[$ep to ${ips[$srv]}] /" "$TMPD/$ep-cli.log" | tail -n 25
			((rc == 0)) || ulp_fail "fi_pingpong $ep to ${ips[$srv]}: client exit $rc: $(tail -n 2 "$TMPD/$ep-cli.log" | tr '\n' ' ')"
			n=$(grep -cE '^[0-9]+[kmg]? +[0-9]+[kmg]? ' "$TMPD/$ep-cli.log" || true)
			((n >= 10)) || ulp_fail "fi_pingpong $ep: $n result rows, expected one per size"
			info "libfabric $ep ($prov) to ${ips[$srv]}: $n sizes, data checked"
		fi
		if ((me == srv)); then
			src=0
			wait_pid "$spid" 120 || src=$?
			((src == 0)) || ulp_fail "fi_pingpong $ep server: exit $src: $(grep -m1 -E 'error|fail' "$TMPD/$ep-srv.log")"
		fi
		ulp_barrier "fi-$ep-$k-done" "$T"
	done
done
wait_for 30 ulp_no_qps || ulp_fail "QPs left on $RDEV: $(rdma res show qp)"
dmesg_problems_since "$m"
echo "cluster mpi-fabric passed ($SIW_ROLE): Open MPI across 3 hosts and a libfabric ring over siw"
