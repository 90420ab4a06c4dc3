// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KUnit suite "siw_concurrency": what a hostile local user or a racing
 * context must not get out of the module. STag key rotation against a
 * lookup in flight, re-registration against a placement's page lookup,
 * fast-register of another PD's or an unknown MR,
 * completion notifications racing with arming (a million completions
 * from one CPU while another arms and polls), CQ overflow stopping the
 * QP, and flushes that end although the ring keeps being refilled.
 * Load siw.ko first, then this module; results in debugfs/kunit.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/kthread.h>
#include <linux/completion.h>
#include <linux/delay.h>

#include "siw_kunit.h"

/* --------------------------------------------------------- objects */

struct sect {
	struct siw_device *sdev;
	struct siw_qp *qp;
	struct siw_cq *cq;
	struct ib_pd *pd;
};

static void sect_exit(void *data)
{
	struct sect *t = data;

	flush_work(&t->qp->flush_work);
	flush_work(&t->qp->tx_work);
	xa_erase(&t->sdev->qp_xa, t->qp->id);
	xa_destroy(&t->sdev->mr_xa);
}

/* A device, a PD, a kernel QP with an SQ and RQ of @slots, one CQ. */
static struct sect *sect_new(struct kunit *test, u32 slots, u32 cqes)
{
	struct sect *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	struct siw_qp *qp;

	KUNIT_ASSERT_NOT_NULL(test, t);
	t->sdev = siw_kunit_sdev(test);
	t->pd = kunit_kzalloc(test, sizeof(*t->pd), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->pd);
	xa_init_flags(&t->sdev->mr_xa, XA_FLAGS_ALLOC1);
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
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, sect_exit, t),
			0);
	return t;
}

/* ------------------------------------------------- STag key rotation */

#define SECT_IDX	0x21
#define SECT_KEY_OLD	0x11
#define SECT_KEY_NEW	0x12

/* An FRMR in the STag table, valid with the old key over page @buf. */
static struct siw_mr *sect_frmr(struct kunit *test, struct sect *t,
				struct ib_pd *pd, void *buf)
{
	struct siw_mr *mr = kunit_kzalloc(test, sizeof(*mr), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mr);
	siw_mr_init(mr);
	mr->sdev = t->sdev;
	mr->type = SIW_MR_FRMR;
	mr->pd = pd;
	mr->remote_inv_ok = true;
	mr->pbl = kunit_kcalloc(test, 2, sizeof(*mr->pbl), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mr->pbl);
	mr->pbl_max = 2;
	mr->pbl_n = 1;
	mr->pbl[0] = (uintptr_t)buf;
	mr->base.device = &t->sdev->base;
	mr->base.page_size = PAGE_SIZE;
	mr->base.iova = 0x100000;
	mr->base.length = PAGE_SIZE;
	mr->stag = SECT_IDX << 8 | SECT_KEY_OLD;
	mr->va = 0x100000;
	mr->len = PAGE_SIZE;
	mr->access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	mr->valid = true;
	KUNIT_ASSERT_EQ(test, xa_err(xa_store(&t->sdev->mr_xa, SECT_IDX, mr,
					      GFP_KERNEL)), 0);
	return mr;
}

/*
 * A peer's Write looked up the old key; before its check, the consumer
 * invalidated it and registered a new range with a new key and more
 * rights. The old key must neither pass the check nor, if it passed
 * before the rotation, resolve a page afterwards.
 */
static void siw_test_mr_stale_key(struct kunit *test)
{
	struct sect *t = sect_new(test, 4, 8);
	void *buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	const u32 old = SECT_IDX << 8 | SECT_KEY_OLD;
	const u32 new = SECT_IDX << 8 | SECT_KEY_NEW;
	int rw = IB_ACCESS_REMOTE_WRITE;
	struct siw_mem_chunk c;
	struct siw_mr *mr, *got;
	u32 gen = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	mr = sect_frmr(test, t, t->pd, buf);

	/* a placement checked the old registration ... */
	got = siw_mr_lookup(t->sdev, old);
	KUNIT_ASSERT_PTR_EQ(test, got, mr);
	KUNIT_EXPECT_EQ(test, siw_mr_check(got, old, t->pd, rw, 0x100000, 16,
					   true, &gen), SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, siw_mr_chunk(got, gen, 0x100000, 16, &c), 0);

	/* ... then the key rotates: Local Invalidate, REG_MR, new rights */
	KUNIT_EXPECT_EQ(test, siw_mr_invalidate(t->sdev, old, t->pd, false),
			SIW_ACC_OK);
	mr->base.iova = 0x200000;
	KUNIT_EXPECT_EQ(test, siw_mr_fast_reg(t->sdev, t->pd, &mr->base, new,
					      IB_ACCESS_LOCAL_WRITE |
					      IB_ACCESS_REMOTE_WRITE |
					      IB_ACCESS_REMOTE_READ), 0);

	/* the reference taken with the old key checks the old key */
	KUNIT_EXPECT_EQ(test, siw_mr_check(got, old, t->pd, rw, 0x200000, 16,
					   true, NULL), SIW_ACC_STAG);
	KUNIT_EXPECT_EQ(test, siw_mr_check(got, old, t->pd,
					   IB_ACCESS_REMOTE_READ, 0x200000, 16,
					   true, NULL), SIW_ACC_STAG);
	/* what passed before the rotation resolves nothing after it */
	KUNIT_EXPECT_EQ(test, siw_mr_chunk(got, gen, 0x100000, 16, &c),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, siw_mr_chunk(got, gen, 0x200000, 16, &c),
			-EFAULT);
	/* an invalidate of the old key does not hit the new registration */
	KUNIT_EXPECT_EQ(test, siw_mr_invalidate(t->sdev, old, t->pd, true),
			SIW_ACC_STAG);
	siw_mr_put(got);

	/* the new key works, in the new range only */
	got = siw_mr_lookup(t->sdev, new);
	KUNIT_ASSERT_PTR_EQ(test, got, mr);
	KUNIT_EXPECT_EQ(test, siw_mr_check(got, new, t->pd, rw, 0x200000, 16,
					   true, &gen), SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, siw_mr_check(got, new, t->pd, rw, 0x100000, 16,
					   true, NULL), SIW_ACC_BOUNDS);
	KUNIT_EXPECT_EQ(test, siw_mr_chunk(got, gen, 0x200000, 16, &c), 0);
	KUNIT_EXPECT_PTR_EQ(test, page_address(c.page) + c.off, buf);
	KUNIT_EXPECT_NULL(test, siw_mr_lookup(t->sdev, old));
	siw_mr_put(got);
	xa_erase(&t->sdev->mr_xa, SECT_IDX);
}

/* ------------------------------- re-registration against a placement */

/*
 * Two registrations of one FRMR over the same three pages: A maps page 0
 * at SECT_RR_VA, B page 1 (its range starts a page lower). A placement
 * checked against one of them must get that one's page or nothing.
 */
#define SECT_RR_VA	0x100000ULL
#define SECT_RR_LOOKUPS	2000000
#define SECT_RR_SECS	30

struct sect_rereg {
	struct sect *t;
	struct siw_mr *mr;
	atomic_t stop;
	unsigned long rotations;
	int failed;
	struct completion done;
};

/* Invalidate and register anew, A and B in turn, until told to stop. */
static int sect_rereg_writer(void *data)
{
	struct sect_rereg *r = data;
	struct siw_mr *mr = r->mr;
	u8 key = SECT_KEY_OLD;
	bool b = false;

	while (!atomic_read(&r->stop)) {
		if (siw_mr_invalidate(r->t->sdev, mr->stag, r->t->pd, false)) {
			r->failed = 1;
			break;
		}
		b = !b;
		mr->base.iova = b ? SECT_RR_VA - PAGE_SIZE : SECT_RR_VA;
		mr->base.length = (b ? 3 : 2) * PAGE_SIZE;
		key++;
		if (siw_mr_fast_reg(r->t->sdev, r->t->pd, &mr->base,
				    SECT_IDX << 8 | key,
				    IB_ACCESS_LOCAL_WRITE |
				    IB_ACCESS_REMOTE_WRITE)) {
			r->failed = 2;
			break;
		}
		r->rotations++;
		cond_resched();
	}
	complete(&r->done);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

/*
 * A placement's check and page lookup (siw_mr_check(), siw_mr_chunk())
 * while another CPU invalidates and re-registers the MR between the two
 * layouts: a lookup that passes returns the page of the registration
 * its check accepted, never the other one's.
 */
static void siw_test_mr_rereg_race(struct kunit *test)
{
	struct sect *t = sect_new(test, 4, 8);
	struct sect_rereg *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	unsigned long end = jiffies + SECT_RR_SECS * HZ;
	unsigned long ok[2] = {}, mixed = 0, refused = 0;
	struct siw_mem_chunk c;
	const struct cpumask *here;
	struct task_struct *k;
	struct siw_mr *mr;
	void *buf[3];
	u32 gen, gen0;
	int i, which;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs, has %u", num_online_cpus());
	KUNIT_ASSERT_NOT_NULL(test, r);
	for (i = 0; i < 3; i++) {
		buf[i] = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, buf[i]);
	}
	mr = sect_frmr(test, t, t->pd, buf[0]);
	mr->pbl = kunit_kcalloc(test, 3, sizeof(*mr->pbl), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mr->pbl);
	mr->pbl_max = 3;
	mr->pbl_n = 3;
	for (i = 0; i < 3; i++)
		mr->pbl[i] = (uintptr_t)buf[i];
	mr->len = 2 * PAGE_SIZE;
	mr->base.length = mr->len;
	gen0 = mr->gen;

	r->t = t;
	r->mr = mr;
	init_completion(&r->done);
	k = kthread_create(sect_rereg_writer, r, "siw_kunit_rereg");
	KUNIT_ASSERT_FALSE(test, IS_ERR(k));
	kthread_bind(k, cpumask_last(cpu_online_mask));
	/* the lookups on another CPU than the writer's */
	here = cpumask_of(cpumask_first(cpu_online_mask));
	KUNIT_EXPECT_EQ(test, set_cpus_allowed_ptr(current, here), 0);
	wake_up_process(k);

	for (i = 0; i < SECT_RR_LOOKUPS && time_before(jiffies, end); i++) {
		if (siw_mr_check(mr, READ_ONCE(mr->stag), t->pd,
				 IB_ACCESS_REMOTE_WRITE, SECT_RR_VA, 16, true,
				 &gen) ||
		    siw_mr_chunk(mr, gen, SECT_RR_VA, 16, &c)) {
			refused++;
			continue;
		}
		/* gen0 + 4n: A valid; gen0 + 4n + 2: B valid */
		which = (gen - gen0) % 4 ? 1 : 0;
		if (c.page == virt_to_page(buf[which]))
			ok[which]++;
		else
			mixed++;
		if (!(i & 255))
			cond_resched();
	}
	atomic_set(&r->stop, 1);
	wait_for_completion(&r->done);
	kthread_stop(k);
	set_cpus_allowed_ptr(current, cpu_possible_mask);

	kunit_info(test, "%d lookups: A %lu, B %lu, refused %lu, mixed %lu; %lu re-registrations\n",
		   i, ok[0], ok[1], refused, mixed, r->rotations);
	KUNIT_EXPECT_EQ_MSG(test, r->failed, 0, "the writer's %s failed",
			    r->failed == 1 ? "invalidate" : "fast-register");
	KUNIT_EXPECT_EQ_MSG(test, mixed, 0UL,
			    "%lu lookups got the other registration's page",
			    mixed);
	/* both layouts were looked up while the other was being written */
	KUNIT_EXPECT_GT(test, ok[0], 0UL);
	KUNIT_EXPECT_GT(test, ok[1], 0UL);
	KUNIT_EXPECT_GT(test, r->rotations, 1000UL);
	xa_erase(&t->sdev->mr_xa, SECT_IDX);
}

/* Fast-register checks the PD and never trusts the MR pointer. */
static void siw_test_fast_reg_checks(struct kunit *test)
{
	struct sect *t = sect_new(test, 4, 8);
	struct ib_pd *other = kunit_kzalloc(test, sizeof(*other), GFP_KERNEL);
	void *buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	const u32 old = SECT_IDX << 8 | SECT_KEY_OLD;
	const u32 new = SECT_IDX << 8 | SECT_KEY_NEW;
	struct siw_mr *mr, *stray;
	int acc = IB_ACCESS_LOCAL_WRITE;

	KUNIT_ASSERT_NOT_NULL(test, other);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	mr = sect_frmr(test, t, t->pd, buf);
	KUNIT_EXPECT_EQ(test, siw_mr_invalidate(t->sdev, old, t->pd, false),
			SIW_ACC_OK);

	/* another PD's QP may not register this MR */
	KUNIT_EXPECT_EQ(test, siw_mr_fast_reg(t->sdev, other, &mr->base, new,
					      acc), -EINVAL);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(mr->valid));
	/* an MR the table does not hold at the key's index: refused */
	stray = kunit_kzalloc(test, sizeof(*stray), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, stray);
	siw_mr_init(stray);
	stray->type = SIW_MR_FRMR;
	stray->pd = t->pd;
	KUNIT_EXPECT_EQ(test, siw_mr_fast_reg(t->sdev, t->pd, &stray->base,
					      new, acc), -EINVAL);
	/* the same MR under another index: refused */
	KUNIT_EXPECT_EQ(test, siw_mr_fast_reg(t->sdev, t->pd, &mr->base,
					      (SECT_IDX + 1) << 8, acc),
			-EINVAL);
	/* the right PD, pointer and index: registered */
	KUNIT_EXPECT_EQ(test, siw_mr_fast_reg(t->sdev, t->pd, &mr->base, new,
					      acc), 0);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(mr->valid));
	KUNIT_EXPECT_EQ(test, READ_ONCE(mr->stag), new);
	/* a valid MR is not registered again */
	KUNIT_EXPECT_EQ(test, siw_mr_fast_reg(t->sdev, t->pd, &mr->base, old,
					      acc), -EINVAL);
	/* the reference taken during the call was dropped */
	KUNIT_EXPECT_EQ(test, kref_read(&mr->ref), 1U);
	xa_erase(&t->sdev->mr_xa, SECT_IDX);
}

/* ------------------------------------------- completion notification */

/*
 * Up to a million completions or 30 s, whichever comes first: the debug
 * kernel under TCG does about 8000 a second, so the default run's KUnit
 * stays short and still sleeps (and re-arms) thousands of times.
 */
#define SECT_NOTIFY_N	1000000
#define SECT_NOTIFY_SECS	30
#define SECT_NOTIFY_MIN	10000
#define SECT_NOTIFY_CQE	64

struct sect_notify {
	struct sect *t;
	struct completion fired;
	atomic_t in_cq;			/* produced, not yet polled */
	atomic_t stop;
	u32 produced;
};

static void sect_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct sect_notify *n = ctx;

	complete(&n->fired);
}

/* The other CPU: completions one at a time, never overflowing. */
static int sect_producer(void *data)
{
	struct sect_notify *n = data;
	struct siw_wqe w = {};

	while (n->produced < SECT_NOTIFY_N && !atomic_read(&n->stop)) {
		if (atomic_read(&n->in_cq) >= SECT_NOTIFY_CQE) {
			cond_resched();
			continue;
		}
		w.sqe.id = n->produced;
		atomic_inc(&n->in_cq);
		siw_recv_complete(n->t->qp, &w, IB_WC_SUCCESS, 0, 0, false);
		n->produced++;
		if (!(n->produced & 63))
			cond_resched();
	}
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

/*
 * The consumer's loop of every kernel ULP: poll until empty, arm with
 * IB_CQ_REPORT_MISSED_EVENTS, poll again if it reports a miss, else
 * sleep until notified. A lost notification shows as a timeout with
 * entries waiting in the CQ.
 */
static void siw_test_cq_notify_race(struct kunit *test)
{
	struct sect *t = sect_new(test, 4, SECT_NOTIFY_CQE);
	struct sect_notify *n = kunit_kzalloc(test, sizeof(*n), GFP_KERNEL);
	enum ib_cq_notify_flags arm = IB_CQ_NEXT_COMP |
				      IB_CQ_REPORT_MISSED_EVENTS;
	unsigned long deadline = jiffies + SECT_NOTIFY_SECS * HZ;
	struct task_struct *prod;
	u32 got = 0, sleeps = 0, lost = 0;
	struct ib_wc wc[16];
	int i, k, rv;

	KUNIT_ASSERT_NOT_NULL(test, n);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs, has %u", num_online_cpus());
	n->t = t;
	init_completion(&n->fired);
	t->cq->base.comp_handler = sect_comp_handler;
	t->cq->base.cq_context = n;

	prod = kthread_create(sect_producer, n, "siw_kunit_prod");
	KUNIT_ASSERT_FALSE(test, IS_ERR(prod));
	kthread_bind(prod, cpumask_last(cpu_online_mask));
	wake_up_process(prod);

	while (got < SECT_NOTIFY_N && time_before(jiffies, deadline)) {
		k = siw_poll_cq(&t->cq->base, ARRAY_SIZE(wc), wc);
		for (i = 0; i < k; i++) {
			if (wc[i].wr_id != got || wc[i].status != IB_WC_SUCCESS)
				break;
			got++;
		}
		if (i < k) {
			KUNIT_FAIL(test, "completion %u: id %llu status %d", got,
				   wc[i].wr_id, wc[i].status);
			break;
		}
		atomic_sub(k, &n->in_cq);
		if (k)
			continue;
		reinit_completion(&n->fired);
		rv = siw_req_notify_cq(&t->cq->base, arm);
		if (rv > 0)
			continue;	/* missed: poll again */
		sleeps++;
		if (wait_for_completion_timeout(&n->fired, HZ))
			continue;
		/*
		 * No notification for 1 s. An entry waiting is one that came
		 * after we armed (else the arm had reported it): its handler
		 * runs right after it is written, so give it time, once.
		 */
		if (!(READ_ONCE(t->cq->queue[t->cq->get % t->cq->num_cqe].flags) &
		      SIW_WQE_VALID))
			continue;	/* the producer is just slow */
		if (wait_for_completion_timeout(&n->fired, 2 * HZ))
			continue;
		lost++;
		KUNIT_FAIL(test, "notification lost: %u polled, %u produced",
			   got, n->produced);
		break;
	}
	atomic_set(&n->stop, 1);
	kthread_stop(prod);
	kunit_info(test, "%u completions, %u sleeps, %u lost", got, sleeps,
		   lost);
	KUNIT_EXPECT_GE(test, got, (u32)SECT_NOTIFY_MIN);
	KUNIT_EXPECT_GT(test, sleeps, 0U);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_CQ_OVERFLOW),
			0ULL);
}

/* ------------------------------------------------------- CQ overflow */

struct sect_events {
	int cq_err;
	int qp_fatal;
};

static void sect_cq_event(struct ib_event *ev, void *ctx)
{
	struct sect_events *e = ctx;

	if (ev->event == IB_EVENT_CQ_ERR)
		e->cq_err++;
}

static void sect_qp_event(struct ib_event *ev, void *ctx)
{
	struct sect_events *e = ctx;

	if (ev->event == IB_EVENT_QP_FATAL)
		e->qp_fatal++;
}

/* A full CQ: the completion is not dropped silently, the QP stops. */
static void siw_test_cq_overflow(struct kunit *test)
{
	struct sect *t = sect_new(test, 4, 2);
	struct sect_events ev = {};
	struct siw_wqe w = {};
	struct ib_wc wc[4];
	int i;

	t->cq->base.event_handler = sect_cq_event;
	t->cq->base.cq_context = &ev;
	t->qp->base.event_handler = sect_qp_event;
	t->qp->base.qp_context = &ev;

	for (i = 0; i < 3; i++) {
		w.sqe.id = i;
		siw_recv_complete(t->qp, &w, IB_WC_SUCCESS, 0, 0, false);
	}
	KUNIT_EXPECT_EQ(test, ev.cq_err, 1);
	KUNIT_EXPECT_EQ(test, ev.qp_fatal, 1);
	KUNIT_EXPECT_EQ(test, READ_ONCE(t->qp->attrs.state), SIW_QP_ERROR);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_CQ_OVERFLOW),
			1ULL);
	/* what fitted is intact, in order */
	KUNIT_ASSERT_EQ(test, siw_poll_cq(&t->cq->base, 4, wc), 2);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 0ULL);
	KUNIT_EXPECT_EQ(test, wc[1].wr_id, 1ULL);
	/* a second overflow of a QP in error raises no second QP event */
	for (i = 0; i < 3; i++)
		siw_recv_complete(t->qp, &w, IB_WC_SUCCESS, 0, 0, false);
	KUNIT_EXPECT_EQ(test, ev.qp_fatal, 1);
	KUNIT_EXPECT_EQ(test, ev.cq_err, 2);
	flush_work(&t->qp->tx_work);
}

/* ------------------------------------------------- bounded flushing */

struct sect_refill {
	struct siw_sqe *ring;
	u32 n;
	atomic_t stop;
	unsigned long writes;
};

/* A user thread that keeps every SQ slot VALID as fast as it can. */
static int sect_refiller(void *data)
{
	struct sect_refill *r = data;
	u32 i;

	while (!atomic_read(&r->stop)) {
		for (i = 0; i < r->n; i++) {
			r->ring[i].opcode = SIW_OP_SEND;
			WRITE_ONCE(r->ring[i].flags, SIW_WQE_VALID);
		}
		r->writes++;
	}
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

/*
 * Flushing the SQ of a QP in ERROR while the ring is refilled behind
 * the flush: each pass ends after at most a ring's worth, and a full CQ
 * ends it early.
 */
static void siw_test_flush_bounded(struct kunit *test)
{
	struct sect *t = sect_new(test, 16, 4096);
	struct sect_refill *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct task_struct *w;
	unsigned long t0;
	u32 before;
	int pass;

	KUNIT_ASSERT_NOT_NULL(test, r);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs, has %u", num_online_cpus());
	r->ring = t->qp->sendq;
	r->n = t->qp->attrs.sq_size;
	t->qp->attrs.state = SIW_QP_ERROR;
	w = kthread_create(sect_refiller, r, "siw_kunit_refill");
	KUNIT_ASSERT_FALSE(test, IS_ERR(w));
	kthread_bind(w, cpumask_last(cpu_online_mask));
	wake_up_process(w);
	while (!READ_ONCE(r->writes))
		cond_resched();

	for (pass = 0; pass < 8; pass++) {
		before = t->cq->put;
		t0 = jiffies;
		siw_qp_flush_sq(t->qp);
		KUNIT_EXPECT_LE(test, t->cq->put - before, t->qp->attrs.sq_size);
		KUNIT_EXPECT_LT(test, jiffies - t0, (unsigned long)HZ);
	}
	/* the CQ fills up: the flush stops at it */
	t->cq->num_cqe = t->cq->put + 2;
	before = t->cq->put;
	siw_qp_flush_sq(t->qp);
	KUNIT_EXPECT_LE(test, t->cq->put - before, 2U);
	atomic_set(&r->stop, 1);
	kthread_stop(w);
	flush_work(&t->qp->tx_work);
}

/* ------------------------------------------------- flush ordering */

static void sect_post_recv(struct siw_qp *qp, u32 slot, u64 id)
{
	struct siw_rqe *rqe = &qp->recvq[slot];

	rqe->id = id;
	rqe->num_sge = 0;
	WRITE_ONCE(rqe->flags, SIW_WQE_VALID);
}

/*
 * A QP in ERROR while the RX engine holds a receive: a flush from any
 * other context leaves the ring alone (the RX engine completes its own
 * first, then flushes the rest), the RX engine takes no new receive,
 * and the send queue is the transmitter's alone. Completions stay in
 * posting order.
 */
static void siw_test_flush_order(struct kunit *test)
{
	struct sect *t = sect_new(test, 4, 16);
	struct siw_qp *qp = t->qp;
	struct siw_wqe *rx = &qp->rx.rdmap.rwqe;
	struct siw_wqe w = {};
	struct ib_wc wc[8];
	int i;

	for (i = 0; i < 3; i++)
		sect_post_recv(qp, i, 10 + i);
	qp->sendq[0].opcode = SIW_OP_SEND;
	WRITE_ONCE(qp->sendq[0].flags, SIW_WQE_VALID);

	/* the RX engine took the first receive */
	KUNIT_ASSERT_EQ(test, siw_rqe_fetch(qp, rx), 0);
	KUNIT_EXPECT_TRUE(test, rx->active);
	KUNIT_EXPECT_EQ(test, rx->sqe.id, 10ULL);

	qp->attrs.state = SIW_QP_ERROR;
	/* no receive for the RX engine in ERROR */
	KUNIT_EXPECT_EQ(test, siw_rqe_fetch(qp, &w), -ESHUTDOWN);
	/* a flush from elsewhere: nothing completes ahead of receive 10 */
	siw_qp_flush(qp);
	KUNIT_EXPECT_EQ(test, siw_poll_cq(&t->cq->base, 8, wc), 0);
	KUNIT_EXPECT_EQ(test, qp->rq_get, 1U);
	/* the SQ is left to the transmitter */
	KUNIT_EXPECT_EQ(test, qp->sq_get, 0U);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(qp->sendq[0].flags) & SIW_WQE_VALID);

	/* the RX engine completes its receive, then flushes the rest */
	siw_recv_complete(qp, rx, IB_WC_WR_FLUSH_ERR, 0, 0, false);
	siw_qp_flush_rq(qp);
	KUNIT_ASSERT_EQ(test, siw_poll_cq(&t->cq->base, 8, wc), 3);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, 10ULL + i);
		KUNIT_EXPECT_EQ(test, wc[i].status, IB_WC_WR_FLUSH_ERR);
	}
	flush_work(&qp->tx_work);
}

/* ------------------------------------------------- posts in ERROR */

/*
 * A kernel consumer that reposts every buffer its flush completions give
 * back (the SMB client's receive refill loop) must run out of buffers:
 * what it posts to a QP in ERROR completes only once it let go of the
 * CPU, and then all of it, in posting order. Preemption is off, as for
 * a busy kworker on a kernel without forced preemption.
 */
static void siw_test_flush_posted(struct kunit *test)
{
	struct sect *t = sect_new(test, 16, 64);
	struct siw_qp *qp = t->qp;
	u32 pool = 4, posted = 0, back = 0;
	struct ib_wc wc[16];
	int i, k;

	qp->attrs.state = SIW_QP_ERROR;
	preempt_disable();
	while (pool && posted < 16) {
		pool--;
		sect_post_recv(qp, posted, 100 + posted);
		siw_qp_flush_posted(qp);
		posted++;
		/* the consumer's completion handler gives buffers back */
		k = siw_poll_cq(&t->cq->base, ARRAY_SIZE(wc), wc);
		pool += k;
		back += k;
	}
	preempt_enable();
	KUNIT_EXPECT_EQ(test, posted, 4U);
	KUNIT_EXPECT_EQ(test, back, 0U);

	flush_work(&qp->flush_work);
	k = siw_poll_cq(&t->cq->base, ARRAY_SIZE(wc), wc);
	KUNIT_ASSERT_EQ(test, k, 4);
	for (i = 0; i < k; i++) {
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, 100ULL + i);
		KUNIT_EXPECT_EQ(test, wc[i].status, IB_WC_WR_FLUSH_ERR);
	}
}

/* ------------------------------------------------- held SQ slot */

/* Post one WQE of @opcode with @id into slot @i and take it off the SQ */
static void sect_take(struct kunit *test, struct siw_qp *qp, u32 i, u64 id,
		      u8 opcode)
{
	struct siw_wqe *w = &qp->tx.sq_wqe;

	memset(&qp->sendq[i], 0, sizeof(qp->sendq[i]));
	qp->sendq[i].id = id;
	qp->sendq[i].opcode = opcode;
	WRITE_ONCE(qp->sendq[i].flags, SIW_WQE_VALID);
	KUNIT_ASSERT_EQ(test, siw_sqe_fetch(qp, w), 0);
	KUNIT_EXPECT_EQ(test, w->sqe.id, id);
}

/*
 * A user QP's transmitter keeps the slot of the small Send or Write it
 * sends VALID, so that libsiw skips the doorbell for posts behind it, and
 * lets go of it before anything completes; a flush, a kernel QP, a large
 * message and a signalled Read with none in flight (a ping-pong) let go
 * of it at once; a Read behind another, or an unsignalled one, is held
 * (until its request is framed).
 */
static void siw_test_sq_held(struct kunit *test)
{
	struct sect *t = sect_new(test, 8, 16);
	struct siw_qp *qp = t->qp;
	struct siw_wqe *w = &qp->tx.sq_wqe;
	struct ib_wc wc[4];
	int i;

	qp->user = true;
	WRITE_ONCE(qp->db_streak, SIW_TX_HOLD_DBS);
	for (i = 0; i < 3; i++) {
		qp->sendq[i].id = 20 + i;
		qp->sendq[i].opcode = SIW_OP_SEND;
		WRITE_ONCE(qp->sendq[i].flags, SIW_WQE_VALID);
	}
	/* no SGEs: nothing resolved, nothing to let go of */
	KUNIT_ASSERT_EQ(test, siw_sqe_fetch(qp, w), 0);
	KUNIT_EXPECT_EQ(test, w->sqe.id, 20ULL);
	KUNIT_EXPECT_EQ(test, qp->sq_get, 1U);
	KUNIT_EXPECT_PTR_EQ(test, qp->tx.held, &qp->sendq[0]);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(qp->sendq[0].flags) & SIW_WQE_VALID);

	siw_sq_release(qp);
	KUNIT_EXPECT_NULL(test, qp->tx.held);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[0].flags), 0);
	siw_sq_release(qp);	/* nothing held: nothing happens */

	/* the next one is held in turn; a flush leaves none VALID */
	KUNIT_ASSERT_EQ(test, siw_sqe_fetch(qp, w), 0);
	KUNIT_EXPECT_PTR_EQ(test, qp->tx.held, &qp->sendq[1]);
	siw_sq_release(qp);
	siw_qp_flush_sq(qp);
	KUNIT_EXPECT_NULL(test, qp->tx.held);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[i].flags), 0);
	KUNIT_ASSERT_EQ(test, siw_poll_cq(&t->cq->base, 4, wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 22ULL);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_WR_FLUSH_ERR);

	/* a kernel QP's posts always kick: its slots are released at once */
	qp->user = false;
	qp->sendq[3].opcode = SIW_OP_SEND;
	WRITE_ONCE(qp->sendq[3].flags, SIW_WQE_VALID);
	KUNIT_ASSERT_EQ(test, siw_sqe_fetch(qp, w), 0);
	KUNIT_EXPECT_NULL(test, qp->tx.held);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[3].flags), 0);

	/* a Send over SIW_TX_STREAM_LEN, a lone signalled Read: not held */
	qp->user = true;
	qp->attrs.ord = 1;
	qp->sendq[4].opcode = SIW_OP_SEND;
	qp->sendq[4].num_sge = 1;
	qp->sendq[4].sge[0].length = SIW_TX_STREAM_LEN + 1;
	qp->sendq[5].opcode = SIW_OP_READ;
	WRITE_ONCE(qp->sendq[4].flags, SIW_WQE_VALID);
	WRITE_ONCE(qp->sendq[5].flags, SIW_WQE_VALID | SIW_WQE_SIGNALLED);
	/* the Send's lkey 0 resolves to nothing: taken, then refused */
	KUNIT_EXPECT_EQ(test, siw_sqe_fetch(qp, w), -EINVAL);
	KUNIT_EXPECT_NULL(test, qp->tx.held);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[4].flags), 0);
	KUNIT_ASSERT_EQ(test, siw_sqe_fetch(qp, w), 0);
	KUNIT_EXPECT_EQ(test, w->sqe.opcode, SIW_OP_READ);
	KUNIT_EXPECT_NULL(test, qp->tx.held);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[5].flags), 0);

	/* a small Send of a ping-pong (first doorbell since a receive) */
	WRITE_ONCE(qp->db_streak, SIW_TX_HOLD_DBS - 1);
	sect_take(test, qp, 6, 26, SIW_OP_SEND);
	KUNIT_EXPECT_NULL(test, qp->tx.held);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[6].flags), 0);

	/* a Read behind another in flight is held, whatever the count */
	qp->attrs.ord = 2;
	qp->orq_put = qp->orq_get + 1;
	sect_take(test, qp, 7, 27, SIW_OP_READ);
	KUNIT_EXPECT_PTR_EQ(test, qp->tx.held, &qp->sendq[7]);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(qp->sendq[7].flags) & SIW_WQE_VALID);
	siw_sq_release(qp);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[7].flags), 0);
	qp->orq_put = qp->orq_get;

	/*
	 * An unsignalled Read is one of a stream even with none in flight
	 * (the round trip can end within its doorbell): held
	 */
	sect_take(test, qp, 0, 28, SIW_OP_READ);
	KUNIT_EXPECT_PTR_EQ(test, qp->tx.held, &qp->sendq[0]);
	siw_sq_release(qp);
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->sendq[0].flags), 0);
}

/* ------------------------------------------------ warning rate limit */

#define SECT_LOG_ROUNDS	20000

struct sect_log {
	struct siw_ratelimit rl;
	struct ib_device *ibdev;
	struct completion finished;
	atomic_t round;		/* the round both may start */
	atomic_t done;		/* the last round the follower finished */
	atomic_t refused;	/* lines refused, both threads */
	atomic_t stuck;		/* the round the follower did not finish */
};

/* Waits for each round the leader opens, then logs in it. */
static int sect_log_follower(void *data)
{
	struct sect_log *l = data;
	unsigned int spins = 0;
	int r = 1;

	while (!kthread_should_stop()) {
		if (atomic_read_acquire(&l->round) != r) {
			if (!(++spins & 4095))
				cond_resched();
			cpu_relax();
			continue;
		}
		if (!siw_log_ratelimit(&l->rl, l->ibdev))
			atomic_inc(&l->refused);
		atomic_set_release(&l->done, r++);
	}
	return 0;
}

/* Opens each round on a fresh call site and logs in it at once. */
static int sect_log_leader(void *data)
{
	struct sect_log *l = data;
	unsigned long end;
	int r;

	for (r = 1; r <= SECT_LOG_ROUNDS && !kthread_should_stop(); r++) {
		memset(&l->rl, 0, sizeof(l->rl));
		atomic_set_release(&l->round, r);
		if (!siw_log_ratelimit(&l->rl, l->ibdev))
			atomic_inc(&l->refused);
		end = jiffies + 2 * HZ;
		while (atomic_read_acquire(&l->done) != r) {
			if (time_after(jiffies, end)) {
				atomic_set(&l->stuck, r);
				goto out;
			}
			cond_resched();
			cpu_relax();
		}
	}
out:
	complete(&l->finished);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

/*
 * A call site's first lines print whatever other CPUs do at that moment:
 * the kernel's limiter refused one, uncounted, when two devices logged
 * their lost connections at once. Past the burst lines are counted, and
 * the next window starts afresh.
 */
static void siw_test_log_ratelimit(struct kunit *test)
{
	struct sect_log *l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	struct task_struct *lead, *follow;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, l);
	l->ibdev = &siw_kunit_sdev(test)->base;

	for (i = 0; i < SIW_LOG_BURST; i++)
		KUNIT_EXPECT_TRUE(test, siw_log_ratelimit(&l->rl, l->ibdev));
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_FALSE(test, siw_log_ratelimit(&l->rl, l->ibdev));
	KUNIT_EXPECT_EQ(test, atomic_read(&l->rl.missed), 3);
	l->rl.begin -= SIW_LOG_INTERVAL + 1;	/* the window has ended */
	KUNIT_EXPECT_TRUE(test, siw_log_ratelimit(&l->rl, l->ibdev));
	KUNIT_EXPECT_EQ(test, atomic_read(&l->rl.missed), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&l->rl.printed), 1);

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs, has %u", num_online_cpus());
	init_completion(&l->finished);
	follow = kthread_create(sect_log_follower, l, "siw_kunit_logf");
	KUNIT_ASSERT_FALSE(test, IS_ERR(follow));
	kthread_bind(follow, cpumask_last(cpu_online_mask));
	lead = kthread_create(sect_log_leader, l, "siw_kunit_logl");
	if (IS_ERR(lead)) {
		kthread_stop(follow);
		KUNIT_FAIL(test, "no leader thread: %ld", PTR_ERR(lead));
		return;
	}
	kthread_bind(lead, cpumask_first(cpu_online_mask));
	wake_up_process(follow);
	wake_up_process(lead);
	if (!wait_for_completion_timeout(&l->finished, 120 * HZ))
		KUNIT_FAIL(test, "the rounds did not end within 120 s");
	kthread_stop(lead);
	kthread_stop(follow);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&l->stuck), 0,
			    "the follower did not finish a round");
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&l->refused), 0,
			    "%d first lines of a window refused in %d rounds",
			    atomic_read(&l->refused), SECT_LOG_ROUNDS);
}

static struct kunit_case siw_sec_cases[] = {
	KUNIT_CASE(siw_test_mr_stale_key),
	KUNIT_CASE(siw_test_fast_reg_checks),
	KUNIT_CASE_SLOW(siw_test_mr_rereg_race),
	KUNIT_CASE_SLOW(siw_test_cq_notify_race),
	KUNIT_CASE(siw_test_cq_overflow),
	KUNIT_CASE(siw_test_flush_bounded),
	KUNIT_CASE(siw_test_flush_order),
	KUNIT_CASE(siw_test_flush_posted),
	KUNIT_CASE(siw_test_sq_held),
	KUNIT_CASE(siw_test_log_ratelimit),
	{}
};

static struct kunit_suite siw_sec_suite = {
	.name = "siw_concurrency",
	.test_cases = siw_sec_cases,
};

kunit_test_suites(&siw_sec_suite);
