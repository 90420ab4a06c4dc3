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
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
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
srv_cli_pt 300 wbw 7201 "ib_write_bw -d $RDEV2 -R -p 7201 -F -s 65536 -n $(scale 50 10)" \
	"ib_write_bw -d $RDEV1 -R -p 7201 -F -s 65536 -n $(scale 50 10) $H2_IP"
((CLI_RC == 0 && SRV_RC == 0)) || fail "ib_write_bw failed (client $CLI_RC, server $SRV_RC)"
sleep 1
kill -INT "$tpid"
wait_pid "$tpid" 20 || true
cat "$TMPD/tcpdump.log"
[[ -s $cap ]] || fail "empty capture"
wire_scan "$cap"
info "frames: ${WIRE[all]} total, MPA req ${WIRE[req]} rep ${WIRE[rep]}, FPDU ${WIRE[fpdu]}, DDP ${WIRE[ddp]}, RDMAP ${WIRE[rdma]}"
((WIRE[req] >= 2 && WIRE[rep] >= 2)) || fail "expected MPA request+reply for each connection (req ${WIRE[req]}, rep ${WIRE[rep]})"
((WIRE[fpdu] > 0 && WIRE[ddp] > 0 && WIRE[rdma] > 0)) || fail "no iWARP FPDU/DDP/RDMAP frames decoded"
info "RDMAP opcodes seen (count opcode):"
cat "$TMPD/wire.ops"
# MPA negotiation details
sed 's/^/# mpa (frame req rep rev marker crc rej pdlen): /' "$TMPD/wire.mpa"
bad=$(wire_faults "$cap")
[[ -z $bad ]] || fail "$bad"
# CRC: negotiated (we asked for it); tshark verifies every FPDU's CRC32c
((WIRE[rep_crc] == WIRE[rep])) || fail "MPA CRC was not negotiated in every reply although mpa_crc_required=Y (${WIRE[rep_crc]} of ${WIRE[rep]})"
wire_crc "$cap"
info "CRC32c: ${WIRE[crc_good]} good, ${WIRE[crc_bad]} bad, ${WIRE[crc_check]} frames with FPDUs checked"
((WIRE[crc_bad] == 0)) || fail "${WIRE[crc_bad]} FPDUs with a bad MPA CRC: $(head -n 3 "$TMPD/wire.crc")"
((WIRE[crc_good] > 0)) || fail "no FPDU CRC was verified by tshark"
# a frame may carry several FPDUs: at least one verdict per checked frame
((WIRE[crc_good] >= WIRE[crc_check])) || fail "only ${WIRE[crc_good]} Good CRC32 for ${WIRE[crc_check]} frames with FPDUs"
err=$(grep -v 'Running as user' "$TMPD/tshark.err" | head -n 10 || true)
[[ -z $err ]] || { info "tshark stderr:"; printf '%s\n' "$err"; }
dmesg_problems_since "$m"
echo "wirecheck passed"
