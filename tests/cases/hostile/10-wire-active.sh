#!/usr/bin/env bash
# Hostile wire peer, siw as MPA responder: a plain-TCP peer connects to a
# listening siw QP (tests/bin/siw_victim) and sends malformed MPA requests,
# FPDUs, DDP and RDMAP headers, mutated frames, a slow byte stream and a
# connection flood (tests/tools/siw_wirepeer.py active --list names them).
# Default: the CI selection; SIW_TEST_FULL=1 (tests/run --full) the matrix.
# timeout: 600
# timeout-debug: 2400
source "$(dirname "$0")/wire.bash"
wire_run active 19100
