// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: the work queues. The engines take work requests off the SQ, the
 * RQ or SRQ and the ORQ here, checked and with their local memory
 * resolved; a QP in ERROR has them flushed from here into its CQs.
 *
 * Ownership rules that keep the data path lock-light:
 *  - SQ ring: consumed by the TX work under sq_lock; tx.sq_wqe belongs
 *    to the TX work alone.
 *  - RQ/SRQ ring: consumed by the RX parser under rq_lock (srq->lock);
 *    rx.rdmap.rwqe belongs to the RX parser, which runs under the socket
 *    lock.
 *  - ORQ (our reads in flight): pushed by TX, popped by RX, orq_lock; the
 *    Read whose response is arriving is the RX parser's (rx.rdmap.rresp).
 *  - IRQ (peer's reads to answer): pushed by RX, popped by TX, orq_lock.
 * A flush never completes a work request posted after one an engine
 * still holds: the RQ's flushers stop at the RX parser's receive, the
 * send side's at its Read (siw_sq_flush_reads()); siw_cq.c says under
 * which lock each queue's completions are written.
 */
#include <kunit/visibility.h>

#include "siw.h"
#include "siw_trace.h"

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

/*
 * Policy: whether the transmitter keeps the user SQ slot of @wqe VALID
 * while its message is sent (siw_sq_release() lets go of it). libsiw
 * rings the doorbell only if, after making its new SQE VALID, it finds
 * the one before already released; so while the slot is held, posts
 * need no system call and the transmitter finds them when it lets go.
 * Worth it for a stream of small Sends and Writes (a second doorbell
 * with nothing received: a ping-pong receives between its posts and
 * never waits behind a slot). A Read in a stream (another one in
 * flight, or one whose completion the user does not wait for: a
 * ping-pong's is signalled and finds none in flight) is held until its
 * request is framed, as its response can complete it within the socket
 * call that sends the request (siw_tx_fill()); without the unsignalled
 * case, a stream whose round trips each end within the doorbell (both
 * ends on one host) never has a Read in flight at its next post. Not
 * held: a kernel QP's (its posts always kick), a large message's (its
 * posts are better rung: a doorbell then sends as the socket drains).
 */
static bool siw_sqe_hold(struct siw_qp *qp, const struct siw_wqe *wqe,
			 bool orq_busy)
{
	if (!qp->user || !wqe->active)
		return false;
	if (siw_sqe_is_read(&wqe->sqe))
		return orq_busy || !siw_sqe_signalled(qp, &wqe->sqe);
	return READ_ONCE(qp->db_streak) >= SIW_TX_HOLD_DBS &&
	       wqe->bytes <= SIW_TX_STREAM_LEN;
}

/**
 * siw_sqe_take - take the next SQE from the send ring into @wqe
 * @qp: the QP
 * @wqe: private copy to fill
 * @flush: taking it off to flush it: no fence or ORD wait
 *
 * Returns 0 with a valid WQE, -ENOENT if the ring is empty, -EBUSY if
 * the next WQE must wait (read fence or ORD exhausted; it stays in the
 * ring), or -EINVAL for a malformed WQE (taken off the ring; @wqe->status
 * says how to complete it).
 */
static int siw_sqe_take(struct siw_qp *qp, struct siw_wqe *wqe, bool flush)
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
	qp->sq_get++;
	memset(wqe->mr, 0, sizeof(wqe->mr));
	wqe->done = 0;
	wqe->status = siw_sqe_check(qp, wqe);
	wqe->active = wqe->status == IB_WC_SUCCESS;
	if (WARN_ON_ONCE(qp->tx.held))
		siw_sq_release(qp);
	if (!flush && siw_sqe_hold(qp, wqe, orq_busy))
		qp->tx.held = slot;
	else
		smp_store_mb(slot->flags, 0);	/* see siw_sq_release() */
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

static bool siw_srq_limit_check(struct siw_srq *srq)
{
	struct siw_rqe *next;

	if (!srq->armed || !srq->limit)
		return false;
	/* fewer than limit posted if the limit-th next slot is empty */
	next = &srq->queue[(srq->get + srq->limit - 1) % srq->num_rqe];
	if (READ_ONCE(next->flags) & SIW_WQE_VALID)
		return false;
	srq->armed = false;
	return true;
}

/*
 * Raised after srq->lock is dropped: the consumer's handler may query or
 * re-arm the SRQ (ib_query_srq(), ib_modify_srq() take that lock).
 */
static void siw_srq_limit_event(struct siw_srq *srq)
{
	struct ib_event ev = {
		.device = srq->base.device,
		.element.srq = &srq->base,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (srq->base.event_handler)
		srq->base.event_handler(&ev, srq->base.srq_context);
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
	bool limit = false;
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
		limit = siw_srq_limit_check(srq);
	spin_unlock_irqrestore(lock, flags);
	if (limit)
		siw_srq_limit_event(srq);

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
 * siw_wqe_resolve - look up and check the local MRs of a WQE's SGL
 * @qp: the QP
 * @wqe: WQE with a validated SGL
 * @write: local memory is written (receive, read sink)
 *
 * References are held in @wqe->mr until siw_wqe_release().
 * Returns IB_WC_SUCCESS or the completion status for the failure.
 */
static int siw_wqe_resolve(struct siw_qp *qp, struct siw_wqe *wqe,
			   bool write)
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

/* Drop the MR references a WQE's SGL holds; any context. */
void siw_wqe_put_mrs(struct siw_wqe *wqe)
{
	int i;

	for (i = 0; i < SIW_MAX_SGE; i++) {
		if (wqe->mr[i]) {
			siw_mr_put(wqe->mr[i]);
			wqe->mr[i] = NULL;
		}
	}
}

void siw_wqe_release(struct siw_wqe *wqe)
{
	siw_wqe_put_mrs(wqe);
	/* flushers read the RX engine's WQE's flag without its lock */
	WRITE_ONCE(wqe->active, false);
}

/**
 * siw_sq_release - let go of the user SQ slot of the transmitter's message
 * @qp: the QP; the caller is the transmitter
 *
 * Called on every path that ends the message (queued to TCP, completed
 * locally, failed, flushed), before its completion is written: a
 * consumer that reuses slots once they complete never finds one held.
 *
 * The full barrier orders the release before the transmitter looks at
 * the next slot: libsiw makes its SQE VALID, then looks at the slot
 * before. Without it both sides could read the other's old value
 * (store-load reordering), and the new SQE would wait for a doorbell
 * that never comes.
 */
void siw_sq_release(struct siw_qp *qp)
{
	struct siw_sqe *slot = qp->tx.held;

	if (!slot)
		return;
	qp->tx.held = NULL;
	/* the release before any later look at the next slot */
	smp_store_mb(slot->flags, 0);
}
EXPORT_SYMBOL_IF_KUNIT(siw_sq_release);

/**
 * siw_sq_peek - whether the next SQ slot holds a work request
 * @qp: the QP; the caller is the transmitter (sq_get is its own)
 *
 * A hint without the lock: the slot may be taken later for a reason
 * (fence, ORD) or be malformed; siw_sqe_fetch() decides.
 */
bool siw_sq_peek(struct siw_qp *qp)
{
	struct siw_sqe *slot = &qp->sendq[qp->sq_get % qp->attrs.sq_size];

	return READ_ONCE(slot->flags) & SIW_WQE_VALID;
}

/**
 * siw_sqe_fetch - the transmitter takes the next SQE, ready to go out
 * @qp: the QP
 * @wqe: the transmitter's WQE (qp->tx.sq_wqe)
 *
 * The SQE is checked and the local memory of its SGL resolved (a Read
 * writes its sink); a local invalidate or fast register has none.
 *
 * Return: 0, -ENOENT if the ring is empty, -EBUSY if the next SQE must
 * wait (it stays in the ring, siw_sqe_take()), or -EINVAL for an SQE
 * taken off the ring that is malformed or whose memory is not
 * accessible: marked active, the caller completes it with @wqe->status.
 */
int siw_sqe_fetch(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_sqe *sqe = &wqe->sqe;
	int rv;

	rv = siw_sqe_take(qp, wqe, false);
	if (rv == -ENOENT || rv == -EBUSY)
		return rv;
	if (rv) {
		wqe->active = true;
		return -EINVAL;
	}
	if (sqe->opcode == SIW_OP_INVAL_STAG || sqe->opcode == SIW_OP_REG_MR)
		return 0;
	rv = siw_wqe_resolve(qp, wqe, siw_sqe_is_read(sqe));
	if (rv != IB_WC_SUCCESS) {
		wqe->status = rv;
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_sqe_fetch);

/**
 * siw_rqe_fetch - the RX engine takes the next receive WQE
 * @qp: the QP
 * @wqe: the RX engine's WQE (qp->rx.rdmap.rwqe), marked active even when
 *	malformed or not accessible: the caller completes it either way
 *
 * The RQE is checked and the local memory of its SGL resolved for
 * writing.
 *
 * Return: 0, as siw_rqe_take() (-ENOENT, -ESHUTDOWN, -EINVAL), or
 * -EACCES if its memory is not accessible (@wqe->status says how to
 * complete it).
 */
int siw_rqe_fetch(struct siw_qp *qp, struct siw_wqe *wqe)
{
	int rv;

	rv = siw_rqe_take(qp, wqe, false);
	if (rv)
		return rv;
	rv = siw_wqe_resolve(qp, wqe, true);
	if (rv != IB_WC_SUCCESS) {
		wqe->status = rv;
		return -EACCES;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_rqe_fetch);

/* ------------------------------------------------------------- ORQ */

/* The oldest outstanding Read into @w, if any (and if before @msn). */
static bool siw_orq_take(struct siw_qp *qp, struct siw_wqe *w, bool limit,
			 u32 msn)
{
	struct siw_orq_entry *e;
	bool got = false;

	spin_lock_bh(&qp->orq_lock);
	/* in ERROR the ORQ is the flush's (siw_sq_flush_reads()) */
	if (qp->orq && qp->orq_get != qp->orq_put &&
	    READ_ONCE(qp->attrs.state) != SIW_QP_ERROR) {
		e = siw_orq_slot(qp, qp->orq_get);
		if (!limit || (s32)(e->wqe.rreq_msn - msn) < 0) {
			memcpy(w, &e->wqe, sizeof(*w));
			/* held from here, as the flush sees it */
			w->active = true;
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
EXPORT_SYMBOL_IF_KUNIT(siw_orq_pop);

/* ----------------------------------------------------------- flush */

/**
 * siw_qp_flush_sq - complete what is queued on the SQ with a flush error
 * @qp: the QP, in ERROR; caller is the transmitter (tx_mutex held) or the
 *	QP's teardown, after siw_sq_flush_reads() found no Read held and
 *	the transmitter's own WQE was completed: nothing earlier is left
 *
 * One ring's worth at most: user space can set VALID again behind us for
 * as long as it likes, and a full CQ ends the pass (the QP already went
 * to error for the completion it lost). Written under orq_lock, as every
 * send completion is.
 */
void siw_qp_flush_sq(struct siw_qp *qp)
{
	struct siw_wqe wqe;
	unsigned long flags;
	u32 n;
	int rv;

	for (n = 0; n < qp->attrs.sq_size; n++) {
		if (siw_sqe_take(qp, &wqe, true) == -ENOENT)
			break;
		siw_wqe_release(&wqe);
		/* flush errors always complete, signaled or not */
		spin_lock_irqsave(&qp->orq_lock, flags);
		rv = siw_cqe_put(qp->scq, wqe.sqe.id, wqe.sqe.opcode, 0,
				 IB_WC_WR_FLUSH_ERR, false, 0, qp);
		spin_unlock_irqrestore(&qp->orq_lock, flags);
		siw_cqe_after(qp->scq, qp, rv);
		if (rv < 0)
			break;
	}
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_flush_sq);

/**
 * siw_qp_flush_rq - complete what is posted on the RQ with a flush error
 * @qp: the QP, in ERROR
 *
 * Any context but under no ring or CQ lock. Modify, the CM, the flush
 * work and teardown may flush at once: each entry is taken and its CQE
 * written in one rq_lock section, so they complete in ring order. Stops
 * at a WQE the RX engine holds (it flushes the rest once done,
 * siw_rx_flush()), after one ring's worth (user space may keep posting
 * garbage), or at a full CQ. An SRQ's WQEs are not the QP's: they stay
 * for the others.
 */
void siw_qp_flush_rq(struct siw_qp *qp)
{
	struct siw_rqe *slot;
	unsigned long flags;
	u64 id;
	u32 n;
	int rv = 0;

	if (qp->srq || !qp->attrs.rq_size)
		return;
	for (n = 0; n < qp->attrs.rq_size && rv >= 0; n++) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		slot = &qp->recvq[qp->rq_get % qp->attrs.rq_size];
		if (READ_ONCE(qp->rx.rdmap.rwqe.active) ||
		    /* acquire: the RQE was written before VALID */
		    !(smp_load_acquire(&slot->flags) & SIW_WQE_VALID)) {
			spin_unlock_irqrestore(&qp->rq_lock, flags);
			break;
		}
		id = READ_ONCE(slot->id);
		WRITE_ONCE(slot->flags, 0);
		qp->rq_get++;
		rv = siw_cqe_put(qp->rcq, id, SIW_OP_RECEIVE, 0,
				 IB_WC_WR_FLUSH_ERR, false, 0, qp);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		siw_cqe_after(qp->rcq, qp, rv);
	}
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_flush_rq);
