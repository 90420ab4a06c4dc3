// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: QP lifecycle and state machine, work queue consumption (SQ, RQ,
 * SRQ rings), completion generation and flushing.
 *
 * Ownership rules that keep the data path lock-light:
 *  - SQ ring: consumed by the TX work under sq_lock; tx.sq_wqe belongs
 *    to the TX work alone.
 *  - RQ/SRQ ring: consumed by the RX parser under rq_lock (srq->lock);
 *    rx.rdmap.rwqe belongs to the RX parser, which runs under the socket
 *    lock.
 *  - ORQ (our reads in flight): pushed by TX, popped by RX, orq_lock.
 *  - IRQ (peer's reads to answer): pushed by RX, popped by TX, orq_lock.
 * In-progress work requests are flushed by their owner, so flush
 * completions keep the order in which the work was posted.
 */
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <net/tcp.h>
#include <rdma/restrack.h>

#include <kunit/visibility.h>

#include "siw.h"
#include "siw_trace.h"

static void siw_qp_release(struct kref *ref)
{
	struct siw_qp *qp = container_of(ref, struct siw_qp, ref);

	complete(&qp->freed);
}

void siw_qp_get(struct siw_qp *qp)
{
	kref_get(&qp->ref);
}

void siw_qp_put(struct siw_qp *qp)
{
	kref_put(&qp->ref, siw_qp_release);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_put);

struct siw_qp *siw_qp_lookup(struct siw_device *sdev, u32 id)
{
	struct siw_qp *qp;

	rcu_read_lock();
	qp = xa_load(&sdev->qp_xa, id);
	if (qp && !kref_get_unless_zero(&qp->ref))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

int siw_qp_init(struct siw_qp *qp, struct siw_device *sdev)
{
	u32 id;
	int rv;

	qp->sdev = sdev;
	kref_init(&qp->ref);
	init_completion(&qp->freed);
	spin_lock_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	spin_lock_init(&qp->orq_lock);
	qp->attrs.state = SIW_QP_IDLE;

	rv = xa_alloc_cyclic(&sdev->qp_xa, &id, qp, XA_LIMIT(1, 0xffffff),
			     &sdev->next_qp, GFP_KERNEL);
	if (rv < 0)
		return rv;
	qp->id = id;
	qp->base.qp_num = id;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_init);

static const char *const siw_qp_state_name[SIW_QP_NUM_STATES] = {
	[SIW_QP_IDLE] = "IDLE",
	[SIW_QP_RTS] = "RTS",
	[SIW_QP_CLOSING] = "CLOSING",
	[SIW_QP_TERMINATE] = "TERMINATE",
	[SIW_QP_ERROR] = "ERROR",
};

enum ib_qp_state siw_qp_ib_state(const struct siw_qp *qp)
{
	static const enum ib_qp_state map[SIW_QP_NUM_STATES] = {
		[SIW_QP_IDLE] = IB_QPS_INIT,
		[SIW_QP_RTS] = IB_QPS_RTS,
		[SIW_QP_CLOSING] = IB_QPS_SQD,
		[SIW_QP_TERMINATE] = IB_QPS_SQE,
		[SIW_QP_ERROR] = IB_QPS_ERR,
	};

	return map[READ_ONCE(qp->attrs.state)];
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_ib_state);

void siw_qp_event(struct siw_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->base.device,
		.element.qp = &qp->base,
		.event = type,
	};

	if (qp->base.event_handler)
		qp->base.event_handler(&ev, qp->base.qp_context);
}

/*
 * The TX work of every QP. Unbound: the TX work of a QP whose RX softirq
 * runs on one CPU may run on another, so a Read Response or the next
 * FPDUs go out while this CPU still receives (docs/bench.md). A QP's
 * work never runs twice at once.
 *
 * The near queue is per CPU: a work queued there runs on the CPU that
 * queued it, right after the softirq, without waking another CPU. For
 * the one Read Request waiting alone that is the shorter way (Read
 * latency); under load the unbound queue spreads the work.
 */
static struct workqueue_struct *siw_tx_wq;
static struct workqueue_struct *siw_tx_near_wq;

int siw_qp_wq_init(void)
{
	siw_tx_wq = alloc_workqueue("siw_tx",
				    WQ_UNBOUND | WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	siw_tx_near_wq = alloc_workqueue("siw_tx_near", WQ_HIGHPRI |
					 WQ_MEM_RECLAIM | SIW_WQ_PERCPU, 0);
	if (siw_tx_wq && siw_tx_near_wq)
		return 0;
	siw_qp_wq_exit();
	return -ENOMEM;
}

void siw_qp_wq_exit(void)
{
	if (siw_tx_near_wq)
		destroy_workqueue(siw_tx_near_wq);
	if (siw_tx_wq)
		destroy_workqueue(siw_tx_wq);
	siw_tx_near_wq = NULL;
	siw_tx_wq = NULL;
}

/* Run the QP's transmitter (siw_tx.c) soon; it holds a QP reference. */
void siw_qp_schedule_tx(struct siw_qp *qp)
{
	siw_qp_get(qp);
	if (!queue_work(siw_tx_wq, &qp->tx_work))
		siw_qp_put(qp);
}

/**
 * siw_qp_schedule_tx_near - run the transmitter soon, on this CPU
 * @qp: the QP, with one reply (a Read Response) to send and nothing else
 *	known to be queued
 *
 * When the transmitter is busy or already asked for, the reply goes with
 * it (the unbound work) instead: two runs would only contend.
 */
void siw_qp_schedule_tx_near(struct siw_qp *qp)
{
	if (mutex_is_locked(&qp->tx_mutex) || work_pending(&qp->tx_work)) {
		siw_qp_schedule_tx(qp);
		return;
	}
	siw_qp_get(qp);
	if (!queue_work(siw_tx_near_wq, &qp->tx_work_near))
		siw_qp_put(qp);
}

/**
 * siw_qp_tx_unblock - one of our Reads ended, or its ORD slot came free
 * @qp: the QP, the Read's requester
 *
 * Wakes the transmitter only if it stopped at a work request that waits
 * for that (siw_sqe_fetch() returned -EBUSY): a wake-up per Read
 * Response for nothing costs another CPU's time and the Read's latency.
 * A closing QP's transmitter also waits for its last Read to end before
 * the orderly close (siw_tx_all_done()): it is woken too.
 */
void siw_qp_tx_unblock(struct siw_qp *qp)
{
	unsigned long flags;
	bool wake;

	spin_lock_irqsave(&qp->orq_lock, flags);
	wake = qp->tx_waits || READ_ONCE(qp->attrs.state) == SIW_QP_CLOSING;
	qp->tx_waits = false;
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	if (wake)
		siw_qp_schedule_tx(qp);
}

/* The same for callers that may find the QP being destroyed. */
void siw_qp_wake_tx(struct siw_qp *qp)
{
	if (!kref_get_unless_zero(&qp->ref))
		return;
	if (!queue_work(siw_tx_wq, &qp->tx_work))
		siw_qp_put(qp);
}

int siw_qp_to_rts(struct siw_qp *qp, const struct siw_llp_params *p)
{
	struct siw_irq_entry *irq = NULL;
	struct siw_orq_entry *orq = NULL;
	/* 0 is a valid answer: no RDMA Reads that way (RFC 6581 3.2) */
	u32 ird = min_t(u32, p->ird, SIW_MAX_IRD);
	u32 ord = min_t(u32, p->ord, SIW_MAX_ORD);
	u32 ndone = max_t(u32, qp->attrs.sq_size, 16);
	struct siw_sq_done *done;

	struct mem_cgroup *old_memcg;
	gfp_t gfp = qp->memcg ? SIW_GFP_USER : GFP_KERNEL | __GFP_NOWARN;

	/*
	 * A user QP's arrays are charged to its creator's memory cgroup,
	 * also when the CM's work item (the active side) gets here. A
	 * failure is reported by the caller ("cannot enter RTS").
	 */
	old_memcg = set_active_memcg(qp->memcg);
	irq = kvcalloc(ird, sizeof(*irq), gfp);
	orq = kvcalloc(ord, sizeof(*orq), gfp);
	done = kvcalloc(ndone, sizeof(*done), gfp);
	set_active_memcg(old_memcg);
	if (!irq || !orq || !done) {
		kvfree(irq);
		kvfree(orq);
		kvfree(done);
		return -ENOMEM;
	}

	spin_lock_bh(&qp->state_lock);
	if (qp->attrs.state != SIW_QP_IDLE) {
		spin_unlock_bh(&qp->state_lock);
		kvfree(irq);
		kvfree(orq);
		kvfree(done);
		siw_dbg(qp->sdev, "QP %u: connect in state %s\n", qp_id(qp),
			siw_qp_state_name[qp->attrs.state]);
		return -EINVAL;
	}
	qp->irq = irq;
	qp->orq = orq;
	qp->sq_done = done;
	qp->sq_done_size = ndone;
	qp->sq_done_put = 0;
	qp->sq_done_get = 0;
	qp->sq_draining = false;
	qp->sq_drain_again = false;
	qp->sq_drain_flush = false;
	qp->reads_done = 0;
	qp->attrs.ird = ird;
	qp->attrs.ord = ord;
	qp->attrs.crc = p->crc;
	/*
	 * Before RTS a user QP's access flags are librdmacm's, not the
	 * consumer's: 0 on the active side (rdma_init_qp_attr() without an
	 * iw_cm id), remote Write and Read on the passive side. It enters
	 * RTS allowing both; IB_QP_ACCESS_FLAGS in RTS narrows them. A
	 * kernel QP keeps what rdma_cm (or its consumer) set.
	 */
	if (qp->user)
		WRITE_ONCE(qp->attrs.access, IB_ACCESS_REMOTE_WRITE |
					     IB_ACCESS_REMOTE_READ);
	qp->sock = p->sock;
	qp->cep = p->cep;
	qp->irq_put = 0;
	qp->irq_get = 0;
	qp->orq_put = 0;
	qp->orq_get = 0;
	/* fresh transmitter and parser: all zeros is their initial state */
	memset(&qp->tx, 0, sizeof(qp->tx));
	memset(&qp->rx, 0, sizeof(qp->rx));
	qp->rtr_send = p->rtr_enable && !p->rtr_wait ? p->rtr_send : 0;
	qp->rtr_pending = p->rtr_enable && !p->rtr_wait;
	qp->tx_hold = p->rtr_enable && p->rtr_wait;
	trace_siw_qp_state(qp, qp->attrs.state, SIW_QP_RTS, _RET_IP_);
	qp->attrs.state = SIW_QP_RTS;
	spin_unlock_bh(&qp->state_lock);

	siw_dbg(qp->sdev, "QP %u: RTS, ird %u ord %u crc %d\n", qp_id(qp),
		ird, ord, p->crc);
	siw_qp_schedule_tx(qp);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_to_rts);

/**
 * siw_qp_set_state_error - move to ERROR, return the previous state
 * @qp: the QP
 *
 * Only the state changes here; callers decide about events, disconnect
 * and flushing, which must not run under the state lock.
 */
enum siw_qp_state siw_qp_set_state_error(struct siw_qp *qp)
{
	enum siw_qp_state old;
	unsigned long flags;

	spin_lock_irqsave(&qp->state_lock, flags);
	old = qp->attrs.state;
	qp->attrs.state = SIW_QP_ERROR;
	spin_unlock_irqrestore(&qp->state_lock, flags);
	return old;
}

/**
 * siw_qp_to_error - move to ERROR, close the connection, flush
 * @qp: the QP
 *
 * After a Terminate went out the close is graceful, so the peer gets to
 * read it; otherwise the connection is reset.
 */
void siw_qp_to_error(struct siw_qp *qp)
{
	enum siw_qp_state old = siw_qp_set_state_error(qp);

	if (old == SIW_QP_ERROR)
		return;
	trace_siw_qp_state(qp, old, SIW_QP_ERROR, _RET_IP_);
	siw_dbg(qp->sdev, "QP %u: %s -> ERROR\n", qp_id(qp),
		siw_qp_state_name[old]);
	if (old != SIW_QP_IDLE && READ_ONCE(qp->cep))
		siw_cm_qp_disconnect(qp, !qp->term_sent);
	siw_qp_flush(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_to_error);

/*
 * Graceful close (SQD): the TX work finishes what is queued, then asks
 * the CM for an orderly TCP close (siw_tx_run()).
 */
void siw_qp_close_graceful(struct siw_qp *qp)
{
	bool connected = false, idle = false;

	spin_lock_bh(&qp->state_lock);
	if (qp->attrs.state == SIW_QP_RTS) {
		trace_siw_qp_state(qp, SIW_QP_RTS, SIW_QP_CLOSING, _RET_IP_);
		qp->attrs.state = SIW_QP_CLOSING;
		connected = true;
	} else if (qp->attrs.state == SIW_QP_IDLE) {
		trace_siw_qp_state(qp, SIW_QP_IDLE, SIW_QP_ERROR, _RET_IP_);
		qp->attrs.state = SIW_QP_ERROR;
		idle = true;
	}
	spin_unlock_bh(&qp->state_lock);

	if (connected)
		siw_qp_schedule_tx(qp);
	else if (idle)
		siw_qp_flush(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_close_graceful);

/*
 * CLOSING and everything sent, no Read of ours outstanding (the
 * transmitter found): now the orderly close.
 */
void siw_qp_sq_drained(struct siw_qp *qp)
{
	qp->close_sent = true;
	siw_cm_qp_disconnect(qp, false);
}

/*
 * The engines stopped using the connection (siw_qp_llp_closed()): the QP
 * lets go of it and flushes what is left.
 */
void siw_qp_llp_detach(struct siw_qp *qp)
{
	spin_lock_bh(&qp->state_lock);
	qp->sock = NULL;
	qp->cep = NULL;
	spin_unlock_bh(&qp->state_lock);

	siw_qp_flush(qp);
}

/**
 * siw_qp_destroy - take the QP out of service
 * @qp: the QP
 *
 * Returns once nothing references it any more (its connection closed,
 * its TX work done). The engines then flush what they hold
 * (siw_tx_fini(), siw_rx_fini()) before siw_qp_free().
 */
void siw_qp_destroy(struct siw_qp *qp)
{
	siw_qp_to_error(qp);
	xa_erase(&qp->sdev->qp_xa, qp->id);

	/* CM and iw_cm references go once the connection is closed */
	siw_qp_put(qp);
	wait_for_completion(&qp->freed);
	cancel_work_sync(&qp->tx_work);
	cancel_work_sync(&qp->tx_work_near);
}

void siw_qp_free(struct siw_qp *qp)
{
	/* the engines flushed what they hold (siw_tx_fini, siw_rx_fini) */
	siw_qp_flush_rq(qp);
	kvfree(qp->irq);
	kvfree(qp->orq);
	kvfree(qp->sq_done);
	qp->irq = NULL;
	qp->orq = NULL;
	qp->sq_done = NULL;
	mem_cgroup_put(qp->memcg);
	qp->memcg = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_free);

/* ------------------------------------------------------- completions */

static const u8 siw_ib2siw_status[] = {
	[IB_WC_SUCCESS] = SIW_WC_SUCCESS,
	[IB_WC_LOC_LEN_ERR] = SIW_WC_LOC_LEN_ERR,
	[IB_WC_LOC_QP_OP_ERR] = SIW_WC_LOC_QP_OP_ERR,
	[IB_WC_LOC_PROT_ERR] = SIW_WC_LOC_PROT_ERR,
	[IB_WC_WR_FLUSH_ERR] = SIW_WC_WR_FLUSH_ERR,
	[IB_WC_BAD_RESP_ERR] = SIW_WC_BAD_RESP_ERR,
	[IB_WC_LOC_ACCESS_ERR] = SIW_WC_LOC_ACCESS_ERR,
	[IB_WC_REM_INV_REQ_ERR] = SIW_WC_REM_INV_REQ_ERR,
	[IB_WC_REM_ACCESS_ERR] = SIW_WC_REM_ACCESS_ERR,
	[IB_WC_REM_OP_ERR] = SIW_WC_GENERAL_ERR,
	[IB_WC_GENERAL_ERR] = SIW_WC_GENERAL_ERR,
};

static u16 siw_cqe_status(const struct siw_cq *cq, enum ib_wc_status s)
{
	if (!cq->user)
		return s;
	if (s < ARRAY_SIZE(siw_ib2siw_status) &&
	    (s == IB_WC_SUCCESS || siw_ib2siw_status[s]))
		return siw_ib2siw_status[s];
	return SIW_WC_GENERAL_ERR;
}

/*
 * Move to ERROR from a context that may hold RX, ring or CQ locks: the
 * state changed already (siw_qp_set_state_error()); the disconnect and
 * the flush, which take those locks, run from the CM and TX work.
 */
static void siw_qp_error_async(struct siw_qp *qp, enum siw_qp_state old)
{
	trace_siw_qp_state(qp, old, SIW_QP_ERROR, _RET_IP_);
	if (old != SIW_QP_IDLE)
		siw_cm_qp_disconnect(qp, true);
	siw_qp_wake_tx(qp);
}

/*
 * The CQ lost a completion: the consumer hears of it (IB_EVENT_CQ_ERR)
 * and the QP that produced it stops (IB_EVENT_QP_FATAL, then ERROR), so
 * no work request of it is silently missing from a running QP. Called
 * without CQ locks; any context.
 */
static void siw_cq_overflow(struct siw_cq *cq, struct siw_qp *qp)
{
	struct ib_event ev = {
		.device = cq->base.device,
		.element.cq = &cq->base,
		.event = IB_EVENT_CQ_ERR,
	};
	enum siw_qp_state old;

	siw_stat_inc(qp->sdev, SIW_STAT_CQ_OVERFLOW);
	siw_warn(qp->sdev, "CQ %u overflow: a completion of QP %u is lost, QP to error\n",
		 cq->id, qp_id(qp));
	if (cq->base.event_handler)
		cq->base.event_handler(&ev, cq->base.cq_context);
	old = siw_qp_set_state_error(qp);
	if (old != SIW_QP_ERROR) {
		siw_qp_event(qp, IB_EVENT_QP_FATAL);
		siw_qp_error_async(qp, old);
	}
}

/**
 * siw_cqe_add - write one completion and notify the consumer if armed
 * @cq: completion queue
 * @sqe: work request being completed (id and opcode taken from it)
 * @opcode: enum siw_opcode to report
 * @bytes: byte count
 * @status: completion status
 * @solicited: completion of a solicited receive
 * @inval_stag: STag invalidated by the received message, 0 if none
 * @qp: QP the work request belongs to
 *
 * An entry still owned by the consumer is never overwritten: the CQ
 * overflowed, siw_cq_overflow() reports it and -ENOSPC is returned.
 */
static int siw_cqe_add(struct siw_cq *cq, const struct siw_sqe *sqe,
		       u8 opcode, u32 bytes, enum ib_wc_status status,
		       bool solicited, u32 inval_stag, struct siw_qp *qp)
{
	struct siw_cqe *cqe;
	unsigned long flags;
	bool notify = false;
	u32 arm;

	spin_lock_irqsave(&cq->lock, flags);
	cqe = &cq->queue[cq->put % cq->num_cqe];
	if (READ_ONCE(cqe->flags) & SIW_WQE_VALID) {
		spin_unlock_irqrestore(&cq->lock, flags);
		siw_cq_overflow(cq, qp);
		return -ENOSPC;
	}
	cqe->id = sqe->id;
	cqe->opcode = opcode;
	cqe->status = siw_cqe_status(cq, status);
	cqe->bytes = bytes;
	cqe->imm_data = 0;
	cqe->inval_stag = inval_stag;
	if (cq->user)
		cqe->qp_id = qp_id(qp);
	else
		cqe->base_qp = &qp->base;
	/* the consumer may take the entry once VALID is seen */
	smp_store_release(&cqe->flags,
			  SIW_WQE_VALID | (inval_stag && !cq->user ?
					   SIW_CQE_INVAL : 0));
	cq->put++;
	trace_siw_cqe(cq, qp, sqe->id, opcode, bytes, status);

	/*
	 * Store VALID, then load the arm flags; siw_req_notify_cq() (and
	 * libsiw) store the flags, then load VALID. Each side needs a full
	 * barrier between its store and its load, else both may read the
	 * other's old value: no callback, and REPORT_MISSED_EVENTS says
	 * nothing was missed. Pairs with the smp_mb() in siw_req_notify_cq().
	 */
	smp_mb();
	/* ctrl->flags is written by user space: read it once */
	arm = READ_ONCE(cq->ctrl->flags);
	if ((arm & SIW_NOTIFY_NEXT_COMPLETION) ||
	    ((arm & SIW_NOTIFY_SOLICITED) &&
	     (solicited || status != IB_WC_SUCCESS))) {
		/* disarm only what we read: a re-arm in between stays */
		cmpxchg(&cq->ctrl->flags, arm, SIW_NOTIFY_NOT);
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->base.comp_handler)
		cq->base.comp_handler(&cq->base, cq->base.cq_context);
	return 0;
}

void siw_wqe_release(struct siw_wqe *wqe)
{
	int i;

	for (i = 0; i < SIW_MAX_SGE; i++) {
		if (wqe->mr[i]) {
			siw_mr_put(wqe->mr[i]);
			wqe->mr[i] = NULL;
		}
	}
	wqe->active = false;
}

void siw_wqe_complete(struct siw_qp *qp, struct siw_wqe *wqe,
		      enum ib_wc_status status, bool recv, u32 bytes,
		      u32 inval_stag, bool solicited)
{
	struct siw_sqe *sqe = &wqe->sqe;

	if (recv) {
		siw_cqe_add(qp->rcq, sqe, SIW_OP_RECEIVE, bytes, status,
			    solicited, inval_stag, qp);
	} else if ((sqe->flags & SIW_WQE_SIGNALLED) || qp->sig_all ||
		   status != IB_WC_SUCCESS) {
		siw_cqe_add(qp->scq, sqe, sqe->opcode, bytes, status, false,
			    0, qp);
	}
	siw_wqe_release(wqe);
}
EXPORT_SYMBOL_IF_KUNIT(siw_wqe_complete);

static void siw_sq_cqe(struct siw_qp *qp, const struct siw_sq_done *d)
{
	struct siw_sqe sqe = { .id = d->id };

	siw_cqe_add(qp->scq, &sqe, d->opcode, d->bytes, d->status, false, 0,
		    qp);
}

/* Its Reads are done and its zero-copy messages released. */
static bool siw_sq_done_due(struct siw_qp *qp, const struct siw_sq_done *d)
{
	return (s32)(qp->reads_done - d->read_seq) >= 0 &&
	       (s32)(siw_zc_released(qp) - d->zc_seq) >= 0;
}

/* Something earlier is still waiting; caller holds orq_lock. */
static bool siw_sq_done_waiting(struct siw_qp *qp, u32 zc_seq)
{
	return qp->sq_done_put != qp->sq_done_get ||
	       qp->reads_done != qp->orq_put || siw_zc_released(qp) != zc_seq;
}

/*
 * Report queued completions that are due, oldest first. One caller
 * reports at a time, others ask it for another pass: the CQ is written
 * outside orq_lock and the order must hold all the same.
 */
static void siw_sq_done_drain(struct siw_qp *qp, bool flush)
{
	struct siw_sq_done d;
	unsigned long flags;
	bool fl;

	spin_lock_irqsave(&qp->orq_lock, flags);
	qp->sq_drain_flush |= flush;
	if (qp->sq_draining) {
		qp->sq_drain_again = true;
		spin_unlock_irqrestore(&qp->orq_lock, flags);
		return;
	}
	qp->sq_draining = true;
	for (;;) {
		fl = qp->sq_drain_flush;
		if (!qp->sq_done || qp->sq_done_get == qp->sq_done_put ||
		    (!fl && !siw_sq_done_due(qp, &qp->sq_done[qp->sq_done_get %
							      qp->sq_done_size]))) {
			if (!qp->sq_drain_again)
				break;
			qp->sq_drain_again = false;
			continue;
		}
		d = qp->sq_done[qp->sq_done_get % qp->sq_done_size];
		qp->sq_done_get++;
		spin_unlock_irqrestore(&qp->orq_lock, flags);
		if (fl)
			d.status = IB_WC_WR_FLUSH_ERR;
		if (d.report || fl)
			siw_sq_cqe(qp, &d);
		spin_lock_irqsave(&qp->orq_lock, flags);
	}
	qp->sq_draining = false;
	qp->sq_drain_flush = false;
	spin_unlock_irqrestore(&qp->orq_lock, flags);
}

/* TX work: report what waited for zero-copy releases. */
void siw_sq_done_report(struct siw_qp *qp)
{
	siw_sq_done_drain(qp, false);
}

/* Everything still queued completes with a flush error. */
void siw_sq_done_flush(struct siw_qp *qp)
{
	siw_sq_done_drain(qp, true);
}

/* The oldest outstanding Read into @w, if any (and if before @msn). */
static bool siw_orq_take(struct siw_qp *qp, struct siw_wqe *w, bool limit,
			 u32 msn)
{
	struct siw_orq_entry *e;
	bool got = false;

	spin_lock_bh(&qp->orq_lock);
	if (qp->orq && qp->orq_get != qp->orq_put) {
		e = &qp->orq[qp->orq_get % qp->attrs.ord];
		if (!limit || (s32)(e->wqe.rreq_msn - msn) < 0) {
			memcpy(w, &e->wqe, sizeof(*w));
			qp->orq_get++;
			got = true;
		}
	}
	spin_unlock_bh(&qp->orq_lock);
	return got;
}

/**
 * siw_orq_pop_before - take our oldest outstanding Read if it came before
 * @qp: the QP
 * @w: filled with the Read's work request (it owns the MR references)
 * @msn: Read Request MSN: only a Read with a lower one is taken
 *
 * Return: false if no such Read is outstanding.
 */
bool siw_orq_pop_before(struct siw_qp *qp, struct siw_wqe *w, u32 msn)
{
	return siw_orq_take(qp, w, true, msn);
}

/**
 * siw_orq_pop - take our oldest outstanding Read off the ORQ
 * @qp: the QP
 * @w: filled with the Read's work request (it owns the MR references)
 *
 * Return: false if no Read is outstanding.
 */
bool siw_orq_pop(struct siw_qp *qp, struct siw_wqe *w)
{
	return siw_orq_take(qp, w, false, 0);
}

/**
 * siw_sq_complete - report a send queue work request the TX side finished
 * @qp: the QP
 * @wqe: the work request (its MR references are dropped here)
 * @status: completion status
 * @bytes: byte count
 *
 * Completions keep posting order: while one of our earlier Reads still
 * waits for its response, or an earlier (or this) zero-copy message is
 * not yet released by TCP, the completion is queued behind it.
 */
void siw_sq_complete(struct siw_qp *qp, struct siw_wqe *wqe,
		     enum ib_wc_status status, u32 bytes)
{
	struct siw_sq_done d = {
		.id = wqe->sqe.id,
		.opcode = wqe->sqe.opcode,
		.status = status,
		.bytes = bytes,
		.report = true,
	};
	bool signal = (wqe->sqe.flags & SIW_WQE_SIGNALLED) || qp->sig_all ||
		      status != IB_WC_SUCCESS;
	unsigned long flags;
	bool queued = false;

	siw_wqe_release(wqe);
	if (!signal)
		return;

	/* covers this message when it went zero-copy */
	d.zc_seq = siw_zc_started(qp);
	spin_lock_irqsave(&qp->orq_lock, flags);
	if (qp->sq_done && siw_sq_done_waiting(qp, d.zc_seq)) {
		d.read_seq = qp->orq_put;
		qp->sq_done[qp->sq_done_put++ % qp->sq_done_size] = d;
		queued = true;
	}
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	if (queued)
		siw_sq_done_drain(qp, false);	/* it may be due already */
	else
		siw_sq_cqe(qp, &d);
}

/**
 * siw_sq_read_issue - a Read of ours goes out (caller holds orq_lock)
 * @qp: the QP
 * @wqe: the Read; orq_put is its index
 *
 * While earlier completions still wait in the queue, the Read's own
 * completion takes the next place there, filled in when it is done.
 */
void siw_sq_read_issue(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_sq_done *d;

	lockdep_assert_held(&qp->orq_lock);
	wqe->queued = false;
	if (!qp->sq_done || (qp->sq_done_put == qp->sq_done_get &&
			     siw_zc_released(qp) == siw_zc_started(qp)))
		return;
	d = &qp->sq_done[qp->sq_done_put % qp->sq_done_size];
	memset(d, 0, sizeof(*d));
	d->id = wqe->sqe.id;
	d->opcode = wqe->sqe.opcode;
	d->read_seq = qp->orq_put + 1;	/* due once itself is done */
	d->zc_seq = siw_zc_started(qp);
	wqe->done_slot = qp->sq_done_put++;
	wqe->queued = true;
}

/**
 * siw_sq_read_done - one of our Reads completed (or was flushed)
 * @qp: the QP
 * @wqe: the Read work request (its MR references are dropped here)
 * @status: completion status
 * @bytes: byte count
 */
void siw_sq_read_done(struct siw_qp *qp, struct siw_wqe *wqe,
		      enum ib_wc_status status, u32 bytes)
{
	unsigned long flags;

	if (!wqe->queued)
		siw_wqe_complete(qp, wqe, status, false, bytes, 0, false);
	else
		siw_wqe_release(wqe);

	spin_lock_irqsave(&qp->orq_lock, flags);
	if (wqe->queued && qp->sq_done) {
		struct siw_sq_done *d =
			&qp->sq_done[wqe->done_slot % qp->sq_done_size];

		d->status = status;
		d->bytes = bytes;
		d->report = (wqe->sqe.flags & SIW_WQE_SIGNALLED) ||
			    qp->sig_all || status != IB_WC_SUCCESS;
	}
	wqe->queued = false;
	qp->reads_done++;
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	siw_sq_done_drain(qp, false);
}

/* ------------------------------------------------- work queue rings */

static bool siw_opcode_ok(const struct siw_qp *qp, u8 op)
{
	switch (op) {
	case SIW_OP_WRITE:
	case SIW_OP_READ:
	case SIW_OP_SEND:
	case SIW_OP_SEND_REMOTE_INV:
		return true;
	case SIW_OP_READ_LOCAL_INV:
	case SIW_OP_INVAL_STAG:
	case SIW_OP_REG_MR:
		return !qp->user;
	default:
		return false;
	}
}

static bool siw_sqe_is_read(const struct siw_sqe *sqe)
{
	return sqe->opcode == SIW_OP_READ ||
	       sqe->opcode == SIW_OP_READ_LOCAL_INV;
}

/*
 * Validate a private copy of an SQE. Returns the completion status for
 * a bad one (it completes in error), IB_WC_SUCCESS otherwise.
 */
static enum ib_wc_status siw_sqe_check(struct siw_qp *qp,
				       struct siw_wqe *wqe)
{
	struct siw_sqe *sqe = &wqe->sqe;
	u64 total = 0;
	int i;

	if (!siw_opcode_ok(qp, sqe->opcode))
		return IB_WC_LOC_QP_OP_ERR;

	if (sqe->opcode == SIW_OP_INVAL_STAG || sqe->opcode == SIW_OP_REG_MR) {
		wqe->bytes = 0;
		return IB_WC_SUCCESS;
	}
	if (sqe->flags & SIW_WQE_INLINE) {
		if (sqe->opcode != SIW_OP_SEND && sqe->opcode != SIW_OP_WRITE &&
		    sqe->opcode != SIW_OP_SEND_REMOTE_INV)
			return IB_WC_LOC_QP_OP_ERR;
		if (sqe->sge[0].length > SIW_MAX_INLINE)
			return IB_WC_LOC_LEN_ERR;
		sqe->num_sge = sqe->sge[0].length ? 1 : 0;
		wqe->bytes = sqe->sge[0].length;
		return IB_WC_SUCCESS;
	}
	if (sqe->num_sge > qp->attrs.sq_max_sges)
		return IB_WC_LOC_QP_OP_ERR;
	if (siw_sqe_is_read(sqe) &&
	    (sqe->num_sge > SIW_MAX_SGE_RD || !qp->attrs.ord))
		return IB_WC_LOC_QP_OP_ERR;
	for (i = 0; i < sqe->num_sge; i++)
		total += sqe->sge[i].length;
	if (total > U32_MAX)
		return IB_WC_LOC_LEN_ERR;
	wqe->bytes = total;
	return IB_WC_SUCCESS;
}

/**
 * siw_sqe_fetch - take the next SQE from the send ring into @wqe
 * @qp: the QP
 * @wqe: private copy to fill
 * @flush: taking it off to flush it: no fence or ORD wait
 *
 * Returns 0 with a valid WQE, -ENOENT if the ring is empty, -EBUSY if
 * the next WQE must wait (read fence or ORD exhausted; it stays in the
 * ring), or -EINVAL for a malformed WQE (taken off the ring; @wqe->status
 * says how to complete it).
 */
int siw_sqe_fetch(struct siw_qp *qp, struct siw_wqe *wqe, bool flush)
{
	struct siw_sqe *slot;
	unsigned long flags;
	bool orq_busy, orq_full, done_full, wait;
	int rv = 0;

	spin_lock_irqsave(&qp->sq_lock, flags);
	slot = &qp->sendq[qp->sq_get % qp->attrs.sq_size];
	/* acquire: the producer wrote the SQE before setting VALID */
	if (!(smp_load_acquire(&slot->flags) & SIW_WQE_VALID)) {
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		return -ENOENT;
	}
	memcpy(&wqe->sqe, slot, sizeof(wqe->sqe));

	spin_lock(&qp->orq_lock);
	orq_busy = qp->orq_put != qp->reads_done;
	/* ORD 0: a Read is taken off and completes in error below */
	orq_full = qp->attrs.ord &&
		   qp->orq_put - qp->orq_get >= qp->attrs.ord;
	done_full = qp->sq_done &&
		    qp->sq_done_put - qp->sq_done_get >= qp->sq_done_size;
	/*
	 * A fenced WQE waits for our Reads, a Read for an ORD slot, and
	 * every WQE for room to queue its completion. Noted under the lock
	 * the Read's end takes: siw_qp_tx_unblock() wakes us then.
	 */
	wait = !flush &&
	       (((wqe->sqe.flags & SIW_WQE_READ_FENCE) && orq_busy) ||
		(siw_sqe_is_read(&wqe->sqe) && orq_full) || done_full);
	if (wait)
		qp->tx_waits = true;
	spin_unlock(&qp->orq_lock);

	if (wait) {
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		return -EBUSY;
	}
	/*
	 * Full barrier between releasing this slot and looking at the next
	 * one: libsiw rings the doorbell only if, after making its new SQE
	 * VALID, it finds the one before already released. Without it both
	 * sides could read the other's old value (store-load reordering)
	 * and the new SQE would wait for a doorbell that never comes.
	 */
	smp_store_mb(slot->flags, 0);
	qp->sq_get++;

	memset(wqe->mr, 0, sizeof(wqe->mr));
	wqe->done = 0;
	wqe->status = siw_sqe_check(qp, wqe);
	wqe->active = wqe->status == IB_WC_SUCCESS;
	trace_siw_sqe(qp, wqe);
	if (!wqe->active) {
		siw_stat_inc(qp->sdev, SIW_STAT_BAD_WQE);
		siw_dbg(qp->sdev, "QP %u: bad SQE opcode %u num_sge %u flags 0x%x\n",
			qp_id(qp), wqe->sqe.opcode, wqe->sqe.num_sge,
			wqe->sqe.flags);
		rv = -EINVAL;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return rv;
}

static void siw_srq_limit_check(struct siw_srq *srq)
{
	struct siw_rqe *next;

	if (!srq->armed || !srq->limit)
		return;
	/* fewer than limit posted if the limit-th next slot is empty */
	next = &srq->queue[(srq->get + srq->limit - 1) % srq->num_rqe];
	if (READ_ONCE(next->flags) & SIW_WQE_VALID)
		return;
	srq->armed = false;
	if (srq->base.event_handler) {
		struct ib_event ev = {
			.device = srq->base.device,
			.element.srq = &srq->base,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->base.event_handler(&ev, srq->base.srq_context);
	}
}

/**
 * siw_rqe_take - take the next receive WQE (RQ or SRQ) into @wqe
 * @qp: the QP
 * @wqe: private copy to fill
 * @flush: a flusher takes it, not the RX engine
 *
 * Under the ring's consumer lock the RX engine marks its WQE active and
 * a flusher checks that mark, and the RX engine takes nothing once the
 * QP is in ERROR: a flusher never completes a later WQE before the one
 * the RX engine holds.
 *
 * Returns 0, -ENOENT if nothing is posted, -EBUSY (flusher) if the RX
 * engine holds a WQE, -ESHUTDOWN (RX) in ERROR, or -EINVAL for a
 * malformed RQE (taken off the ring, to be completed with @wqe->status).
 */
static int siw_rqe_take(struct siw_qp *qp, struct siw_wqe *wqe, bool flush)
{
	struct siw_srq *srq = qp->srq;
	struct siw_rqe *ring, *slot;
	unsigned long flags;
	spinlock_t *lock;	/* RQ's or SRQ's consumer lock */
	u32 *get, n, max_sge;
	u64 total = 0;
	int i;

	if (srq) {
		lock = &srq->lock;
		ring = srq->queue;
		get = &srq->get;
		n = srq->num_rqe;
		max_sge = srq->max_sge;
	} else {
		lock = &qp->rq_lock;
		ring = qp->recvq;
		get = &qp->rq_get;
		n = qp->attrs.rq_size;
		max_sge = qp->attrs.rq_max_sges;
	}
	if (!n)
		return -ENOENT;

	spin_lock_irqsave(lock, flags);
	if (flush && READ_ONCE(qp->rx.rdmap.rwqe.active)) {
		spin_unlock_irqrestore(lock, flags);
		return -EBUSY;
	}
	if (!flush && READ_ONCE(qp->attrs.state) == SIW_QP_ERROR) {
		spin_unlock_irqrestore(lock, flags);
		return -ESHUTDOWN;
	}
	slot = &ring[*get % n];
	/* acquire: the producer wrote the RQE before setting VALID */
	if (!(smp_load_acquire(&slot->flags) & SIW_WQE_VALID)) {
		spin_unlock_irqrestore(lock, flags);
		return -ENOENT;
	}
	memset(&wqe->sqe, 0, sizeof(wqe->sqe));
	wqe->sqe.id = slot->id;
	wqe->sqe.num_sge = slot->num_sge;
	memcpy(wqe->sqe.sge, slot->sge, sizeof(wqe->sqe.sge));
	WRITE_ONCE(slot->flags, 0);
	(*get)++;
	/* the RX engine's WQE is its own until completed, good or bad */
	if (!flush)
		WRITE_ONCE(wqe->active, true);
	if (srq)
		siw_srq_limit_check(srq);
	spin_unlock_irqrestore(lock, flags);

	memset(wqe->mr, 0, sizeof(wqe->mr));
	wqe->done = 0;
	wqe->sqe.opcode = SIW_OP_RECEIVE;
	wqe->status = IB_WC_SUCCESS;
	if (wqe->sqe.num_sge > max_sge) {
		wqe->status = IB_WC_LOC_QP_OP_ERR;
	} else {
		for (i = 0; i < wqe->sqe.num_sge; i++)
			total += wqe->sqe.sge[i].length;
		if (total > U32_MAX)
			wqe->status = IB_WC_LOC_LEN_ERR;
	}
	wqe->bytes = total;
	trace_siw_rqe(qp, wqe);
	if (wqe->status != IB_WC_SUCCESS) {
		siw_stat_inc(qp->sdev, SIW_STAT_BAD_WQE);
		return -EINVAL;
	}
	return 0;
}

/**
 * siw_rqe_fetch - the RX engine takes the next receive WQE
 * @qp: the QP
 * @wqe: the RX engine's WQE (qp->rx.rdmap.rwqe), marked active even when
 *	malformed: the caller completes it either way
 *
 * Return: as siw_rqe_take().
 */
int siw_rqe_fetch(struct siw_qp *qp, struct siw_wqe *wqe)
{
	return siw_rqe_take(qp, wqe, false);
}
EXPORT_SYMBOL_IF_KUNIT(siw_rqe_fetch);

/**
 * siw_wqe_resolve - look up and check the local MRs of a WQE's SGL
 * @qp: the QP
 * @wqe: WQE with a validated SGL
 * @write: local memory is written (receive, read sink)
 *
 * References are held in @wqe->mr until siw_wqe_release().
 * Returns IB_WC_SUCCESS or the completion status for the failure.
 */
int siw_wqe_resolve(struct siw_qp *qp, struct siw_wqe *wqe, bool write)
{
	struct siw_sqe *sqe = &wqe->sqe;
	int i;

	if (sqe->flags & SIW_WQE_INLINE)
		return IB_WC_SUCCESS;

	for (i = 0; i < sqe->num_sge; i++) {
		struct siw_sge *sge = &sqe->sge[i];
		struct siw_mr *mr;

		if (!sge->length)
			continue;
		mr = siw_mr_lookup(qp->sdev, sge->lkey);
		if (!mr) {
			siw_dbg(qp->sdev, "QP %u: unknown lkey 0x%x\n",
				qp_id(qp), sge->lkey);
			return IB_WC_LOC_PROT_ERR;
		}
		wqe->mr[i] = mr;
		if (siw_mr_check(mr, sge->lkey, qp->pd,
				 write ? IB_ACCESS_LOCAL_WRITE : 0, sge->laddr,
				 sge->length, false, &wqe->mr_gen[i])) {
			siw_dbg(qp->sdev, "QP %u: lkey 0x%x check failed\n",
				qp_id(qp), sge->lkey);
			return IB_WC_LOC_PROT_ERR;
		}
	}
	return IB_WC_SUCCESS;
}

/* ----------------------------------------------------------- flush */

/**
 * siw_qp_flush_sq - complete what is queued on the SQ with a flush error
 * @qp: the QP, in ERROR; caller is the transmitter (tx_mutex held) or the
 *	QP's teardown, so no SQE is in flight ahead of these
 *
 * One ring's worth at most: user space can set VALID again behind us for
 * as long as it likes, and a full CQ ends the pass (the QP already went
 * to error for the completion it lost).
 */
void siw_qp_flush_sq(struct siw_qp *qp)
{
	struct siw_wqe wqe;
	u32 n;

	for (n = 0; n < qp->attrs.sq_size; n++) {
		if (siw_sqe_fetch(qp, &wqe, true) == -ENOENT)
			break;
		siw_wqe_release(&wqe);
		/* flush errors always complete, signaled or not */
		if (siw_cqe_add(qp->scq, &wqe.sqe, wqe.sqe.opcode, 0,
				IB_WC_WR_FLUSH_ERR, false, 0, qp))
			break;
	}
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_flush_sq);

void siw_qp_flush_orq(struct siw_qp *qp)
{
	struct siw_orq_entry *e;
	unsigned long flags;

	spin_lock_irqsave(&qp->orq_lock, flags);
	while (qp->orq && qp->orq_get != qp->orq_put) {
		e = &qp->orq[qp->orq_get % qp->attrs.ord];
		qp->orq_get++;
		spin_unlock_irqrestore(&qp->orq_lock, flags);
		siw_sq_read_done(qp, &e->wqe, IB_WC_WR_FLUSH_ERR, 0);
		spin_lock_irqsave(&qp->orq_lock, flags);
	}
	qp->irq_get = qp->irq_put;
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	siw_sq_done_drain(qp, true);
}

/**
 * siw_qp_flush_rq - complete what is posted on the RQ with a flush error
 * @qp: the QP, in ERROR
 *
 * Any context but under no ring or CQ lock. Stops at a WQE the RX engine
 * holds (it flushes the rest once done, siw_rx_flush()), after one
 * ring's worth (user space may keep posting garbage), or at a full CQ.
 * An SRQ's WQEs are not the QP's: they stay for the others.
 */
void siw_qp_flush_rq(struct siw_qp *qp)
{
	struct siw_wqe wqe;
	u32 n;
	int rv;

	if (qp->srq)
		return;
	for (n = 0; n < qp->attrs.rq_size; n++) {
		rv = siw_rqe_take(qp, &wqe, true);
		if (rv == -ENOENT || rv == -EBUSY)
			break;
		if (siw_cqe_add(qp->rcq, &wqe.sqe, SIW_OP_RECEIVE, 0,
				IB_WC_WR_FLUSH_ERR, false, 0, qp))
			break;
	}
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_flush_rq);

/**
 * siw_qp_flush - complete the queued work of a QP in ERROR
 * @qp: the QP
 *
 * The receive queue is flushed here; the send side (ORQ, queued
 * completions, SQ) only by the transmitter, which keeps posting order
 * because it alone takes SQEs: it is run for that (siw_tx_run()).
 */
void siw_qp_flush(struct siw_qp *qp)
{
	if (READ_ONCE(qp->attrs.state) != SIW_QP_ERROR)
		return;
	siw_qp_flush_rq(qp);
	siw_qp_wake_tx(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_flush);

/* ------------------------------------------------- observability */

/**
 * siw_fill_res_qp_entry - driver details for `rdma res show qp -dd`
 * @msg: netlink message being built
 * @ibqp: the QP
 *
 * A snapshot without locks (values may be mid-update): where the send
 * queue, the transmitter, the read queues and the socket stand, enough to
 * tell a stalled QP from a busy one.
 */
int siw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct siw_qp *qp = to_siw_qp(ibqp);
	struct siw_sqe *next = NULL;
	struct socket *sock;
	u32 sndbuf = 0, queued = 0, nospace = 0;
	struct nlattr *nest;

	spin_lock_bh(&qp->state_lock);
	sock = qp->sock;
	if (sock && sock->sk) {
		sndbuf = READ_ONCE(sock->sk->sk_sndbuf);
		queued = READ_ONCE(sock->sk->sk_wmem_queued);
		nospace = test_bit(SOCK_NOSPACE, &sock->flags);
	}
	spin_unlock_bh(&qp->state_lock);
	if (qp->sendq)
		next = &qp->sendq[READ_ONCE(qp->sq_get) % qp->attrs.sq_size];

	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "state", READ_ONCE(qp->attrs.state)) ||
	    rdma_nl_put_driver_u32(msg, "sq_get", READ_ONCE(qp->sq_get)) ||
	    rdma_nl_put_driver_u32(msg, "sq_next_valid", next &&
				   (READ_ONCE(next->flags) & SIW_WQE_VALID)) ||
	    rdma_nl_put_driver_u32(msg, "tx_active", READ_ONCE(qp->tx.active)) ||
	    rdma_nl_put_driver_u32(msg, "tx_fpdu_busy",
				   READ_ONCE(qp->tx.busy)) ||
	    rdma_nl_put_driver_u32(msg, "tx_work_pending",
				   work_pending(&qp->tx_work) ||
				   work_pending(&qp->tx_work_near)) ||
	    rdma_nl_put_driver_u32(msg, "orq_out", READ_ONCE(qp->orq_put) -
				   READ_ONCE(qp->reads_done)) ||
	    rdma_nl_put_driver_u32(msg, "irq_out", READ_ONCE(qp->irq_put) -
				   READ_ONCE(qp->irq_get)) ||
	    rdma_nl_put_driver_u32(msg, "cqe_waiting",
				   READ_ONCE(qp->sq_done_put) -
				   READ_ONCE(qp->sq_done_get)) ||
	    rdma_nl_put_driver_u32(msg, "zc_unreleased", siw_zc_started(qp) -
				   siw_zc_released(qp)) ||
	    rdma_nl_put_driver_u32(msg, "rx_state", READ_ONCE(qp->rx.state)) ||
	    rdma_nl_put_driver_u32(msg, "sk_sndbuf", sndbuf) ||
	    rdma_nl_put_driver_u32(msg, "sk_wmem_queued", queued) ||
	    rdma_nl_put_driver_u32(msg, "sk_nospace", nospace)) {
		nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	return 0;
}
