// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: RDMAP (RFC 5040). The opcode table every layer works from; which
 * message a work request, an inbound Read Request, an MPA v2 ready-to-
 * receive or a Terminate becomes on transmit; the semantics of each
 * received message; and Terminate.
 */
#include <linux/slab.h>
#include <net/tcp.h>
#include <kunit/visibility.h>

#include "siw.h"
#include "siw_trace.h"

static int siw_rx_write(struct siw_qp *qp, struct siw_rx_target *t);
static int siw_rx_rreq(struct siw_qp *qp, struct siw_rx_target *t);
static int siw_rx_rresp(struct siw_qp *qp, struct siw_rx_target *t);
static int siw_rx_send(struct siw_qp *qp, struct siw_rx_target *t);
static int siw_rx_term_hdr(struct siw_qp *qp, struct siw_rx_target *t);
static int siw_rx_write_done(struct siw_qp *qp);
static int siw_rx_rreq_done(struct siw_qp *qp);
static int siw_rx_rresp_done(struct siw_qp *qp);
static int siw_rx_send_done(struct siw_qp *qp);
static int siw_rx_terminate(struct siw_qp *qp);

#define SIW_HDR_TAGGED		(sizeof(struct iwarp_tagged_hdr) - MPA_HDR_SIZE)
#define SIW_HDR_UNTAGGED	(sizeof(struct iwarp_untagged_hdr) - MPA_HDR_SIZE)

#define SIW_OP_SEND_ENTRY(nm, code, se, inv)				\
	{ .name = nm, .opcode = code, .qn = DDP_QN_SEND, .hdr_len = SIW_HDR_UNTAGGED,	\
	  .solicited = se, .invalidates = inv, .rx_hdr = siw_rx_send,	\
	  .rx_done = siw_rx_send_done }

/* RFC 5040 section 4 and 5.1, one entry per RDMAP opcode */
const struct siw_op siw_op_table[RDMAP_NUM_OPCODES] = {
	[RDMAP_WRITE] = {
		.name = "Write", .opcode = RDMAP_WRITE, .tagged = true, .hdr_len = SIW_HDR_TAGGED,
		.rx_hdr = siw_rx_write, .rx_done = siw_rx_write_done,
	},
	[RDMAP_READ_REQ] = {
		.name = "Read Request", .opcode = RDMAP_READ_REQ, .qn = DDP_QN_READ_REQ,
		.hdr_len = sizeof(struct iwarp_read_req) - MPA_HDR_SIZE,
		.rx_hdr = siw_rx_rreq, .rx_done = siw_rx_rreq_done,
	},
	[RDMAP_READ_RESP] = {
		.name = "Read Response", .opcode = RDMAP_READ_RESP, .tagged = true,
		.hdr_len = SIW_HDR_TAGGED,
		.rx_hdr = siw_rx_rresp, .rx_done = siw_rx_rresp_done,
	},
	[RDMAP_SEND] = SIW_OP_SEND_ENTRY("Send", RDMAP_SEND, false, false),
	[RDMAP_SEND_INVAL] = SIW_OP_SEND_ENTRY("Send with Invalidate",
					       RDMAP_SEND_INVAL, false, true),
	[RDMAP_SEND_SE] = SIW_OP_SEND_ENTRY("Send with SE", RDMAP_SEND_SE,
					    true, false),
	[RDMAP_SEND_SE_INVAL] = SIW_OP_SEND_ENTRY("Send with SE and Invalidate",
						  RDMAP_SEND_SE_INVAL, true,
						  true),
	[RDMAP_TERMINATE] = {
		.name = "Terminate", .opcode = RDMAP_TERMINATE, .qn = DDP_QN_TERMINATE,
		.hdr_len = sizeof(struct iwarp_terminate) - MPA_HDR_SIZE,
		.var_len = true,
		.rx_hdr = siw_rx_term_hdr, .rx_done = siw_rx_terminate,
	},
};
EXPORT_SYMBOL_IF_KUNIT(siw_op_table);

static const struct siw_op *siw_op(unsigned int opcode)
{
	return &siw_op_table[opcode];
}

/* The table entry of a received header, if its opcode and T bit agree */
const struct siw_op *siw_rx_op_of(const struct iwarp_ctrl *ctrl)
{
	unsigned int opcode = iwarp_opcode(ctrl);

	if (opcode >= RDMAP_NUM_OPCODES ||
	    siw_op(opcode)->tagged != iwarp_tagged(ctrl))
		return NULL;
	return siw_op(opcode);
}
EXPORT_SYMBOL_IF_KUNIT(siw_rx_op_of);

/**
 * siw_rdmap_rx_check - RDMAP fields of a received header
 * @e: receive error to fill
 * @ctrl: the header's control bits
 * @op: set to the opcode's table entry
 *
 * Return: 0, or -EPROTO (@e filled) for a wrong RDMAP version, an
 * unknown opcode or one that does not match the DDP T bit.
 */
int siw_rdmap_rx_check(struct siw_rx_err *e, const struct iwarp_ctrl *ctrl,
		       const struct siw_op **op)
{
	if (iwarp_rdmap_version(ctrl) != RDMAP_VERSION)
		return siw_rx_error(e, TERM_LAYER_RDMAP,
				    TERM_RDMAP_ETYPE_REMOTE_OP,
				    TERM_RDMAP_VERSION, "bad RDMAP version");
	*op = siw_rx_op_of(ctrl);
	if (!*op)
		return siw_rx_error(e, TERM_LAYER_RDMAP,
				    TERM_RDMAP_ETYPE_REMOTE_OP,
				    TERM_RDMAP_OPCODE, "bad RDMAP opcode");
	return 0;
}

/* The Send opcode with these semantics */
static const struct siw_op *siw_send_op(bool solicited, bool invalidates)
{
	unsigned int i;

	for (i = 0; i < RDMAP_NUM_OPCODES; i++) {
		const struct siw_op *op = siw_op(i);

		if (!op->tagged && op->qn == DDP_QN_SEND &&
		    op->solicited == solicited && op->invalidates == invalidates)
			return op;
	}
	return siw_op(RDMAP_SEND);
}

/*
 * Terminate codes for a failed MR check (RFC 5040 7.2, RFC 5041 7.2):
 * tagged placement faults are reported by DDP, except rights, which
 * are RDMAP's; faults of a Read Request's source are all RDMAP's.
 */
#define SIW_TERM_AT_RDMAP 0xff

static const struct {
	const char *why;
	u8 rdmap;
	u8 ddp;
} siw_acc_term[] = {
	[SIW_ACC_STAG] = { "invalid STag", TERM_RDMAP_INV_STAG,
			   TERM_DDP_T_INV_STAG },
	[SIW_ACC_PD] = { "STag of another protection domain",
			 TERM_RDMAP_STAG_PD, TERM_DDP_T_STAG_NOT_ASSOC },
	[SIW_ACC_RIGHTS] = { "access rights violation", TERM_RDMAP_ACCESS,
			     SIW_TERM_AT_RDMAP },
	[SIW_ACC_BOUNDS] = { "base or bounds violation",
			     TERM_RDMAP_BASE_BOUNDS, TERM_DDP_T_BASE_BOUNDS },
	[SIW_ACC_WRAP] = { "tagged offset wraps", TERM_RDMAP_TO_WRAP,
			   TERM_DDP_T_TO_WRAP },
};

/* --------------------------------------------------------- Terminate */

/**
 * siw_term_set - fatal error: send a Terminate, then close
 * @qp: the QP
 * @layer: TERM_LAYER_*
 * @etype: error type of that layer
 * @ecode: error code
 * @hdr: offending FPDU's header as received (with MPA length), or NULL
 * @hdr_len: bytes at @hdr
 *
 * Any context. Only the first error of a QP is reported.
 */
void siw_term_set(struct siw_qp *qp, unsigned int layer, unsigned int etype,
		  unsigned int ecode, const void *hdr, unsigned int hdr_len)
{
	unsigned long flags;
	bool first = false;

	spin_lock_irqsave(&qp->state_lock, flags);
	if (qp->attrs.state == SIW_QP_RTS ||
	    qp->attrs.state == SIW_QP_CLOSING) {
		trace_siw_qp_state(qp, qp->attrs.state, SIW_QP_TERMINATE, _RET_IP_);
		qp->attrs.state = SIW_QP_TERMINATE;
		qp->term_ctrl = term_mk_ctrl(layer, etype, ecode);
		hdr_len = hdr && hdr_len > MPA_HDR_SIZE ? hdr_len - MPA_HDR_SIZE :
							  0;
		hdr_len = min_t(unsigned int, hdr_len, TERM_MAX_HDR_COPY);
		if (hdr_len && layer != TERM_LAYER_LLP) {
			memcpy(qp->term_hdr, (const u8 *)hdr + MPA_HDR_SIZE,
			       hdr_len);
			qp->term_ctrl |= TERM_FLAG_D | TERM_FLAG_R;
		} else {
			hdr_len = 0;
		}
		qp->term_hdr_len = hdr_len;
		qp->term_pending = true;
		first = true;
	}
	spin_unlock_irqrestore(&qp->state_lock, flags);

	if (!first)
		return;
	siw_dbg(qp->sdev, "QP %u: terminate layer %u etype %u code 0x%x\n",
		qp_id(qp), layer, etype, ecode);
	if (layer == TERM_LAYER_RDMAP && etype == TERM_RDMAP_ETYPE_REMOTE_PROT)
		siw_qp_event(qp, IB_EVENT_QP_ACCESS_ERR);
	else
		siw_qp_event(qp, IB_EVENT_QP_FATAL);
	siw_qp_schedule_tx(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_term_set);

/* ----------------------------------------------------------- transmit */

static void siw_rdmap_tx_msg(struct siw_rdmap_tx *m, unsigned int opcode,
			     struct siw_wqe *wqe, u32 len)
{
	m->op = siw_op(opcode);
	m->wqe = wqe;
	m->len = len;
	m->stag = 0;
	m->to = 0;
	m->inval = 0;
	m->body_len = 0;
}

/* Our Read: queued for its response, then the request goes out. */
static void siw_rdmap_tx_rreq(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_rdmap_tx *m = &qp->tx.rdmap;
	struct iwarp_read_req_body *b = (void *)m->body;
	struct siw_orq_entry *e;

	/* MSNs go up by one per message on the queue: DDP numbers it next */
	wqe->rreq_msn = qp->tx.ddp.msn_last[DDP_QN_READ_REQ] + 1;
	/* the ORQ entry owns the WQE (and its MR refs) from here */
	spin_lock_bh(&qp->orq_lock);
	e = siw_orq_slot(qp, qp->orq_put);
	siw_sq_read_issue(qp, wqe);
	memcpy(&e->wqe, wqe, sizeof(*wqe));
	qp->orq_put++;
	spin_unlock_bh(&qp->orq_lock);
	memset(wqe->mr, 0, sizeof(wqe->mr));
	wqe->active = false;

	siw_rdmap_tx_msg(m, RDMAP_READ_REQ, NULL, 0);
	b->sink_stag = cpu_to_be32(wqe->sqe.num_sge ? wqe->sqe.sge[0].lkey : 0);
	b->sink_to = cpu_to_be64(wqe->sqe.num_sge ? wqe->sqe.sge[0].laddr : 0);
	b->size = cpu_to_be32(wqe->bytes);
	b->src_stag = cpu_to_be32(wqe->sqe.rkey);
	b->src_to = cpu_to_be64(wqe->sqe.raddr);
	m->body_len = sizeof(*b);
}

/**
 * siw_rdmap_tx_start - the message of a send queue work request
 * @qp: the QP
 * @wqe: the work request, validated and its local MRs resolved; a Read
 *	moves to the ORQ (it is inactive afterwards)
 *
 * Return: 0.
 */
int siw_rdmap_tx_start(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_rdmap_tx *m = &qp->tx.rdmap;
	struct siw_sqe *sqe = &wqe->sqe;
	const struct siw_op *op;

	switch (sqe->opcode) {
	case SIW_OP_READ:
	case SIW_OP_READ_LOCAL_INV:
		siw_rdmap_tx_rreq(qp, wqe);
		return 0;
	case SIW_OP_WRITE:
		siw_rdmap_tx_msg(m, RDMAP_WRITE, wqe, wqe->bytes);
		m->stag = sqe->rkey;
		m->to = sqe->raddr;
		return 0;
	default:
		op = siw_send_op(sqe->flags & SIW_WQE_SOLICITED,
				 sqe->opcode == SIW_OP_SEND_REMOTE_INV);
		siw_rdmap_tx_msg(m, op->opcode, wqe, wqe->bytes);
		if (op->invalidates)
			m->inval = sqe->rkey;
		return 0;
	}
}
EXPORT_SYMBOL_IF_KUNIT(siw_rdmap_tx_start);

/**
 * siw_rdmap_tx_rresp - the Read Response for the oldest inbound Read
 * @qp: the QP
 *
 * The source is checked again now: the STag may have changed since the
 * request arrived. Return: 0, -ENOENT if no Read waits, or -EPROTO when
 * the source is not accessible (a Terminate is scheduled).
 */
int siw_rdmap_tx_rresp(struct siw_qp *qp)
{
	struct siw_rdmap_tx *m = &qp->tx.rdmap;
	struct siw_irq_entry e;
	struct siw_mr *mr = NULL;
	int err;

	/* asked before every message: an empty queue needs no lock */
	if (!siw_irq_waiting(qp))
		return -ENOENT;
	spin_lock_bh(&qp->orq_lock);
	if (qp->irq_get == qp->irq_put) {
		spin_unlock_bh(&qp->orq_lock);
		return -ENOENT;
	}
	e = *siw_irq_slot(qp, qp->irq_get);
	qp->irq_get++;
	spin_unlock_bh(&qp->orq_lock);

	memset(&m->rresp, 0, sizeof(m->rresp));
	if (e.size) {
		mr = siw_mr_lookup(qp->sdev, e.src_stag);
		err = mr ? siw_mr_check(mr, e.src_stag, qp->pd,
					IB_ACCESS_REMOTE_READ, e.src_to,
					e.size, true, &m->rresp.mr_gen[0]) :
			   SIW_ACC_STAG;
		if (err) {
			siw_mr_put(mr);
			siw_term_set(qp, TERM_LAYER_RDMAP,
				     TERM_RDMAP_ETYPE_REMOTE_PROT,
				     siw_acc_term[err].rdmap, NULL, 0);
			return -EPROTO;
		}
		m->rresp.sqe.num_sge = 1;
		m->rresp.sqe.sge[0].laddr = e.src_to;
		m->rresp.sqe.sge[0].length = e.size;
		m->rresp.sqe.sge[0].lkey = e.src_stag;
		m->rresp.mr[0] = mr;
	}
	m->rresp.bytes = e.size;
	m->rresp.active = true;
	siw_rdmap_tx_msg(m, RDMAP_READ_RESP, &m->rresp, e.size);
	m->stag = e.sink_stag;
	m->to = e.sink_to;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_rdmap_tx_rresp);

/* Zero-length message that tells an MPA v2 responder we are ready. */
void siw_rdmap_tx_rtr(struct siw_qp *qp)
{
	struct siw_rdmap_tx *m = &qp->tx.rdmap;

	qp->rtr_pending = false;
	switch (qp->rtr_send) {
	case RDMAP_READ_REQ:
		siw_rdmap_tx_msg(m, RDMAP_READ_REQ, NULL, 0);
		memset(m->body, 0, sizeof(struct iwarp_read_req_body));
		m->body_len = sizeof(struct iwarp_read_req_body);
		qp->rx.rdmap.rtr_rresp = true;
		break;
	case RDMAP_SEND:
		siw_rdmap_tx_msg(m, RDMAP_SEND, NULL, 0);
		break;
	default:
		siw_rdmap_tx_msg(m, RDMAP_WRITE, NULL, 0);
		break;
	}
}

/* The Terminate siw_term_set() asked for. */
void siw_rdmap_tx_term(struct siw_qp *qp)
{
	struct siw_rdmap_tx *m = &qp->tx.rdmap;
	__be32 ctrl = cpu_to_be32(qp->term_ctrl);

	qp->term_pending = false;
	siw_rdmap_tx_msg(m, RDMAP_TERMINATE, NULL, 0);
	memcpy(m->body, &ctrl, sizeof(ctrl));
	memcpy(m->body + sizeof(ctrl), qp->term_hdr, qp->term_hdr_len);
	m->body_len = sizeof(ctrl) + qp->term_hdr_len;
}

/* The message is queued to TCP: drop what its source held. */
void siw_rdmap_tx_done(struct siw_qp *qp)
{
	struct siw_rdmap_tx *m = &qp->tx.rdmap;

	if (m->wqe == &m->rresp)
		siw_wqe_release(&m->rresp);
	m->wqe = NULL;
}

/* Also a Read Response given up for a Terminate lets go of its MR. */
void siw_rdmap_tx_flush(struct siw_qp *qp)
{
	siw_wqe_release(&qp->tx.rdmap.rresp);
	qp->tx.rdmap.wqe = NULL;
}

/* ------------------------------------------------------------ receive */

static int siw_rx_access_err(struct siw_qp *qp, int err, bool tagged)
{
	struct siw_rx_err *e = &qp->rx.err;

	if (err <= SIW_ACC_OK || err >= ARRAY_SIZE(siw_acc_term))
		err = SIW_ACC_BOUNDS;
	if (tagged && siw_acc_term[err].ddp != SIW_TERM_AT_RDMAP)
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_TAGGED,
				    siw_acc_term[err].ddp, siw_acc_term[err].why);
	return siw_rx_error(e, TERM_LAYER_RDMAP, TERM_RDMAP_ETYPE_REMOTE_PROT,
			    siw_acc_term[err].rdmap, siw_acc_term[err].why);
}

static void siw_rx_release_hold(struct siw_qp *qp)
{
	if (READ_ONCE(qp->tx_hold)) {
		WRITE_ONCE(qp->tx_hold, false);
		siw_qp_schedule_tx(qp);
	}
}

static int siw_rx_write(struct siw_qp *qp, struct siw_rx_target *t)
{
	struct iwarp_tagged_hdr *h = (void *)qp->rx.hdr;
	u32 stag = be32_to_cpu(h->stag);
	u64 to = be64_to_cpu(h->to);
	struct siw_mr *mr;
	int err;

	if (!qp->rx.fpdu_payload) {
		/* zero-length Write: nothing placed (also MPA v2 RTR) */
		siw_rx_release_hold(qp);
		return 0;
	}
	/* the QP must allow it as well as the MR (siw(7), "Access") */
	if (!(READ_ONCE(qp->attrs.access) & IB_ACCESS_REMOTE_WRITE))
		return siw_rx_access_err(qp, SIW_ACC_RIGHTS, true);
	mr = siw_mr_lookup(qp->sdev, stag);
	if (!mr)
		return siw_rx_access_err(qp, SIW_ACC_STAG, true);
	err = siw_mr_check(mr, stag, qp->pd, IB_ACCESS_REMOTE_WRITE, to,
			   qp->rx.fpdu_payload, true, &t->gen);
	if (err) {
		siw_mr_put(mr);
		return siw_rx_access_err(qp, err, true);
	}
	t->mr = mr;
	t->va = to;
	return 0;
}

static int siw_rx_write_done(struct siw_qp *qp)
{
	return 0;
}

static int siw_rx_rresp(struct siw_qp *qp, struct siw_rx_target *t)
{
	struct siw_rdmap_rx *r = &qp->rx.rdmap;
	struct iwarp_tagged_hdr *h = (void *)qp->rx.hdr;
	struct siw_wqe *w = &r->rresp;
	u32 len = qp->rx.fpdu_payload;
	u32 stag = be32_to_cpu(h->stag);
	u64 to = be64_to_cpu(h->to);
	u32 sink_stag;
	u64 sink_to;

	if (r->rtr_rresp && !len && !w->active) {
		/* answer to our zero-length RTR Read */
		r->rtr_rresp = false;
		return 0;
	}
	if (!w->active) {
		if (!siw_orq_pop(qp, w))
			return siw_rx_error(&qp->rx.err, TERM_LAYER_RDMAP,
					    TERM_RDMAP_ETYPE_REMOTE_OP,
					    TERM_RDMAP_OPCODE,
					    "no Read outstanding");
		w->active = true;
		w->done = 0;
		/* ORD slot free: a read waiting for it may go */
		siw_qp_tx_unblock(qp);
	}
	sink_stag = w->sqe.num_sge ? w->sqe.sge[0].lkey : 0;
	sink_to = w->sqe.num_sge ? w->sqe.sge[0].laddr : 0;
	if (stag != sink_stag || to != sink_to + w->done ||
	    len > w->bytes - w->done) {
		siw_warn(qp->sdev,
			 "QP %u: Read Response STag 0x%08x TO 0x%llx len %u, expected STag 0x%08x TO 0x%llx, %u of %u bytes left\n",
			 qp_id(qp), stag, to, len, sink_stag, sink_to + w->done,
			 w->bytes - w->done, w->bytes);
		return siw_rx_access_err(qp, stag != sink_stag ?
					 SIW_ACC_STAG : SIW_ACC_BOUNDS, true);
	}
	t->wqe = w;
	t->off = w->done;
	return 0;
}

static int siw_rx_rresp_done(struct siw_qp *qp)
{
	struct siw_wqe *w = &qp->rx.rdmap.rresp;

	if (!w->active)
		return 0;	/* RTR answer */
	w->done += qp->rx.fpdu_payload;
	if (!qp->rx.ddp.last)
		return 0;
	if (w->done != w->bytes) {
		siw_sq_read_done(qp, w, IB_WC_BAD_RESP_ERR, w->done);
		return siw_rx_error(&qp->rx.err, TERM_LAYER_DDP,
				    TERM_DDP_ETYPE_TAGGED,
				    TERM_DDP_T_BASE_BOUNDS,
				    "Read Response shorter than requested");
	}
	if (w->sqe.opcode == SIW_OP_READ_LOCAL_INV && w->sqe.num_sge)
		siw_mr_invalidate(qp->sdev, w->sqe.sge[0].lkey, qp->pd, false);
	siw_sq_read_done(qp, w, IB_WC_SUCCESS, w->done);
	/* a fenced WQE may wait for this */
	siw_qp_tx_unblock(qp);
	return 0;
}

/* A receive WQE for a new Send message, or an error. */
static int siw_rx_send_begin(struct siw_qp *qp, struct siw_wqe *w)
{
	struct siw_rx_err *e = &qp->rx.err;
	int rv;

	rv = siw_rqe_fetch(qp, w);
	if (rv == -ENOENT)
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				    TERM_DDP_U_INV_MSN_NOBUF,
				    "no receive posted");
	if (rv == -ESHUTDOWN)	/* its receives are being flushed */
		return siw_rx_error(e, TERM_LAYER_RDMAP,
				    TERM_RDMAP_ETYPE_LOCAL_CATA, 0,
				    "Send for a QP in error");
	if (rv) {
		/* malformed or not accessible: still ours to complete */
		siw_recv_complete(qp, w, w->status, 0, 0, false);
		return siw_rx_error(e, TERM_LAYER_RDMAP,
				    TERM_RDMAP_ETYPE_LOCAL_CATA, 0,
				    rv == -EACCES ?
				    "receive buffer not accessible" :
				    "malformed receive WQE");
	}
	return 0;
}

static int siw_rx_send(struct siw_qp *qp, struct siw_rx_target *t)
{
	struct siw_rdmap_rx *r = &qp->rx.rdmap;
	struct siw_ddp_rx *d = &qp->rx.ddp;
	struct siw_rx_err *e = &qp->rx.err;
	struct siw_wqe *w = &r->rwqe;
	u32 len = qp->rx.fpdu_payload;
	int rv;

	r->rtr_send = false;
	if (!w->active) {
		if (d->mo)
			return siw_rx_error(e, TERM_LAYER_DDP,
					    TERM_DDP_ETYPE_UNTAGGED,
					    TERM_DDP_U_INV_MO,
					    "first segment with MO != 0");
		if (READ_ONCE(qp->tx_hold) && !len && d->last) {
			/* zero-length Send RTR: ready, consumes no buffer */
			r->rtr_send = true;
			siw_rx_release_hold(qp);
			return 0;
		}
		rv = siw_rx_send_begin(qp, w);
		if (rv)
			return rv;
	}
	if (d->mo != w->done)
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				    TERM_DDP_U_INV_MO, "unexpected MO");
	if (len > w->bytes - w->done) {
		siw_recv_complete(qp, w, IB_WC_LOC_LEN_ERR, w->done, 0, false);
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				    TERM_DDP_U_MSG_TOO_LONG,
				    "message longer than the receive buffer");
	}
	t->wqe = w;
	t->off = w->done;
	return 0;
}

static int siw_rx_send_done(struct siw_qp *qp)
{
	struct siw_rdmap_rx *r = &qp->rx.rdmap;
	struct siw_wqe *w = &r->rwqe;
	const struct siw_op *op = qp->rx.op;
	struct iwarp_untagged_hdr *h = (void *)qp->rx.hdr;
	u32 inval = 0;

	if (r->rtr_send)
		return 0;
	w->done += qp->rx.fpdu_payload;
	if (!qp->rx.ddp.last)
		return 0;

	if (op->invalidates) {
		inval = be32_to_cpu(h->inval_stag);
		if (siw_mr_invalidate(qp->sdev, inval, qp->pd, true)) {
			siw_recv_complete(qp, w, IB_WC_REM_INV_REQ_ERR,
					  w->done, 0, false);
			return siw_rx_error(&qp->rx.err, TERM_LAYER_RDMAP,
					    TERM_RDMAP_ETYPE_REMOTE_OP,
					    TERM_RDMAP_CANNOT_INVAL,
					    "STag cannot be invalidated");
		}
	}
	siw_recv_complete(qp, w, IB_WC_SUCCESS, w->done, inval,
			  op->solicited);
	return 0;
}

static int siw_rx_rreq(struct siw_qp *qp, struct siw_rx_target *t)
{
	struct iwarp_read_req *r = (void *)qp->rx.hdr;
	struct siw_ddp_rx *d = &qp->rx.ddp;
	struct siw_rx_err *e = &qp->rx.err;
	u32 size = be32_to_cpu(r->body.size);
	u64 src_to = be64_to_cpu(r->body.src_to);
	struct siw_mr *mr;
	int err;

	if (!d->last || d->mo || qp->rx.fpdu_payload)
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				    TERM_DDP_U_INV_MO,
				    "malformed Read Request");
	if (qp->irq_put - qp->irq_get >= qp->attrs.ird)
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				    TERM_DDP_U_INV_MSN_NOBUF,
				    "more Read Requests than IRD");
	/* zero bytes read nothing (also the MPA v2 RTR Read) */
	if (!size)
		return 0;
	/* the QP must allow it as well as the MR (siw(7), "Access") */
	if (!(READ_ONCE(qp->attrs.access) & IB_ACCESS_REMOTE_READ))
		return siw_rx_access_err(qp, SIW_ACC_RIGHTS, false);
	mr = siw_mr_lookup(qp->sdev, be32_to_cpu(r->body.src_stag));
	if (!mr) {
		err = SIW_ACC_STAG;
	} else {
		err = siw_mr_check(mr, be32_to_cpu(r->body.src_stag), qp->pd,
				   IB_ACCESS_REMOTE_READ, src_to, size, true,
				   NULL);
		siw_mr_put(mr);
	}
	return err ? siw_rx_access_err(qp, err, false) : 0;
}

/**
 * siw_irq_push - queue a peer's Read Request for its response
 * @qp: the QP; the caller checked that fewer than IRD are queued
 * @e: the request
 */
void siw_irq_push(struct siw_qp *qp, const struct siw_irq_entry *e)
{
	spin_lock_bh(&qp->orq_lock);
	*siw_irq_slot(qp, qp->irq_put) = *e;
	qp->irq_put++;
	spin_unlock_bh(&qp->orq_lock);
}
EXPORT_SYMBOL_IF_KUNIT(siw_irq_push);

static int siw_rx_rreq_done(struct siw_qp *qp)
{
	struct iwarp_read_req *r = (void *)qp->rx.hdr;
	struct siw_irq_entry e = {
		.sink_stag = be32_to_cpu(r->body.sink_stag),
		.sink_to = be64_to_cpu(r->body.sink_to),
		.size = be32_to_cpu(r->body.size),
		.src_stag = be32_to_cpu(r->body.src_stag),
		.src_to = be64_to_cpu(r->body.src_to),
	};

	siw_stat_inc(qp->sdev, SIW_STAT_READ_REQ_RX);
	siw_rx_release_hold(qp);
	siw_irq_push(qp, &e);
	siw_qp_schedule_tx(qp);
	return 0;
}

static int siw_rx_term_hdr(struct siw_qp *qp, struct siw_rx_target *t)
{
	return 0;
}

static const char *const siw_term_layer_name[] = {
	[TERM_LAYER_RDMAP] = "RDMAP",
	[TERM_LAYER_DDP] = "DDP",
	[TERM_LAYER_LLP] = "MPA",
};

/* Completion status for our outstanding Read the peer terminated */
static enum ib_wc_status siw_term_wc_status(u32 ctrl)
{
	unsigned int layer = ctrl >> TERM_LAYER_SHIFT;
	unsigned int etype = (ctrl >> TERM_ETYPE_SHIFT) & 0xf;

	if (layer == TERM_LAYER_RDMAP && etype == TERM_RDMAP_ETYPE_REMOTE_PROT)
		return IB_WC_REM_ACCESS_ERR;
	if (layer == TERM_LAYER_DDP && etype == TERM_DDP_ETYPE_TAGGED)
		return IB_WC_REM_ACCESS_ERR;
	if (layer == TERM_LAYER_DDP && etype == TERM_DDP_ETYPE_UNTAGGED)
		return IB_WC_REM_INV_REQ_ERR;
	return IB_WC_REM_OP_ERR;
}

/*
 * Which of our Reads a Terminate names. Its copy of the terminated
 * segment's DDP header (D bit) names a Read Request by its MSN on the
 * Read Request queue; with the M bit the segment's length (the MPA
 * length field) comes first (RFC 5040 4.8). Return: 1 with *@msn set,
 * 0 if the copy names another message, -1 if there is no copy.
 */
static int siw_term_rreq_msn(struct siw_qp *qp, u32 ctrl, u32 *msn)
{
	struct iwarp_untagged_hdr h = {};
	const u32 at = sizeof(struct iwarp_terminate);
	u32 skip = ctrl & TERM_FLAG_M ? 0 : MPA_HDR_SIZE;
	u32 copy = sizeof(h) - skip;

	if (!(ctrl & TERM_FLAG_D) || qp->rx.hdr_have < at + copy)
		return -1;
	memcpy((u8 *)&h + skip, qp->rx.hdr + at, copy);
	if (iwarp_tagged(&h.ctrl) || iwarp_opcode(&h.ctrl) != RDMAP_READ_REQ ||
	    be32_to_cpu(h.qn) != DDP_QN_READ_REQ)
		return 0;
	*msn = be32_to_cpu(h.msn);
	return 1;
}

/*
 * The peer terminated. The Read of ours its header copy names completes
 * with the reason, the Reads before it with a flush error (completions
 * stay in order); a copy naming another message fails no Read in
 * particular; without a copy the oldest Read, the one the peer works on,
 * gets the reason. The rest are flushed as the QP goes to ERROR.
 */
static void siw_rx_term_read(struct siw_qp *qp, u32 ctrl)
{
	struct siw_wqe *cur = &qp->rx.rdmap.rresp;
	enum ib_wc_status why = siw_term_wc_status(ctrl);
	struct siw_wqe w;
	u32 msn;
	int named = siw_term_rreq_msn(qp, ctrl, &msn);

	if (!named)
		return;
	if (cur->active) {
		/* its response is arriving: it is the oldest */
		bool hit = named < 0 || cur->rreq_msn == msn;

		siw_sq_read_done(qp, cur, hit ? why : IB_WC_WR_FLUSH_ERR,
				 cur->done);
		if (hit)
			return;
	} else if (named < 0) {
		if (siw_orq_pop(qp, &w))
			siw_sq_read_done(qp, &w, why, 0);
		return;
	}
	while (siw_orq_pop_before(qp, &w, msn))
		siw_sq_read_done(qp, &w, IB_WC_WR_FLUSH_ERR, 0);
	if (siw_orq_pop_before(qp, &w, msn + 1))
		siw_sq_read_done(qp, &w, why, 0);
}

static int siw_rx_terminate(struct siw_qp *qp)
{
	struct iwarp_terminate *t = (void *)qp->rx.hdr;
	u32 ctrl = be32_to_cpu(t->ctrl);
	unsigned int layer = ctrl >> TERM_LAYER_SHIFT;

	siw_stat_inc(qp->sdev, SIW_STAT_TERM_RX);
	trace_siw_term_recv(qp, ctrl);
	siw_warn(qp->sdev,
		 "QP %u: peer sent Terminate: layer %s etype %u code 0x%02x\n",
		 qp_id(qp), layer < ARRAY_SIZE(siw_term_layer_name) ?
		 siw_term_layer_name[layer] : "?",
		 (ctrl >> TERM_ETYPE_SHIFT) & 0xf,
		 (ctrl >> TERM_ECODE_SHIFT) & 0xff);

	siw_rx_term_read(qp, ctrl);

	siw_qp_event(qp, siw_term_wc_status(ctrl) == IB_WC_REM_ACCESS_ERR ?
			 IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_FATAL);
	siw_qp_to_error(qp);
	return -ECONNRESET;
}

/* Flush what the receive side's messages hold; the RX parser is stopped. */
void siw_rdmap_rx_flush(struct siw_qp *qp)
{
	struct siw_rdmap_rx *r = &qp->rx.rdmap;

	if (r->rwqe.active)
		siw_recv_complete(qp, &r->rwqe, IB_WC_WR_FLUSH_ERR, 0, 0,
				  false);
	if (r->rresp.active)
		siw_sq_read_done(qp, &r->rresp, IB_WC_WR_FLUSH_ERR, 0);
}
EXPORT_SYMBOL_IF_KUNIT(siw_rdmap_rx_flush);
