// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: completions. A finished work request becomes a CQE here, with
 * the consumer's notification (siw_cqe_add()); a CQ without room stops
 * the QP (siw_cq_overflow()). Send queue completions keep posting order:
 * one due behind our Reads still outstanding or behind a zero-copy
 * message TCP has not released yet waits in qp->sq_done.
 */
#include <kunit/visibility.h>

#include "siw.h"
#include "siw_trace.h"

/* --------------------------------------------------------------- CQE */

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
int siw_cqe_add(struct siw_cq *cq, const struct siw_sqe *sqe, u8 opcode,
		u32 bytes, enum ib_wc_status status, bool solicited,
		u32 inval_stag, struct siw_qp *qp)
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

void siw_wqe_complete(struct siw_qp *qp, struct siw_wqe *wqe,
		      enum ib_wc_status status, bool recv, u32 bytes,
		      u32 inval_stag, bool solicited)
{
	struct siw_sqe *sqe = &wqe->sqe;

	if (recv) {
		siw_cqe_add(qp->rcq, sqe, SIW_OP_RECEIVE, bytes, status,
			    solicited, inval_stag, qp);
	} else if (siw_sqe_signalled(qp, sqe) || status != IB_WC_SUCCESS) {
		siw_cqe_add(qp->scq, sqe, sqe->opcode, bytes, status, false,
			    0, qp);
	}
	siw_wqe_release(wqe);
}
EXPORT_SYMBOL_IF_KUNIT(siw_wqe_complete);

/* ------------------------------------------- send queue completions */

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
	bool signal = siw_sqe_signalled(qp, &wqe->sqe) ||
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
		d->report = siw_sqe_signalled(qp, &wqe->sqe) ||
			    status != IB_WC_SUCCESS;
	}
	wqe->queued = false;
	qp->reads_done++;
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	siw_sq_done_drain(qp, false);
}
