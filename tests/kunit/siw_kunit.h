/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What the KUnit suites of siw_kunit.ko share. */
#ifndef SIW_KUNIT_H
#define SIW_KUNIT_H

#include <linux/percpu.h>

#include "siw.h"

/* A device counter summed over the CPUs. */
static inline u64 siw_kunit_stat(struct siw_device *sdev, enum siw_stat s)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(sdev->stats, cpu)->v[s];
	return sum;
}

#endif
