#!/usr/bin/env bash
# Across architectures: role a is a guest of another architecture (s390x,
# big-endian; arm64; ppc64el, 64 KiB pages: tests/run --kernel ARCH boots
# it) running ours, role b an amd64 guest on the stock kernel. Role b runs the kernel's
# siw (build/ref), as the client: a is the server.
# Same steps as pair-interop (tests/lib/interop.bash): rping, the
# data-check with CRC off and on and with FPDUs above the MSS, perftest,
# the wire check of role b's captures (tshark: every MPA CRC of either
# side's frames good).
# timeout: 1200
# timeout-debug: 2400
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/interop.bash"
arch_pair_guard
interop_main a ref a
