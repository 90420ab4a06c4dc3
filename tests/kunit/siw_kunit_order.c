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
#define ORD_RACE_ORD	4
#define ORD_RACE_CQ	256

struct ord_race {
	struct ordt *t;
	struct completion rx_done;
	bool stop;
	u32 reads;		/* Reads the receiver ended */
};

/* The receive side: each Read's response arrives, oldest first. */
static int ord_race_rx(void *data)
{
	struct ord_race *r = data;
	struct siw_qp *qp = r->t->qp;
	struct siw_wqe w;

	while (!READ_ONCE(r->stop)) {
		if (!siw_orq_pop(qp, &w)) {
			cond_resched();
			continue;
		}
		siw_sq_read_done(qp, &w, IB_WC_SUCCESS, 0);
		r->reads++;
	}
	complete(&r->rx_done);
	return 0;
}

/*
 * The transmitter posts a million work requests, every third a Read,
 * all signalled, while another thread ends the Reads as their responses
 * would: the CQ, polled here as the consumer, must give every id in
 * posting order. Before each post the transmitter waits as
 * siw_sqe_take() makes it: for an ORD slot, room in the completion
 * queue, and here for CQ room (the consumer is this thread).
 */
static void siw_test_sq_order_race(struct kunit *test)
{
	struct ordt *t = ordt_new(test, ORD_RACE_CQ, 64, 1, ORD_RACE_ORD);
	struct siw_qp *qp = t->qp;
	struct siw_wqe *w = &qp->tx.sq_wqe;
	struct ord_race r = { .t = t };
	struct ib_wc *wc = kunit_kcalloc(test, ORD_WC, sizeof(*wc),
					 GFP_KERNEL);
	struct task_struct *rx;
	u64 id = 0, want = 0;
	u32 bad = 0, i;
	int n, k;

	KUNIT_ASSERT_NOT_NULL(test, wc);

	init_completion(&r.rx_done);
	rx = kthread_run(ord_race_rx, &r, "siw_kunit_rx");
	KUNIT_ASSERT_FALSE(test, IS_ERR(rx));

	while (want < ORD_RACE_N) {
		bool room = id < ORD_RACE_N &&
			    id - want < ORD_RACE_CQ / 2 &&
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
		n = siw_poll_cq(&t->cq->base, ORD_WC, wc);
		for (k = 0; k < n; k++, want++) {
			if (wc[k].wr_id != want || wc[k].status != IB_WC_SUCCESS) {
				if (!bad)
					kunit_err(test, "CQE %llu: id %llu status %d\n",
						  want, wc[k].wr_id, wc[k].status);
				bad++;
				want = wc[k].wr_id;
			}
		}
		if (!room && !n)
			cond_resched();
	}
	WRITE_ONCE(r.stop, true);
	wait_for_completion(&r.rx_done);
	KUNIT_EXPECT_EQ(test, bad, 0U);
	KUNIT_EXPECT_EQ(test, r.reads, DIV_ROUND_UP(ORD_RACE_N, 3));
	KUNIT_EXPECT_EQ(test, qp->attrs.state, SIW_QP_RTS);
	for (i = 0; i < 2; i++)
		KUNIT_EXPECT_EQ(test, siw_poll_cq(&t->cq->base, 1, wc), 0);
}

#define ORD_RQ_SLOTS	512
#define ORD_RQ_ROUNDS	64
#define ORD_RQ_THREADS	2

struct ord_flusher {
	struct siw_qp *qp;
	struct completion go, done;
	atomic_t *round;
	bool stop;
};

static int ord_flush_thread(void *data)
{
	struct ord_flusher *f = data;

	wait_for_completion(&f->go);
	while (!READ_ONCE(f->stop)) {
		siw_qp_flush_rq(f->qp);
		cond_resched();
	}
	complete(&f->done);
	return 0;
}

/*
 * Receives flushed by modify, the CM and the flush work at once: the
 * flush completions must come in the order the receives were posted.
 */
static void siw_test_rq_flush_order(struct kunit *test)
{
	struct ordt *t = ordt_new(test, 2 * ORD_RQ_SLOTS, ORD_RQ_SLOTS, 1, 1);
	struct ord_flusher *f = kunit_kcalloc(test, ORD_RQ_THREADS,
					      sizeof(*f), GFP_KERNEL);
	struct ib_wc *wc = kunit_kcalloc(test, ORD_WC, sizeof(*wc),
					 GFP_KERNEL);
	struct siw_qp *qp = t->qp;
	struct task_struct *k;
	u64 id = 0, want = 0;
	u32 bad = 0, round, i;
	int n, j;

	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_ASSERT_NOT_NULL(test, wc);

	qp->attrs.state = SIW_QP_ERROR;
	for (i = 0; i < ORD_RQ_THREADS; i++) {
		f[i].qp = qp;
		f[i].stop = false;
		init_completion(&f[i].go);
		init_completion(&f[i].done);
		k = kthread_run(ord_flush_thread, &f[i], "siw_kunit_fl%u", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(k));
	}
	for (i = 0; i < ORD_RQ_THREADS; i++)
		complete(&f[i].go);
	for (round = 0; round < ORD_RQ_ROUNDS; round++) {
		for (i = 0; i < ORD_RQ_SLOTS; i++) {
			struct siw_rqe *rqe =
				&qp->recvq[qp->rq_put++ % ORD_RQ_SLOTS];

			while (READ_ONCE(rqe->flags) & SIW_WQE_VALID)
				cond_resched();
			rqe->id = id++;
			/* the id before VALID, as a poster's */
			smp_store_release(&rqe->flags, SIW_WQE_VALID);
			siw_qp_flush_rq(qp);
			while ((n = siw_poll_cq(&t->cq->base, ORD_WC,
						wc)) > 0) {
				for (j = 0; j < n; j++, want++)
					if (wc[j].wr_id != want) {
						bad++;
						want = wc[j].wr_id;
					}
			}
		}
	}
	for (i = 0; i < ORD_RQ_THREADS; i++) {
		WRITE_ONCE(f[i].stop, true);
		wait_for_completion(&f[i].done);
	}
	siw_qp_flush_rq(qp);
	while ((n = siw_poll_cq(&t->cq->base, ORD_WC, wc)) > 0)
		for (j = 0; j < n; j++, want++)
			if (wc[j].wr_id != want) {
				bad++;
				want = wc[j].wr_id;
			}
	KUNIT_EXPECT_EQ(test, bad, 0U);
	KUNIT_EXPECT_EQ(test, want, id);
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
