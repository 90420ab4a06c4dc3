#!/usr/bin/env bash
# ibv_devinfo -v on siw0: key fields present, non-zero and consistent with
# what siw_objects enforces (the same limits are queried through verbs).
# timeout: 180
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ibv_devinfo
need_tool siw_objects
rdev_lo
ibv_devinfo -v -d "$RDEV" >"$TMPD/devinfo" 2>&1 || fail "ibv_devinfo -v -d $RDEV failed: $(cat "$TMPD/devinfo")"
cat "$TMPD/devinfo"
attr() { awk -v k="$1:" '$1 == k { print $2; exit }' "$TMPD/devinfo"; }
num() { # hex or decimal -> decimal
	local v
	v=$(attr "$1")
	[[ -n $v ]] || fail "ibv_devinfo lacks $1"
	printf '%d' "$v" 2>/dev/null || fail "$1: not a number: $v"
}
for k in max_qp max_qp_wr max_sge max_cq max_cqe max_mr max_mr_size max_pd max_qp_rd_atom max_qp_init_rd_atom phys_port_cnt; do
	v=$(num "$k")
	((v > 0)) || fail "$k is $v"
	info "$k = $v"
done
# transport / link layer
if [[ $RDEV_LTYPE == siw ]]; then
	grep -qE 'transport:[[:space:]]+iWARP' "$TMPD/devinfo" || fail "transport is not iWARP"
	[[ $(attr atomic_cap) == ATOMIC_NONE ]] || fail "atomic_cap $(attr atomic_cap), expected ATOMIC_NONE"
	mtu=$(awk '$1 == "active_mtu:" { print $2; exit }' "$TMPD/devinfo")
	[[ -n $mtu ]] || fail "no active_mtu"
fi
[[ $(ibdev_port_state "$RDEV") == PORT_ACTIVE ]] || fail "port not active"
(($(num max_qp_rd_atom) >= 1 && $(num max_qp_init_rd_atom) >= 1)) || fail "rd_atom limits"
(($(num max_sge) <= 32)) || fail "max_sge $(num max_sge) implausible"
# Consistency: siw_objects queries the same limits via ibv_query_device and
# enforces them (limit works, limit+1 fails). Compare its view.
timeout 280 "$BIN/siw_objects" -d "$RDEV" >"$TMPD/obj.log" 2>&1 || { cat "$TMPD/obj.log"; fail "siw_objects failed: $(grep -m1 '^FAIL' "$TMPD/obj.log")"; }
q=$(grep -m1 '^ok - query device:' "$TMPD/obj.log") || fail "siw_objects printed no device query"
for k in max_qp_wr max_sge max_cqe max_qp_rd_atom max_pd max_srq_wr; do
	a=$(sed -n "s/.* $k \([0-9]*\).*/\1/p" <<<"$q")
	b=$(num "$k")
	[[ $a == "$b" ]] || fail "$k: ibv_devinfo says $b, ibv_query_device in siw_objects says $a"
done
a=$(sed -n 's/.* max_mr_size \(0x[0-9a-f]*\).*/\1/p' <<<"$q")
[[ $((a)) == "$(num max_mr_size)" ]] || fail "max_mr_size: devinfo $(attr max_mr_size) vs $a"
for chk in 'CQ cqe=max_cqe+1: fails' 'RC QP max_send_wr=max_qp_wr+1: fails' 'RC QP max_send_sge=max_sge+1: fails' 'SRQ max_wr=max_srq_wr+1: fails'; do
	grep -qF "ok - $chk" "$TMPD/obj.log" || fail "siw_objects did not confirm '$chk'"
done
echo "devinfo consistent"
