#!/usr/bin/env bash
# Interop with the kernel's own siw (reference peer, build/ref/$KVER/siw.ko
# from scripts/build-ref.sh): reference on role a = client (MPA initiator),
# ours on role b = SERVER. Same steps as 10-ours-client (interop.bash).
# timeout: 1200
# timeout-debug: 2400
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/interop.bash"
interop_main b
