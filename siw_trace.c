// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: the tracepoints of include/siw_trace.h, instantiated once.
 */
#define CREATE_TRACE_POINTS
#include "siw_trace.h"
