/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What the KUnit suites of siw_kunit.ko share. */
#ifndef SIW_KUNIT_H
#define SIW_KUNIT_H

#include <kunit/test.h>
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

static inline void siw_kunit_free_stats(void *stats)
{
	free_percpu((struct siw_stats __percpu __force *)stats);
}

/*
 * A device in test-managed memory with an empty QP table (ids from 1) and
 * its per-CPU counters; a test action frees those after the suite's own
 * exit action (registered later, it runs first).
 */
static inline struct siw_device *siw_kunit_sdev(struct kunit *test)
{
	struct siw_device *sdev = kunit_kzalloc(test, sizeof(*sdev), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, sdev);
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC1);
	sdev->stats = alloc_percpu(struct siw_stats);
	KUNIT_ASSERT_TRUE(test, !!sdev->stats);
	KUNIT_ASSERT_EQ(test,
			kunit_add_action_or_reset(test, siw_kunit_free_stats,
						  (void __force *)sdev->stats),
			0);
	return sdev;
}

/* A CQ of @cqes entries in test-managed memory, as a kernel consumer's. */
static inline struct siw_cq *siw_kunit_cq(struct kunit *test, u32 cqes)
{
	struct siw_cq *cq = kunit_kzalloc(test, sizeof(*cq), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, cq);
	spin_lock_init(&cq->lock);
	cq->num_cqe = cqes;
	cq->queue = kunit_kcalloc(test, cqes, sizeof(*cq->queue), GFP_KERNEL);
	cq->ctrl = kunit_kzalloc(test, sizeof(*cq->ctrl), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cq->queue);
	KUNIT_ASSERT_NOT_NULL(test, cq->ctrl);
	return cq;
}

/* A test QP's TX work: only the reference taken for it is dropped. */
static inline void siw_kunit_tx_work(struct work_struct *w)
{
	siw_qp_put(container_of(w, struct siw_qp, tx_work));
}

/*
 * A kernel QP in test-managed memory in @sdev's QP table (siw_qp_init),
 * on @pd with @cq for both queues, in RTS; the caller sizes its queues.
 * The suite's exit action flushes its TX work and erases it from the
 * table.
 */
static inline struct siw_qp *siw_kunit_qp(struct kunit *test,
					  struct siw_device *sdev,
					  struct ib_pd *pd, struct siw_cq *cq)
{
	struct siw_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, qp);
	KUNIT_ASSERT_EQ(test, siw_qp_init(qp, sdev), 0);
	qp->pd = pd;
	qp->scq = cq;
	qp->rcq = cq;
	INIT_WORK(&qp->tx_work, siw_kunit_tx_work);
	/* siw_qp_to_rts() transmits inline (nothing, with no socket) */
	mutex_init(&qp->tx_mutex);
	qp->attrs.state = SIW_QP_RTS;
	return qp;
}

#endif
