#!/usr/bin/env bash
# Open MPI over siw between two hosts (network namespaces h1 and h2, two
# ranks on each): tests/bin/siw_mpi ping-pongs 1 B..4 MiB between rank 0
# and every other rank with each byte checked, then Allreduce, Alltoall and
# Bcast with known answers, over the way Debian 12's Open MPI 4.1 reaches
# iWARP: the ofi MTL (pml cm) on libfabric's verbs provider through
# ofi_rxm. The other two RDMA paths do not offer themselves here: the
# openib BTL has no rdmacm connection manager in Debian's build ("cpc name
# not found"; its udcm one needs UD QPs, which iWARP does not have), and
# the ofi BTL over verbs;ofi_rxm left only "self" (both tried 2026-12-02,
# "BTLs attempted: self"). mpirun
# starts the remote ranks through a launch agent that enters the other
# namespace instead of ssh. Each run: "ok -" from siw_mpi, the transport
# named in Open MPI's own selection output (a siw device as the ofi
# provider's domain), siw's counters on h2's device carrying the
# ping-pong bytes, and no shared-memory or TCP path allowed (pml cm).
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd mpirun orted rdma
need_tool siw_mpi
[[ $RDEV_LTYPE == siw ]] || skip "runs Open MPI over siw (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
m=$(dmesg_mark)
rdev_netns
agent=$TMPD/agent
cat >"$agent" <<EOF
#!/bin/sh
# mpirun's launch agent (plm_rsh_agent): AGENT HOST COMMAND..., the command
# run in the namespace that holds HOST's address, as ssh would run it there
host=\$1; shift
case \$host in
$H1_IP) ns=h1 ;;
$H2_IP) ns=h2 ;;
*) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
chmod +x "$agent"
rounds=$(scale 3 1)
# mpi_run NAME MCA...: 4 ranks, 2 per host, the given transport only
mpi_run() {
	local name=$1 rc=0 b0 b1; shift
	b0=$(rdma_stat "$RDEV2" rx_bytes)
	timeout "$(scale 240 1200)" ip netns exec h1 mpirun --allow-run-as-root -np 4 \
		--host "$H1_IP:2,$H2_IP:2" --mca plm_rsh_agent "$agent" \
		--mca oob_tcp_if_include "$H1_IP/24" "$@" \
		"$BIN/siw_mpi" "$rounds" >"$TMPD/$name.log" 2>&1 || rc=$?
	b1=$(rdma_stat "$RDEV2" rx_bytes)
	sed "s/^/[$name] /" "$TMPD/$name.log" | grep -vE 'btl_base_verbose|select: init' | tail -n 40
	((rc == 0)) || fail "$name: mpirun exited $rc: $(grep -m1 -E 'FAIL|rror' "$TMPD/$name.log")"
	grep -q '^ok - siw_mpi: 4 ranks' "$TMPD/$name.log" || fail "$name: siw_mpi printed no summary"
	# the ping-pong of rank 0 with ranks 2 and 3 (on h2) crosses the link:
	# 2 ranks x rounds x 5.6 MB each way at least
	((b1 - b0 > 2 * rounds * 5000000)) ||
		fail "$name: $RDEV2 received $((b1 - b0)) bytes: the job did not run over siw"
	info "$name: passed, $RDEV2 received $((b1 - b0)) bytes"
}
mpi_run mtl --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include 'verbs;ofi_rxm' \
	--mca mtl_base_verbose 30
grep -qE "mtl:ofi:provider: ($RDEV1|$RDEV2)" "$TMPD/mtl.log" ||
	fail "mtl: Open MPI's ofi MTL did not name a siw device as its provider"
dmesg_problems_since "$m"
echo "mpi passed: 4 ranks on 2 hosts over siw, ofi MTL (libfabric verbs;ofi_rxm), every byte checked"
