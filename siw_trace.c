// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: what the module tells: the tracepoints of include/siw_trace.h,
 * instantiated once, and the rate limit of its warnings.
 */
#include <kunit/visibility.h>

#include "siw.h"

#define CREATE_TRACE_POINTS
#include "siw_trace.h"

/**
 * siw_log_ratelimit - may a call site's warning print now?
 * @rl: the call site's state
 * @ibdev: the device the line names, also for the count of those suppressed
 *
 * Lock-free, so callers on other CPUs never drop a line uncounted: the
 * first call after the window ends opens the next one and reports how
 * many lines the last one suppressed.
 *
 * Return: true if the line is to be printed.
 */
bool siw_log_ratelimit(struct siw_ratelimit *rl, struct ib_device *ibdev)
{
	unsigned long now = jiffies | 1;
	unsigned long begin = READ_ONCE(rl->begin);

	if ((!begin || time_after(now, begin + SIW_LOG_INTERVAL)) &&
	    cmpxchg(&rl->begin, begin, now) == begin) {
		int missed = atomic_xchg(&rl->missed, 0);

		atomic_set(&rl->printed, 0);
		if (missed)
			ibdev_warn(ibdev, "%d similar warnings suppressed\n",
				   missed);
	}
	if (atomic_inc_return(&rl->printed) <= SIW_LOG_BURST)
		return true;
	atomic_inc(&rl->missed);
	return false;
}
EXPORT_SYMBOL_IF_KUNIT(siw_log_ratelimit);
