#!/usr/bin/env bash
# Byte-exact data integrity with MPA CRC, at three FPDU sizes: MSS-sized
# (the default), 16000-byte and 65000-byte FPDUs (fpdu_max). An FPDU of
# up to 16 KiB is CRC-checked whole in the TCP receive queue before it is
# placed (the parser waits for all of it, across many skbs for 16000
# bytes); a larger one is placed as it arrives and checked at its end
# (rx_crc_late counts those). Each size: the transfer is intact, every
# FPDU passed its CRC, and rx_crc_late moved only for 65000.
# timeout: 500
# timeout-debug: 1500
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
[[ $SIW_DEV_TYPE == siw ]] || skip "sets this project's module parameters"
faults_begin
crc_param Y
fmax=/sys/module/siw/parameters/fpdu_max
[[ -w $fmax ]] || fail "no $fmax"
on_exit "echo 0 >$fmax"
seed=${SIW_DATACHECK_SEED:-$((RANDOM * 32768 + RANDOM))}
port=18640
for size in 0 16000 65000; do
	echo "$size" >"$fmax"
	late0=$(rdma_stat "$RDEV2" rx_crc_late) crc0=$(rdma_stat "$RDEV2" rx_crc_err)
	fpdu0=$(rdma_stat "$RDEV2" rx_fpdu)
	srv_cli 600 "dc$size" "$port" \
		"$BIN/siw_datacheck -s -b $H2_IP -p $port -t 60" \
		"$BIN/siw_datacheck -c $H2_IP -p $port -n $(scale 120 30) -S $seed -m $(scale 1048576 262144) -t 60"
	((CLI_RC == 0 && SRV_RC == 0)) || fail "fpdu_max $size: datacheck failed (seed $seed)"
	grep -q '^ok - client' "$TMPD/dc$size.cli" || fail "fpdu_max $size: client printed no summary"
	late=$(($(rdma_stat "$RDEV2" rx_crc_late) - late0))
	fpdus=$(($(rdma_stat "$RDEV2" rx_fpdu) - fpdu0))
	info "fpdu_max $size: $RDEV2 received $fpdus FPDUs, $late checked after placement"
	(($(rdma_stat "$RDEV2" rx_crc_err) == crc0)) || fail "fpdu_max $size: CRC errors on a clean link"
	((fpdus > 0)) || fail "fpdu_max $size: rx_fpdu did not move"
	if ((size > 16384)); then
		((late > 0)) || fail "fpdu_max $size: no FPDU over 16 KiB arrived (rx_crc_late did not move)"
	else
		((late == 0)) || fail "fpdu_max $size: $late FPDUs were placed before their CRC check"
	fi
	port=$((port + 1))
done
dmesg_problems_since "$FAULT_MARK"
echo "datacheck with CRC passed at FPDU sizes MSS, 16000, 65000 (seed $seed)"
