#!/usr/bin/env bash
# Interop with the kernel's own siw (reference peer, build/ref/$KVER/siw.ko
# from scripts/build-ref.sh): ours on role a = CLIENT (MPA initiator),
# reference on role b = server. rping, siw_datacheck with CRC off and on,
# perftest, and a tshark wire check of captured connections; see
# interop.bash.
# timeout: 1200
# timeout-debug: 2400
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/interop.bash"
interop_main a
