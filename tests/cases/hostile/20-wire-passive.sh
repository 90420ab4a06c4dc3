#!/usr/bin/env bash
# Hostile wire peer, siw as MPA initiator: siw_victim connects to a
# plain-TCP listener that answers with malformed MPA replies, FPDUs glued
# to the reply, and wrong Read Responses to the victim's RDMA Read (sink at
# the MR's last bytes, guard bytes behind it).
# timeout: 400
# timeout-debug: 1500
source "$(dirname "$0")/wire.bash"
wire_run passive 19200
