#!/usr/bin/env bash
# The siw trace system (include/siw_trace.h), through tracefs in an
# instance of its own: a short rping between netns h1 (siw1, client) and
# h2 (siw2, server), then one faulty RDMA Write (siw_datacheck
# --error=bad-rkey). Checked: every event exists with its fields; CEP
# states with both addresses, the MPA outcome (rev, crc, ird/ord) on both
# ends, QPs IDLE -> RTS; per-WR events (siw_sqe/siw_rqe/siw_cqe) with QP
# number, opcode and length; for the error: the receive error on the
# target, the Terminate it sent and the one the initiator received with
# the same layer/type/code, both QPs in ERROR with the function that
# decided it, and the flushed completions after it.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma rping ss
need_tool siw_datacheck
m=$(dmesg_mark)
tr=/sys/kernel/tracing
[[ -d $tr/events ]] || mount -t tracefs nodev "$tr" || fail "cannot mount tracefs"
[[ -d $tr/instances ]] || fail "tracefs has no instances directory"

rdev_netns
events=(siw_qp_state siw_cep_state siw_mpa siw_term_send siw_term_recv
	siw_rx_error siw_sqe siw_rqe siw_cqe)
for e in "${events[@]}"; do
	[[ -e $tr/events/siw/$e/format ]] || fail "no tracepoint siw:$e"
done
# fields user space tools decode
for ef in siw_qp_state:qpn siw_qp_state:caller siw_cep_state:raddr \
	siw_mpa:rev siw_mpa:crc siw_mpa:ird siw_mpa:ord siw_term_send:ecode \
	siw_rx_error:what siw_sqe:opcode siw_sqe:len siw_cqe:status; do
	grep -qE "field:.* ${ef#*:}(\[[0-9]+\])?;" "$tr/events/siw/${ef%%:*}/format" ||
		fail "siw:${ef%%:*} has no field ${ef#*:}"
done

inst=$tr/instances/siwtest$$
mkdir "$inst" || fail "cannot create trace instance $inst"
on_exit "rmdir $inst"
on_exit "echo 0 > $inst/events/siw/enable"
echo 8192 >"$inst/buffer_size_kb"
echo 1 >"$inst/events/siw/enable"

# ---- a short transfer --------------------------------------------------
c=5
srv_cli 200 rping 7174 "rping -s -a $H2_IP -p 7174 -v -V -C $c -S 1000" \
	"rping -c -a $H2_IP -p 7174 -v -V -C $c -S 1000"
((CLI_RC == 0 && SRV_RC == 0)) || fail "rping: client rc $CLI_RC, server rc $SRV_RC"
sleep 1
cp "$inst/trace" "$TMPD/ok.trace"
echo >"$inst/trace"
t=$TMPD/ok.trace
info "$(grep -c 'siw_' "$t") siw events during rping; a sample:"
grep -E 'siw_(cep_state|mpa|qp_state)' "$t" | head -n 20 | sed 's/^ *//'

# must_see FILE ERE WHAT: the trace has a line matching ERE
must_see() { grep -qE "$2" "$1" || fail "no $3 in the trace (/$2/)"; }
ip4='10\.88\.0'
must_see "$t" "siw_cep_state: siw1 qpn [1-9][0-9]* active local $ip4\.1:[0-9]+ peer $ip4\.2:7174 [A-Z_]+ -> RDMA" \
	"active CEP -> RDMA with both addresses"
must_see "$t" "siw_cep_state: siw2 qpn [1-9][0-9]* passive local $ip4\.2:7174 peer $ip4\.1:[0-9]+ [A-Z_]+ -> RDMA" \
	"passive CEP -> RDMA with both addresses"
must_see "$t" "siw_mpa: siw1 qpn [1-9][0-9]* active peer $ip4\.2:7174 rev 2 crc [01] ird [0-9]+ ord [1-9][0-9]* rtr 0 rtr_op 0 err 0" \
	"active MPA outcome"
must_see "$t" "siw_mpa: siw2 qpn [1-9][0-9]* passive peer $ip4\.1:[0-9]+ rev 2 crc [01] ird [1-9][0-9]* ord [0-9]+ rtr 0 rtr_op 0 err 0" \
	"passive MPA outcome"
# the QP numbers agree across events
q1=$(grep -m1 -oE 'siw_mpa: siw1 qpn [0-9]+' "$t" | awk '{print $4}')
q2=$(grep -m1 -oE 'siw_mpa: siw2 qpn [0-9]+' "$t" | awk '{print $4}')
must_see "$t" "siw_qp_state: siw1 qpn $q1 IDLE -> RTS by " "siw1 QP $q1 IDLE -> RTS"
must_see "$t" "siw_qp_state: siw2 qpn $q2 IDLE -> RTS by " "siw2 QP $q2 IDLE -> RTS"
# rping: the server Reads the client's buffer and Writes it back, the
# client Sends its buffer descriptors; c iterations of 1000 bytes
n=$(grep -cE "siw_sqe: siw2 qpn $q2 wr_id 0x[0-9a-f]+ READ len 1000 num_sge 1 flags 0x[0-9a-f]+ SUCCESS" "$t")
((n >= c)) || fail "$n siw_sqe READ len 1000 on the server QP, expected $c"
n=$(grep -cE "siw_sqe: siw2 qpn $q2 wr_id 0x[0-9a-f]+ WRITE len 1000 " "$t")
((n >= c)) || fail "$n siw_sqe WRITE len 1000 on the server QP, expected $c"
n=$(grep -cE "siw_sqe: siw1 qpn $q1 wr_id 0x[0-9a-f]+ SEND len [1-9][0-9]* " "$t")
((n >= c)) || fail "$n siw_sqe SEND on the client QP, expected >= $c"
n=$(grep -cE "siw_rqe: siw2 qpn $q2 wr_id 0x[0-9a-f]+ RECEIVE len [1-9][0-9]* " "$t")
((n >= c)) || fail "$n siw_rqe RECEIVE on the server QP, expected >= $c"
n=$(grep -cE "siw_cqe: siw2 cq [0-9]+ qpn $q2 wr_id 0x[0-9a-f]+ READ len 1000 SUCCESS" "$t")
((n >= c)) || fail "$n siw_cqe READ len 1000 SUCCESS on the server, expected $c"
n=$(grep -cE "siw_cqe: siw2 cq [0-9]+ qpn $q2 wr_id 0x[0-9a-f]+ RECEIVE len [1-9][0-9]* SUCCESS" "$t")
((n >= c)) || fail "$n siw_cqe RECEIVE SUCCESS on the server, expected >= $c"
! grep -qE 'siw_(term_send|term_recv|rx_error):' "$t" || fail "error events in a clean transfer: $(grep -E 'siw_(term|rx_error)' "$t" | head -n 3)"
info "rping: CEP, MPA, QP state and per-WR events as expected (QPs $q1, $q2)"

# ---- an error: RDMA Write to an STag the target does not have ---------
srv_cli 200 err 18650 "$BIN/siw_datacheck -s -b $H2_IP -p 18650 -t $(scale 15 60)" \
	"$BIN/siw_datacheck -c $H2_IP -p 18650 --error=bad-rkey -t $(scale 15 60)"
((CLI_RC == 0 && SRV_RC == 0)) || fail "siw_datacheck --error=bad-rkey: client rc $CLI_RC, server rc $SRV_RC"
sleep 1
cp "$inst/trace" "$TMPD/err.trace"
t=$TMPD/err.trace
info "error case, the events that say why:"
grep -E 'siw_(rx_error|term_send|term_recv|qp_state|mpa)|_ERR' "$t" | head -n 30 | sed 's/^ *//'
q1=$(grep -m1 -oE 'siw_mpa: siw1 qpn [0-9]+' "$t" | awk '{print $4}')
q2=$(grep -m1 -oE 'siw_mpa: siw2 qpn [0-9]+' "$t" | awk '{print $4}')
[[ -n $q1 && -n $q2 ]] || fail "no MPA outcome for the error connection"
# the target refuses the tagged Write: DDP tagged buffer error, invalid STag
must_see "$t" "siw_rx_error: siw2 qpn $q2 op Write: [a-z].* \(layer DDP etype 1 ecode 0x00\)" \
	"receive error (invalid STag) on the target QP $q2"
must_see "$t" "siw_qp_state: siw2 qpn $q2 RTS -> TERMINATE by " "target QP RTS -> TERMINATE"
must_see "$t" "siw_term_send: siw2 qpn $q2 layer DDP etype 1 ecode 0x00" "Terminate sent by the target"
must_see "$t" "siw_term_recv: siw1 qpn $q1 layer DDP etype 1 ecode 0x00" "Terminate received by the initiator"
must_see "$t" "siw_qp_state: siw1 qpn $q1 RTS -> ERROR by [a-z_]+" "initiator QP -> ERROR with its cause"
must_see "$t" "siw_qp_state: siw2 qpn $q2 TERMINATE -> ERROR by [a-z_]+" "target QP -> ERROR"
# the faulty Write itself may complete successfully (it left; see
# siw_datacheck.c); what the initiator posts after it is flushed
must_see "$t" "siw_cqe: siw1 cq [0-9]+ qpn $q1 wr_id 0x[0-9a-f]+ READ len 0 WR_FLUSH_ERR" \
	"flushed completion of the initiator's probe Read"
info "bad-rkey: rx_error, Terminate both ways, QPs to ERROR, flushed completions"
dmesg_problems_since "$m"
echo "tracepoints passed"
