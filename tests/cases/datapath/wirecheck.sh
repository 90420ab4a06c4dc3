#!/usr/bin/env bash
# Wire check: capture on veth2 (netns h2) during rping and ib_write_bw, then
# let tshark's iWARP dissectors (iwarp_mpa: heuristic on the TCP stream, so
# the capture starts before the connection; iwarp_ddp_rdmap) decode it.
# Fail on: no MPA request/reply or no DDP/RDMAP frames seen, any malformed
# frame, any expert error/warning raised by the iWARP dissectors, MPA
# reserved/revision/length complaints, and (when CRC was negotiated) a CRC
# mismatch.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib.sh"
source "$SIW_TOP/tests/tools/caselib.sh"
need_cmd tcpdump tshark rping ib_write_bw rdma ss
[[ $RDEV_LTYPE == siw ]] || skip "wire check needs iWARP (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
m=$(dmesg_mark)
rdev_netns
# ask for MPA CRC on our connections, so the CRC32c values are checked too
echo Y >/sys/module/siw/parameters/mpa_crc_required
on_exit "echo N >/sys/module/siw/parameters/mpa_crc_required"
cap=$TMPD/cap.pcap
ip netns exec h2 tcpdump -i veth2 -U -s 0 -w "$cap" 'tcp' >"$TMPD/tcpdump.log" 2>&1 &
tpid=$!
on_exit "kill $tpid"
wait_for 10 grep -q 'listening on' "$TMPD/tcpdump.log" || fail "tcpdump did not start: $(cat "$TMPD/tcpdump.log")"
srv_cli 200 rping 7200 "rping -s -a $H2_IP -p 7200 -V -C $(scale 50 10) -S 2048" "rping -c -a $H2_IP -p 7200 -V -C $(scale 50 10) -S 2048"
((CLI_RC == 0 && SRV_RC == 0)) || fail "rping failed (client $CLI_RC, server $SRV_RC)"
srv_cli 300 wbw 7201 "ib_write_bw -d $RDEV2 -R -p 7201 -F -s 65536 -n $(scale 50 10)" \
	"ib_write_bw -d $RDEV1 -R -p 7201 -F -s 65536 -n $(scale 50 10) $H2_IP"
((CLI_RC == 0 && SRV_RC == 0)) || fail "ib_write_bw failed (client $CLI_RC, server $SRV_RC)"
sleep 1
kill -INT "$tpid"
wait_pid "$tpid" 20 || true
cat "$TMPD/tcpdump.log"
[[ -s $cap ]] || fail "empty capture"
# The SMB-Direct / RPC-over-RDMA heuristics on iWARP Send payloads are not
# wire checks (they raised exceptions on perftest's small Sends): off.
tsh() {
	tshark -n --disable-heuristic smb_direct_iwarp --disable-heuristic rpcrdma_iwarp \
		-r "$cap" "$@" 2>>"$TMPD/tshark.err"
}
cnt() { tsh -Y "$1" -T fields -e frame.number | wc -l; }
nreq=$(cnt iwarp_mpa.req)
nrep=$(cnt iwarp_mpa.rep)
nfpdu=$(cnt iwarp_mpa.fpdu)
nddp=$(cnt iwarp_ddp)
nrdma=$(cnt iwarp_rdma)
info "frames: $(tsh | wc -l) total, MPA req $nreq rep $nrep, FPDU $nfpdu, DDP $nddp, RDMAP $nrdma"
((nreq >= 2 && nrep >= 2)) || fail "expected MPA request+reply for each connection (req $nreq, rep $nrep)"
((nfpdu > 0 && nddp > 0 && nrdma > 0)) || fail "no iWARP FPDU/DDP/RDMAP frames decoded"
info "RDMAP opcodes seen (count opcode):"
tsh -Y iwarp_rdma -T fields -e iwarp_rdma.opcode | tr ',' '\n' | sort | uniq -c
# MPA negotiation details
tsh -Y 'iwarp_mpa.req || iwarp_mpa.rep' -T fields -e frame.number -e iwarp_mpa.rev \
	-e iwarp_mpa.marker_flag -e iwarp_mpa.crc_flag -e iwarp_mpa.rej_flag -e iwarp_mpa.pdlength | sed 's/^/# mpa: /'
bad=$(tsh -Y '_ws.malformed' -T fields -e frame.number | head -n 5)
if [[ -n $bad ]]; then
	f=$(head -n 1 <<<"$bad")
	info "first malformed frame $f, decoded:"
	tsh -Y "frame.number == $f" -V | sed -n '/Transmission Control Protocol/,$p' | tail -n 60
	fail "malformed frames: $(echo $bad)"
fi
bad=$(tsh -Y 'iwarp_mpa.bad_length || iwarp_mpa.res.not_set0 || iwarp_mpa.rev.not_set1 || iwarp_mpa.rej_flag == 1' -T fields -e frame.number | head -n 5)
[[ -z $bad ]] || fail "MPA complaints (bad length / reserved / revision / reject) in frames: $bad"
# expert infos of warning or error severity raised inside iWARP frames
# (TCP-level notes such as window updates are not iWARP faults)
bad=$(tsh -Y '(iwarp_mpa || iwarp_ddp || iwarp_rdma) && _ws.expert.severity >= 6291456' \
	-T fields -e frame.number -e _ws.expert.message | grep -viE 'tcp|window|retransmission|dup ack|keep-alive' | head -n 5 || true)
[[ -z $bad ]] || fail "expert warnings/errors in iWARP frames: $bad"
# Terminate messages must not appear in a clean run
bad=$(tsh -Y 'iwarp_rdma.opcode == 7' -T fields -e frame.number | head -n 3)
[[ -z $bad ]] || fail "RDMAP Terminate seen in frames: $bad"
# CRC: negotiated (we asked for it); tshark verifies every FPDU's CRC32c
# and says so only in its verbose text ("Good CRC32" / "Bad CRC32")
[[ -n $(tsh -Y 'iwarp_mpa.rep && iwarp_mpa.crc_flag == 1' -T fields -e frame.number) ]] ||
	fail "MPA CRC was not negotiated although mpa_crc_required=Y"
tsh -V -Y iwarp_mpa.fpdu >"$TMPD/fpdu.txt"
good=$(grep -c 'Good CRC32' "$TMPD/fpdu.txt" || true)
badn=$(grep -c 'Bad CRC32' "$TMPD/fpdu.txt" || true)
info "CRC32c: $good good, $badn bad"
((badn == 0)) || fail "$badn FPDUs with a bad MPA CRC: $(grep -m3 'Bad CRC32' "$TMPD/fpdu.txt")"
((good > 0)) || fail "no FPDU CRC was verified by tshark"
[[ ! -s $TMPD/tshark.err ]] || { info "tshark stderr:"; head -n 10 "$TMPD/tshark.err"; }
dmesg_problems_since "$m"
echo "wirecheck passed"
