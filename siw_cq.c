// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: completions. A finished work request becomes a CQE here; a CQ
 * without room stops the QP (siw_cq_overflow()).
 *
 * Completion order is a verbs guarantee, so each queue has one lock
 * under which its completions are both ordered and written:
 *  - send queue: orq_lock. A completion due behind one of our Reads
 *    still outstanding, or behind a zero-copy message TCP has not
 *    released, waits in qp->sq_done; whoever makes it due (the Read's
 *    end, a release, the transmitter) writes it in the same critical
 *    section that decided it.
 *  - receive queue: the RX engine writes the completion of the one WQE
 *    it holds; flushers take and complete the others one at a time
 *    under rq_lock, never past the RX engine's WQE (siw_qp_flush_rq()).
 * cq->lock nests inside both; the consumer's handler and the overflow's
 * events run after every siw lock is dropped (siw_cqe_after()).
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
 * siw_cqe_put - write one completion, under the lock that orders it
 * @cq: completion queue
 * @id: the work request's id
 * @opcode: enum siw_opcode to report
 * @bytes: byte count
 * @status: completion status
 * @solicited: completion of a solicited receive
 * @inval_stag: STag invalidated by the received message, 0 if none
 * @qp: QP the work request belongs to
 *
 * An entry still owned by the consumer is never overwritten. What the
 * write leaves to do, the caller hands to siw_cqe_after() once it has
 * dropped its locks.
 *
 * Return: SIW_CQE_NOTIFY if the consumer is to be called, 0, or -ENOSPC
 * if the CQ is full (the completion is lost: the QP must stop).
 */
int siw_cqe_put(struct siw_cq *cq, u64 id, u8 opcode, u32 bytes,
		enum ib_wc_status status, bool solicited, u32 inval_stag,
		struct siw_qp *qp)
{
	struct siw_cqe *cqe;
	unsigned long flags;
	int rv = 0;
	u32 arm;

	spin_lock_irqsave(&cq->lock, flags);
	cqe = siw_cq_slot(cq, cq->put);
	if (READ_ONCE(cqe->flags) & SIW_WQE_VALID) {
		spin_unlock_irqrestore(&cq->lock, flags);
		return -ENOSPC;
	}
	cqe->id = id;
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
	trace_siw_cqe(cq, qp, id, opcode, bytes, status);

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
		rv = SIW_CQE_NOTIFY;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return rv;
}
EXPORT_SYMBOL_IF_KUNIT(siw_cqe_put);

/* Two outcomes of siw_cqe_put() on one CQ as one: a loss wins. */
static int siw_cqe_note(int acc, int rv)
{
	return acc < 0 || rv < 0 ? -ENOSPC : acc | rv;
}

/**
 * siw_cqe_after - act on what siw_cqe_put() returned, without siw locks
 * @cq: the CQ written
 * @qp: the QP whose completion it was
 * @note: siw_cqe_put()'s return (or several, siw_cqe_note())
 */
void siw_cqe_after(struct siw_cq *cq, struct siw_qp *qp, int note)
{
	if (note < 0)
		siw_cq_overflow(cq, qp);
	else if (note && cq->base.comp_handler)
		cq->base.comp_handler(&cq->base, cq->base.cq_context);
}

/**
 * siw_recv_complete - the RX engine completes the receive WQE it holds
 * @qp: the QP
 * @wqe: the RX engine's WQE; its MR references are dropped and it is
 *	no longer held, so a flusher may go on behind it
 * @status: completion status
 * @bytes: byte count
 * @inval_stag: STag the message invalidated, 0 if none
 * @solicited: a solicited Send
 */
void siw_recv_complete(struct siw_qp *qp, struct siw_wqe *wqe,
		       enum ib_wc_status status, u32 bytes, u32 inval_stag,
		       bool solicited)
{
	int rv = siw_cqe_put(qp->rcq, wqe->sqe.id, SIW_OP_RECEIVE, bytes,
			     status, solicited, inval_stag, qp);

	siw_cqe_after(qp->rcq, qp, rv);
	/* after the CQE: a flusher seeing it released writes behind it */
	siw_wqe_release(wqe);
}
EXPORT_SYMBOL_IF_KUNIT(siw_recv_complete);

/* ------------------------------------------- send queue completions */

static int siw_sq_cqe(struct siw_qp *qp, const struct siw_sq_done *d)
{
	lockdep_assert_held(&qp->orq_lock);
	return siw_cqe_put(qp->scq, d->id, d->opcode, d->bytes, d->status,
			   false, 0, qp);
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
 * Write the queued completions that are due, oldest first (@flush: all
 * of them, with a flush error), in the caller's orq_lock section: the
 * order decided there is the order written. Stops at a full CQ.
 */
static int siw_sq_done_drain(struct siw_qp *qp, bool flush)
{
	struct siw_sq_done *d;
	int note = 0, rv;

	lockdep_assert_held(&qp->orq_lock);
	while (qp->sq_done && qp->sq_done_get != qp->sq_done_put) {
		d = &qp->sq_done[qp->sq_done_get % qp->sq_done_size];
		if (!flush && !siw_sq_done_due(qp, d))
			break;
		qp->sq_done_get++;
		if (flush)
			d->status = IB_WC_WR_FLUSH_ERR;
		if (!d->report && !flush)
			continue;
		rv = siw_sq_cqe(qp, d);
		note = siw_cqe_note(note, rv);
		if (rv < 0)
			break;
	}
	return note;
}

static void siw_sq_drain(struct siw_qp *qp, bool flush)
{
	unsigned long flags;
	int note;

	spin_lock_irqsave(&qp->orq_lock, flags);
	note = siw_sq_done_drain(qp, flush);
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	siw_cqe_after(qp->scq, qp, note);
}

/* TX work: report what waited for zero-copy releases. */
void siw_sq_done_report(struct siw_qp *qp)
{
	siw_sq_drain(qp, false);
}

/* Everything still queued completes with a flush error. */
void siw_sq_done_flush(struct siw_qp *qp)
{
	siw_sq_drain(qp, true);
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
	int note;

	siw_wqe_release(wqe);
	if (!signal)
		return;

	/* covers this message when it went zero-copy */
	d.zc_seq = siw_zc_started(qp);
	spin_lock_irqsave(&qp->orq_lock, flags);
	if (qp->sq_done && siw_sq_done_waiting(qp, d.zc_seq)) {
		d.read_seq = qp->orq_put;
		qp->sq_done[qp->sq_done_put++ % qp->sq_done_size] = d;
		note = siw_sq_done_drain(qp, false);	/* it may be due */
	} else {
		note = siw_sq_cqe(qp, &d);
	}
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	siw_cqe_after(qp->scq, qp, note);
}
EXPORT_SYMBOL_IF_KUNIT(siw_sq_complete);

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

/*
 * One of our Reads ended: its completion is written, or filled into its
 * queued place, and what waited behind it follows, all under orq_lock.
 */
static int siw_sq_read_end(struct siw_qp *qp, struct siw_wqe *wqe,
			   enum ib_wc_status status, u32 bytes)
{
	bool report = siw_sqe_signalled(qp, &wqe->sqe) ||
		      status != IB_WC_SUCCESS;
	struct siw_sq_done d = {
		.id = wqe->sqe.id,
		.opcode = wqe->sqe.opcode,
		.status = status,
		.bytes = bytes,
		.report = report,
	};
	int note = 0;

	lockdep_assert_held(&qp->orq_lock);
	if (wqe->queued && qp->sq_done) {
		/* its place keeps what it is due behind (read_seq, zc_seq) */
		struct siw_sq_done *q =
			&qp->sq_done[wqe->done_slot % qp->sq_done_size];

		q->status = d.status;
		q->bytes = d.bytes;
		q->report = d.report;
	} else if (report) {
		note = siw_sq_cqe(qp, &d);
	}
	wqe->queued = false;
	/* the receiver lets go of it here: a flush may go on behind it */
	WRITE_ONCE(wqe->active, false);
	qp->reads_done++;
	return siw_cqe_note(note, siw_sq_done_drain(qp, false));
}

/**
 * siw_sq_read_done - one of our Reads completed (or was flushed)
 * @qp: the QP
 * @wqe: the Read work request (its MR references are dropped here)
 * @status: completion status
 * @bytes: byte count
 *
 * In ERROR the transmitter's flush may be waiting for this Read, the one
 * the receiver held (siw_sq_flush_reads()): it is run again.
 */
void siw_sq_read_done(struct siw_qp *qp, struct siw_wqe *wqe,
		      enum ib_wc_status status, u32 bytes)
{
	unsigned long flags;
	int note;

	siw_wqe_put_mrs(wqe);
	spin_lock_irqsave(&qp->orq_lock, flags);
	note = siw_sq_read_end(qp, wqe, status, bytes);
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	siw_cqe_after(qp->scq, qp, note);
	if (READ_ONCE(qp->attrs.state) == SIW_QP_ERROR)
		siw_qp_schedule_tx(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_sq_read_done);

/**
 * siw_sq_flush_reads - flush our Reads and the completions queued behind
 * them, for the transmitter of a QP in ERROR
 * @qp: the QP
 *
 * Nothing posted after a Read may complete before it. While the receiver
 * holds one (its response is arriving, rx.rdmap.rresp), nothing is
 * flushed: the receiver completes it (it stops placing in ERROR, and
 * the connection's close flushes it, siw_rdmap_rx_flush()), and its end
 * runs the transmitter again (siw_sq_read_done()). The receiver takes no
 * Read off the ORQ once the QP is in ERROR (siw_orq_pop()), so the look
 * and the flush need one critical section only.
 *
 * Return: 0, or -EBUSY while the receiver holds a Read.
 */
int siw_sq_flush_reads(struct siw_qp *qp)
{
	struct siw_orq_entry *e;
	unsigned long flags;
	int note = 0;

	spin_lock_irqsave(&qp->orq_lock, flags);
	if (READ_ONCE(qp->rx.rdmap.rresp.active)) {
		spin_unlock_irqrestore(&qp->orq_lock, flags);
		return -EBUSY;
	}
	/* all of them, a full CQ or not: each holds MR references */
	while (qp->orq && qp->orq_get != qp->orq_put) {
		e = siw_orq_slot(qp, qp->orq_get++);
		/* safe in any context (siw_mr_put()) */
		siw_wqe_put_mrs(&e->wqe);
		note = siw_cqe_note(note, siw_sq_read_end(qp, &e->wqe,
							  IB_WC_WR_FLUSH_ERR,
							  0));
	}
	qp->irq_get = qp->irq_put;
	note = siw_cqe_note(note, siw_sq_done_drain(qp, true));
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	siw_cqe_after(qp->scq, qp, note);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_sq_flush_reads);
