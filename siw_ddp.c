// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: DDP (RFC 5041). Segment headers, the split of a message into
 * segments, and direct placement of received payload into tagged
 * buffers (MRs) or untagged buffers (posted receives).
 */
#include <linux/highmem.h>
#include <linux/skbuff.h>
#include <net/tcp.h>
#include <kunit/visibility.h>

#include "siw.h"

/* DDP + RDMAP header length following the MPA length field */
unsigned int siw_ddp_hdr_len(unsigned int op)
{
	switch (op) {
	case RDMAP_WRITE:
	case RDMAP_READ_RESP:
		return sizeof(struct iwarp_tagged_hdr) - MPA_HDR_SIZE;
	case RDMAP_READ_REQ:
		return sizeof(struct iwarp_read_req) - MPA_HDR_SIZE;
	default:
		return sizeof(struct iwarp_untagged_hdr) - MPA_HDR_SIZE;
	}
}
EXPORT_SYMBOL_IF_KUNIT(siw_ddp_hdr_len);

static bool siw_op_tagged(unsigned int op)
{
	return op == RDMAP_WRITE || op == RDMAP_READ_RESP;
}

/* Largest payload of one FPDU of @op on this connection */
u32 siw_tx_seg_max(struct siw_qp *qp, unsigned int op)
{
	return mpa_seg_max(READ_ONCE(tcp_sk(qp->sock->sk)->mss_cache),
			   siw_ddp_hdr_len(op));
}

/**
 * siw_sgl_chunk - where message offset @off of a WQE's SGL lives
 * @wqe: WQE with resolved MRs (or inline data)
 * @off: offset in the message
 * @len: bytes wanted
 * @c: filled with page, offset and the contiguous length (<= @len)
 *
 * Returns 0 or -EFAULT if @off is beyond the SGL.
 */
int siw_sgl_chunk(struct siw_wqe *wqe, u32 off, u32 len,
		  struct siw_mem_chunk *c)
{
	struct siw_sqe *sqe = &wqe->sqe;
	int i;

	if (sqe->flags & SIW_WQE_INLINE) {
		u8 *p = (u8 *)&sqe->sge[1] + off;

		if (off + len > sqe->sge[0].length)
			return -EFAULT;
		c->page = virt_to_page(p);
		c->off = offset_in_page(p);
		c->len = min_t(u32, len, PAGE_SIZE - c->off);
		return 0;
	}
	for (i = 0; i < sqe->num_sge; i++) {
		struct siw_sge *sge = &sqe->sge[i];

		if (off < sge->length) {
			if (!wqe->mr[i])
				return -EFAULT;
			return siw_mr_chunk(wqe->mr[i], sge->laddr + off,
					    min(len, sge->length - off), c);
		}
		off -= sge->length;
	}
	return -EFAULT;
}

/* Fill tx->hdr for the next segment of the current message. */
void siw_ddp_tx_hdr(struct siw_tx *tx, u32 seg_len, bool last)
{
	unsigned int hlen = siw_ddp_hdr_len(tx->op);
	struct iwarp_ctrl *ctrl = (struct iwarp_ctrl *)tx->hdr;

	ctrl->mpa_len = cpu_to_be16(hlen + seg_len);
	ctrl->ddp_rdmap = iwarp_mk_ctrl(tx->op, siw_op_tagged(tx->op), last);
	if (siw_op_tagged(tx->op)) {
		struct iwarp_tagged_hdr *h = (void *)tx->hdr;

		h->stag = cpu_to_be32(tx->stag);
		h->to = cpu_to_be64(tx->to + tx->msg_off);
	} else {
		struct iwarp_untagged_hdr *h = (void *)tx->hdr;

		h->inval_stag = cpu_to_be32(tx->inval);
		h->qn = cpu_to_be32(tx->qn);
		h->msn = cpu_to_be32(tx->msn);
		h->mo = cpu_to_be32(tx->msg_off);
	}
	tx->hdr_len = MPA_HDR_SIZE + hlen;
}
EXPORT_SYMBOL_IF_KUNIT(siw_ddp_tx_hdr);

/* ---------------------------------------------------------- receive */

static int siw_rx_err(struct siw_qp *qp, unsigned int layer,
		      unsigned int etype, unsigned int ecode, const char *why)
{
	siw_stat_inc(qp->sdev, SIW_STAT_RX_PROTO_ERR);
	siw_warn(qp->sdev, "QP %u: received %s, terminating\n", qp_id(qp),
		 why);
	siw_term_set(qp, layer, etype, ecode, qp->rx.hdr, qp->rx.hdr_have);
	return -EPROTO;
}

/**
 * siw_ddp_rx_hdr - validate a complete DDP/RDMAP segment header
 * @qp: the QP, rx.hdr holds the header, rx.fpdu_payload its payload size
 *
 * Checks every field before any memory is touched and sets up the
 * placement target through the RDMAP layer. Returns 0, or -EPROTO after
 * a Terminate was scheduled.
 */
int siw_ddp_rx_hdr(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iwarp_ctrl *ctrl = (struct iwarp_ctrl *)rx->hdr;
	unsigned int op = iwarp_opcode(ctrl);

	if (iwarp_ddp_version(ctrl) != DDP_VERSION)
		return siw_rx_err(qp, TERM_LAYER_DDP,
				  iwarp_tagged(ctrl) ? TERM_DDP_ETYPE_TAGGED :
						       TERM_DDP_ETYPE_UNTAGGED,
				  iwarp_tagged(ctrl) ? TERM_DDP_T_VERSION :
						       TERM_DDP_U_VERSION,
				  "bad DDP version");
	if (iwarp_rdmap_version(ctrl) != RDMAP_VERSION)
		return siw_rx_err(qp, TERM_LAYER_RDMAP,
				  TERM_RDMAP_ETYPE_REMOTE_OP,
				  TERM_RDMAP_VERSION, "bad RDMAP version");
	if (op >= RDMAP_NUM_OPCODES || siw_op_tagged(op) != iwarp_tagged(ctrl))
		return siw_rx_err(qp, TERM_LAYER_RDMAP,
				  TERM_RDMAP_ETYPE_REMOTE_OP, TERM_RDMAP_OPCODE,
				  "bad RDMAP opcode");

	rx->op = op;
	rx->last = iwarp_last(ctrl);
	if (!siw_op_tagged(op)) {
		struct iwarp_untagged_hdr *h = (void *)rx->hdr;
		u32 qn = be32_to_cpu(h->qn);
		u32 want_qn = op == RDMAP_READ_REQ ? DDP_QN_READ_REQ :
			      op == RDMAP_TERMINATE ? DDP_QN_TERMINATE :
			      DDP_QN_SEND;

		if (qn != want_qn)
			return siw_rx_err(qp, TERM_LAYER_DDP,
					  TERM_DDP_ETYPE_UNTAGGED,
					  TERM_DDP_U_INV_QN, "bad queue number");
		/* a Terminate is taken whatever its MSN says */
		if (qn != DDP_QN_TERMINATE &&
		    be32_to_cpu(h->msn) != rx->msn[qn])
			return siw_rx_err(qp, TERM_LAYER_DDP,
					  TERM_DDP_ETYPE_UNTAGGED,
					  TERM_DDP_U_INV_MSN_RANGE, "bad MSN");
		rx->mo = be32_to_cpu(h->mo);
		rx->qn = qn;
	}
	return siw_rdmap_rx_hdr(qp);
}

/* Copy @len payload bytes at @skb/@off to the chunk, updating the CRC. */
static int siw_rx_copy(struct siw_qp *qp, struct siw_mem_chunk *c,
		       const struct sk_buff *skb, int off)
{
	u8 *dst = kmap_local_page(c->page) + c->off;
	int rv = skb_copy_bits(skb, off, dst, c->len);

	if (!rv && qp->attrs.crc)
		qp->rx.crc = crc32c(qp->rx.crc, dst, c->len);
	kunmap_local(dst);
	return rv;
}

/**
 * siw_ddp_rx_place - place payload of the current segment
 * @qp: the QP
 * @skb: source buffer
 * @off: offset in @skb
 * @len: bytes to place; never more than the segment has left
 *
 * The target (MR range or receive SGL) was checked for the whole segment
 * in siw_ddp_rx_hdr(), so nothing is written outside it. Returns 0 or a
 * negative errno after a Terminate was scheduled.
 */
int siw_ddp_rx_place(struct siw_qp *qp, const struct sk_buff *skb, int off,
		     u32 len)
{
	struct siw_rx *rx = &qp->rx;
	struct siw_mem_chunk c;
	int rv;

	while (len) {
		if (rx->tmr) {
			rv = siw_mr_chunk(rx->tmr, rx->tva, len, &c);
		} else if (rx->target) {
			rv = siw_sgl_chunk(rx->target, rx->toff, len, &c);
		} else {
			/* payload nobody may receive: can't happen, hdr checked */
			rv = -EFAULT;
		}
		if (!rv)
			rv = siw_rx_copy(qp, &c, skb, off);
		if (rv)
			return siw_rx_err(qp, TERM_LAYER_DDP,
					  TERM_DDP_ETYPE_CATA,
					  TERM_DDP_CATA_UNSPEC,
					  "segment that could not be placed");
		rx->tva += c.len;
		rx->toff += c.len;
		off += c.len;
		len -= c.len;
	}
	return 0;
}
