#!/usr/bin/env bash
# blktests' srp group over siw, short form for the default tier (issue
# 22): srp/001 (the SRP initiator logs in to LIO's SRP target over siw,
# LUNs created and removed under dm-multipath), run by ulp/50-blktests
# (see there) with BT_GROUP=srp and the same checks. The whole group:
# ulp/51-blktests-srp (--full).
# timeout: 900
# timeout-debug: 2400
BT_GROUP=srp
BT_SEL="srp/001"
# shellcheck source=tests/cases/ulp/50-blktests.sh
source "$(dirname "$0")/50-blktests.sh"
