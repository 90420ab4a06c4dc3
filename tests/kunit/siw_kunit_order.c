// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KUnit suite "siw_order": what a long-running consumer relies on.
 * Ring indexes that wrap at 2^32 with depths that are not powers of two
 * (CQ, ORQ, IRQ), and completions in posting order while the receive
 * side ends Reads, the transmitter completes Sends and flushers run at
 * once. Load siw.ko first, then this module; results in debugfs/kunit.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/kthread.h>
#include <linux/completion.h>
#include <linux/log2.h>

#include "siw_kunit.h"

struct ordt {
	struct siw_device *sdev;
	struct siw_qp *qp;
	struct siw_cq *cq;
	struct ib_pd *pd;
};

static void ordt_exit(void *data)
{
	struct ordt *t = data;

	flush_work(&t->qp->flush_work);
	flush_work(&t->qp->tx_work);
	siw_qp_free(t->qp);
	xa_erase(&t->sdev->qp_xa, t->qp->id);
}

/*
 * A kernel QP in RTS with an SQ and RQ of @slots, IRD and ORD as given
 * (siw_qp_to_rts() sizes the read queues), one CQ of @cqes for both.
 */
static struct ordt *ordt_new(struct kunit *test, u32 cqes, u32 slots,
			     u32 ird, u32 ord)
{
	struct ordt *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	struct siw_llp_params p = { .ird = ird, .ord = ord };
	struct siw_qp *qp;

	KUNIT_ASSERT_NOT_NULL(test, t);
	t->sdev = siw_kunit_sdev(test);
	t->pd = kunit_kzalloc(test, sizeof(*t->pd), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->pd);
	t->pd->device = &t->sdev->base;
	t->cq = siw_kunit_cq(test, cqes);
	t->qp = siw_kunit_qp(test, t->sdev, t->pd, t->cq);
	qp = t->qp;
	qp->attrs.sq_size = slots;
	qp->attrs.rq_size = slots;
	qp->attrs.sq_max_sges = 1;
	qp->attrs.rq_max_sges = 1;
	qp->sendq = kunit_kcalloc(test, slots, sizeof(*qp->sendq), GFP_KERNEL);
	qp->recvq = kunit_kcalloc(test, slots, sizeof(*qp->recvq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->sendq);
	KUNIT_ASSERT_NOT_NULL(test, qp->recvq);
	qp->attrs.state = SIW_QP_IDLE;
	KUNIT_ASSERT_EQ(test, siw_qp_to_rts(qp, &p), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, ordt_exit, t),
			0);
	return t;
}

/* ------------------------------------------------------ index wrap */

static const u32 ord_depths[] = { 1000, 65, 3 };

/*
 * A CQ asked for @req entries, its put and get just below 2^32, and a
 * consumer that lags by all but one entry: through the wrap no write
 * finds its slot still owned (a false overflow), and every entry is
 * read back in order.
 */
static void ord_cq_wrap(struct kunit *test, u32 req)
{
	u32 depth = siw_cq_depth(req);
	struct ordt *t = ordt_new(test, depth, 4, 1, 1);
	struct siw_cq *cq = t->cq;
	u32 lag = depth - 1, start = 0U - depth - depth / 2, i;
	u64 id = 0, want = 0;
	struct ib_wc wc;
	int bad = 0;

	/* the depth the CQ has is the one reported (ibcq->cqe, libsiw) */
	KUNIT_EXPECT_GE(test, depth, req);
	KUNIT_EXPECT_TRUE(test, is_power_of_2(depth));
	cq->put = start;
	cq->get = start;
	for (i = 0; i < lag; i++)
		bad += siw_cqe_put(cq, id++, SIW_OP_SEND, 0, IB_WC_SUCCESS,
				   false, 0, t->qp) < 0;
	for (i = 0; i < 3 * depth; i++) {
		bad += siw_cqe_put(cq, id++, SIW_OP_SEND, 0, IB_WC_SUCCESS,
				   false, 0, t->qp) < 0;
		if (siw_poll_cq(&cq->base, 1, &wc) != 1 || wc.wr_id != want)
			bad++;
		want++;
	}
	KUNIT_EXPECT_EQ_MSG(test, bad, 0, "depth %u (asked %u)", depth, req);
	/* it did wrap */
	KUNIT_EXPECT_LT(test, cq->put, start);
	KUNIT_EXPECT_EQ(test, t->qp->attrs.state, SIW_QP_RTS);
}

static void siw_test_cq_wrap(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ord_depths); i++)
		ord_cq_wrap(test, ord_depths[i]);
}

/*
 * Our Reads through the ORQ with ORD @ord (65 and 3), its indexes just
 * below 2^32, ORD Reads in flight at all times: each response finds its
 * own Read, none overwritten by a later one.
 */
static void ord_orq_wrap(struct kunit *test, u32 ord)
{
	struct ordt *t = ordt_new(test, 8, 4, 1, ord);
	struct siw_qp *qp = t->qp;
	struct siw_wqe *w = &qp->tx.sq_wqe, got;
	u32 start = 0U - ord - 7, i;
	u64 id = 1, want = 1;
	int bad = 0;

	KUNIT_ASSERT_EQ(test, qp->attrs.ord, ord);
	qp->orq_put = start;
	qp->orq_get = start;
	qp->reads_done = start;
	for (i = 0; i < ord + 3 * ord + 16; i++) {
		if (qp->orq_put - qp->orq_get == ord) {
			if (!siw_orq_pop(qp, &got) || got.sqe.id != want)
				bad++;
			want++;
			/* unsignalled: no CQE, only the count */
			siw_sq_read_done(qp, &got, IB_WC_SUCCESS, 0);
		}
		memset(w, 0, sizeof(*w));
		w->sqe.id = id++;
		w->sqe.opcode = SIW_OP_READ;
		w->active = true;
		KUNIT_ASSERT_EQ(test, siw_rdmap_tx_start(qp, w), 0);
	}
	KUNIT_EXPECT_EQ_MSG(test, bad, 0, "ORD %u", ord);
	KUNIT_EXPECT_LT(test, qp->orq_put, start);
	KUNIT_EXPECT_EQ(test, t->cq->put, 0U);
}

static void siw_test_orq_wrap(struct kunit *test)
{
	ord_orq_wrap(test, 65);
	ord_orq_wrap(test, 3);
}

/*
 * A peer's Reads through the IRQ with IRD @ird, the same way: each Read
 * Response answers its own request (zero-length Reads, which need no
 * memory, told apart by their sink offset).
 */
static void ord_irq_wrap(struct kunit *test, u32 ird)
{
	struct ordt *t = ordt_new(test, 8, 4, ird, 1);
	struct siw_qp *qp = t->qp;
	struct siw_irq_entry e = { .sink_stag = 0x100 };
	u32 start = 0U - ird - 5, i;
	u64 to = 1, want = 1;
	int bad = 0;

	KUNIT_ASSERT_EQ(test, qp->attrs.ird, ird);
	qp->irq_put = start;
	qp->irq_get = start;
	for (i = 0; i < 4 * ird + 16; i++) {
		if (qp->irq_put - qp->irq_get == ird) {
			if (siw_rdmap_tx_rresp(qp) || qp->tx.rdmap.to != want)
				bad++;
			want++;
		}
		e.sink_to = to++;
		siw_irq_push(qp, &e);
	}
	KUNIT_EXPECT_EQ_MSG(test, bad, 0, "IRD %u", ird);
	KUNIT_EXPECT_LT(test, qp->irq_put, start);
}

static void siw_test_irq_wrap(struct kunit *test)
{
	ord_irq_wrap(test, 65);
	ord_irq_wrap(test, 3);
}

/* ------------------------------------- completion order, concurrent */

#define ORD_WC		16	/* polled at once */
#define ORD_RACE_N	BIT(20)	/* work requests */
#define ORD_RACE_ORD	32
#define ORD_RACE_CQ	1024

struct ord_race {
	struct ordt *t;
	struct completion tx_done, rx_done;
	bool stop;		/* the receiver's */
	u32 reads;		/* Reads the receiver ended */
	u32 bad;		/* CQEs out of order */
	u64 got;		/* CQEs polled */
	struct ib_wc wc[ORD_WC];
};

/* The receive side: each Read's response arrives, oldest first. */
static int ord_race_rx(void *data)
{
	struct ord_race *r = data;
	struct siw_qp *qp = r->t->qp;
	struct siw_wqe w;

	while (!READ_ONCE(r->stop)) {
		if (!siw_orq_pop(qp, &w)) {
			cpu_relax();
			continue;
		}
		siw_sq_read_done(qp, &w, IB_WC_SUCCESS, 0);
		r->reads++;
	}
	complete(&r->rx_done);
	return 0;
}

/*
 * The transmitter, which is also the consumer: posts the work requests,
 * every third a Read, all signalled, waiting before each as
 * siw_sqe_take() makes it (an ORD slot, room to queue its completion)
 * and for CQ room, and checks every CQE it polls.
 */
static int ord_race_tx(void *data)
{
	struct ord_race *r = data;
	struct siw_qp *qp = r->t->qp;
	struct siw_wqe *w = &qp->tx.sq_wqe;
	u64 id = 0;
	int n, k;

	while (r->got < ORD_RACE_N) {
		bool room = id < ORD_RACE_N && id - r->got < ORD_RACE_CQ / 2 &&
			    qp->sq_done_put - qp->sq_done_get <
			    qp->sq_done_size - 1;

		if (room && id % 3 == 0 &&
		    qp->orq_put - qp->orq_get >= ORD_RACE_ORD)
			room = false;
		if (room) {
			memset(w, 0, sizeof(*w));
			w->sqe.id = id;
			w->sqe.flags = SIW_WQE_SIGNALLED;
			w->active = true;
			if (id % 3 == 0) {
				w->sqe.opcode = SIW_OP_READ;
				siw_rdmap_tx_start(qp, w);
			} else {
				w->sqe.opcode = id % 3 == 1 ? SIW_OP_SEND :
							      SIW_OP_WRITE;
				siw_sq_complete(qp, w, IB_WC_SUCCESS, 0);
			}
			id++;
		}
		n = siw_poll_cq(&r->t->cq->base, ORD_WC, r->wc);
		for (k = 0; k < n; k++, r->got++) {
			if (r->wc[k].wr_id == r->got &&
			    r->wc[k].status == IB_WC_SUCCESS)
				continue;
			if (!r->bad)
				pr_err("siw_order: CQE %llu: id %llu status %d\n",
				       r->got, r->wc[k].wr_id, r->wc[k].status);
			r->bad++;
			r->got = r->wc[k].wr_id;
		}
		if (!room && !n)
			cpu_relax();
		if (!(id & 1023))
			cond_resched();
	}
	complete(&r->tx_done);
	return 0;
}

/*
 * A million send queue work requests, a third of them Reads whose
 * responses another CPU ends as the receiver would, while the
 * transmitter completes the Sends and Writes: the CQ must give every id
 * in posting order.
 */
static void siw_test_sq_order_race(struct kunit *test)
{
	struct ordt *t = ordt_new(test, ORD_RACE_CQ, 64, 1, ORD_RACE_ORD);
	struct ord_race *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct task_struct *tx, *rx;
	struct ib_wc wc;

	KUNIT_ASSERT_NOT_NULL(test, r);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs, has %u", num_online_cpus());
	r->t = t;
	init_completion(&r->tx_done);
	init_completion(&r->rx_done);
	rx = kthread_create(ord_race_rx, r, "siw_kunit_rx");
	KUNIT_ASSERT_FALSE(test, IS_ERR(rx));
	kthread_bind(rx, cpumask_last(cpu_online_mask));
	tx = kthread_create(ord_race_tx, r, "siw_kunit_tx");
	if (IS_ERR(tx)) {
		WRITE_ONCE(r->stop, true);
		wake_up_process(rx);
		wait_for_completion(&r->rx_done);
		KUNIT_FAIL(test, "no transmitter thread: %ld", PTR_ERR(tx));
		return;
	}
	kthread_bind(tx, cpumask_first(cpu_online_mask));
	wake_up_process(rx);
	wake_up_process(tx);
	wait_for_completion(&r->tx_done);
	WRITE_ONCE(r->stop, true);
	wait_for_completion(&r->rx_done);
	KUNIT_EXPECT_EQ(test, r->bad, 0U);
	KUNIT_EXPECT_EQ(test, r->got, (u64)ORD_RACE_N);
	KUNIT_EXPECT_EQ(test, r->reads, DIV_ROUND_UP(ORD_RACE_N, 3));
	KUNIT_EXPECT_EQ(test, t->qp->attrs.state, SIW_QP_RTS);
	KUNIT_EXPECT_EQ(test, siw_poll_cq(&t->cq->base, 1, &wc), 0);
}

#define ORD_RQ_SLOTS	256
#define ORD_RQ_ROUNDS	256

struct ord_flusher {
	struct siw_qp *qp;
	struct completion done;
	bool stop;
};

static int ord_flush_thread(void *data)
{
	struct ord_flusher *f = data;

	while (!READ_ONCE(f->stop)) {
		siw_qp_flush_rq(f->qp);
		cond_resched();
	}
	complete(&f->done);
	return 0;
}

/*
 * Receives flushed from two CPUs at once, as modify, the CM and the
 * flush work may: the flush completions must come in the order the
 * receives were posted. Each round fills the ring, both flush, and this
 * thread polls all of them.
 */
static void siw_test_rq_flush_order(struct kunit *test)
{
	struct ordt *t = ordt_new(test, 2 * ORD_RQ_SLOTS, ORD_RQ_SLOTS, 1, 1);
	struct ord_flusher *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct ib_wc *wc = kunit_kcalloc(test, ORD_WC, sizeof(*wc),
					 GFP_KERNEL);
	struct siw_qp *qp = t->qp;
	struct task_struct *k;
	u64 id = 0, want = 0, got = 0;
	u32 bad = 0, round, i;
	int n, j;

	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_ASSERT_NOT_NULL(test, wc);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs, has %u", num_online_cpus());
	qp->attrs.state = SIW_QP_ERROR;
	f->qp = qp;
	init_completion(&f->done);
	k = kthread_create(ord_flush_thread, f, "siw_kunit_flush");
	KUNIT_ASSERT_FALSE(test, IS_ERR(k));
	kthread_bind(k, cpumask_last(cpu_online_mask));
	wake_up_process(k);
	for (round = 0; round < ORD_RQ_ROUNDS; round++) {
		for (i = 0; i < ORD_RQ_SLOTS; i++) {
			struct siw_rqe *rqe =
				&qp->recvq[qp->rq_put++ % ORD_RQ_SLOTS];

			while (READ_ONCE(rqe->flags) & SIW_WQE_VALID)
				cpu_relax();
			rqe->id = id++;
			/* the id before VALID, as a poster's */
			smp_store_release(&rqe->flags, SIW_WQE_VALID);
		}
		siw_qp_flush_rq(qp);
		/* every receive of the round, counted, so a reorder ends too */
		while (got < id) {
			n = siw_poll_cq(&t->cq->base, ORD_WC, wc);
			for (j = 0; j < n; j++, got++) {
				if (wc[j].wr_id != want)
					bad++;
				want = wc[j].wr_id + 1;
			}
			if (!n)
				siw_qp_flush_rq(qp);
		}
		cond_resched();
	}
	WRITE_ONCE(f->stop, true);
	wait_for_completion(&f->done);
	KUNIT_EXPECT_EQ(test, bad, 0U);
	KUNIT_EXPECT_EQ(test, got, id);
}

static struct kunit_case siw_order_cases[] = {
	KUNIT_CASE(siw_test_cq_wrap),
	KUNIT_CASE(siw_test_orq_wrap),
	KUNIT_CASE(siw_test_irq_wrap),
	KUNIT_CASE_SLOW(siw_test_sq_order_race),
	KUNIT_CASE_SLOW(siw_test_rq_flush_order),
	{}
};

static struct kunit_suite siw_order_suite = {
	.name = "siw_order",
	.test_cases = siw_order_cases,
};

kunit_test_suites(&siw_order_suite);
