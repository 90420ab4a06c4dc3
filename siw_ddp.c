// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: DDP (RFC 5041). Transmit: segmentation of the current RDMAP
 * message, one header and a list of payload pieces per segment, and the
 * untagged message sequence numbers. Receive: segment header checks,
 * MSN tracking and direct placement into tagged buffers (MRs) or
 * untagged buffers (posted receives). What an opcode is comes from the
 * RDMAP opcode table, handed in by the TX and RX engines.
 */
#include <linux/highmem.h>
#include <linux/moduleparam.h>
#include <linux/skbuff.h>
#include <net/tcp.h>
#include <kunit/visibility.h>

#include "siw.h"

/*
 * FPDU size: RFC 5044 has senders fit an FPDU into one TCP segment, so a
 * receiver could place it without reassembly; every receiver parses any
 * length, the kernel's siw included. fpdu_max lets FPDUs grow beyond the
 * MSS, up to the 16 bit ULPDU limit, for fewer headers per byte.
 */
static unsigned int fpdu_max;
module_param(fpdu_max, uint, 0644);
MODULE_PARM_DESC(fpdu_max,
		 "Largest FPDU to send in bytes when above the TCP MSS (up to 65471); 0 = one MSS per FPDU as RFC 5044 suggests (default)");

/* Largest payload of one FPDU of @op on this connection */
u32 siw_tx_seg_max(struct siw_qp *qp, const struct siw_op *op)
{
	u32 mss = READ_ONCE(tcp_sk(qp->sock->sk)->mss_cache);

	return mpa_seg_max(max(mss, READ_ONCE(fpdu_max)), op->hdr_len);
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
static int siw_sgl_chunk(struct siw_wqe *wqe, u32 off, u32 len,
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
			return siw_mr_chunk(wqe->mr[i], wqe->mr_gen[i],
					    sge->laddr + off,
					    min(len, sge->length - off), c);
		}
		off -= sge->length;
	}
	return -EFAULT;
}

/* ---------------------------------------------------------- transmit */

/* A new message of @op: its sequence number, segmentation from 0. */
void siw_ddp_tx_begin(struct siw_ddp_tx *d, const struct siw_op *op)
{
	d->off = 0;
	d->seg_len = 0;
	d->npay = 0;
	if (!op->tagged)
		d->msn = ++d->msn_last[op->qn];
}
EXPORT_SYMBOL_IF_KUNIT(siw_ddp_tx_begin);

static void siw_ddp_tx_hdr(struct siw_ddp_tx *d, const struct siw_op *op,
			   const struct siw_rdmap_tx *m)
{
	/* laid out as on the wire; the MPA length field is left to MPA */
	u8 *h = d->hdr;
	__be16 *ctrl = &((struct iwarp_ctrl *)h)->ddp_rdmap;
	unsigned int base;

	*ctrl = iwarp_mk_ctrl(op->opcode, op->tagged, d->last);
	if (op->tagged) {
		struct iwarp_tagged_hdr *t = (void *)h;

		t->stag = cpu_to_be32(m->stag);
		t->to = cpu_to_be64(m->to + d->off);
		base = sizeof(*t);
	} else {
		struct iwarp_untagged_hdr *u = (void *)h;

		u->inval_stag = cpu_to_be32(m->inval);
		u->qn = cpu_to_be32(op->qn);
		u->msn = cpu_to_be32(d->msn);
		u->mo = cpu_to_be32(d->off);
		base = sizeof(*u);
	}
	/* the RDMAP body of Read Request and Terminate follows */
	memcpy(h + base, m->body, m->body_len);
	d->hdr_len = base - MPA_HDR_SIZE + m->body_len;
}

/**
 * siw_ddp_tx_segment - build the next segment of the message
 * @d: segmentation state
 * @op: the message's opcode
 * @m: the message: payload source, length, tagged target, body
 * @seg_max: most payload bytes the segment may carry
 *
 * Payload is referenced where it lives (registered pages, inline data in
 * the WQE), one piece per contiguous range; the segment ends early when
 * SIW_SEG_FRAGS pieces are used. Calling it again before
 * siw_ddp_tx_advance() builds the same segment.
 *
 * Return: 0, or -EFAULT if the payload is not accessible.
 */
int siw_ddp_tx_segment(struct siw_ddp_tx *d, const struct siw_op *op,
		       const struct siw_rdmap_tx *m, u32 seg_max)
{
	u32 want = min(seg_max, m->len - d->off), done = 0;
	struct siw_mem_chunk c;

	d->npay = 0;
	while (done < want && d->npay < SIW_SEG_FRAGS) {
		struct bio_vec *bv = &d->pay[d->npay++];

		if (!m->wqe || siw_sgl_chunk(m->wqe, d->off + done,
					     want - done, &c))
			return -EFAULT;
		bv->bv_page = c.page;
		bv->bv_offset = c.off;
		bv->bv_len = c.len;
		done += c.len;
	}
	d->seg_len = done;
	d->last = d->off + done == m->len;
	siw_ddp_tx_hdr(d, op, m);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_ddp_tx_segment);

/* The segment is framed: move on. Return: the message is complete. */
bool siw_ddp_tx_advance(struct siw_ddp_tx *d, const struct siw_rdmap_tx *m)
{
	d->off += d->seg_len;
	d->seg_len = 0;
	d->npay = 0;
	return d->off == m->len;
}
EXPORT_SYMBOL_IF_KUNIT(siw_ddp_tx_advance);

/* ----------------------------------------------------------- receive */

/*
 * Header bytes after the MPA length by the T bit alone: what is read of
 * a segment whose opcode is unknown before it is refused, so the
 * Terminate can quote the whole DDP header.
 */
u32 siw_ddp_rx_hdr_len(const struct iwarp_ctrl *ctrl)
{
	return (iwarp_tagged(ctrl) ? sizeof(struct iwarp_tagged_hdr) :
				     sizeof(struct iwarp_untagged_hdr)) -
	       MPA_HDR_SIZE;
}

int siw_ddp_rx_version(struct siw_rx_err *e, const struct iwarp_ctrl *ctrl)
{
	bool tagged = iwarp_tagged(ctrl);

	if (iwarp_ddp_version(ctrl) == DDP_VERSION)
		return 0;
	return siw_rx_error(e, TERM_LAYER_DDP,
			    tagged ? TERM_DDP_ETYPE_TAGGED :
				     TERM_DDP_ETYPE_UNTAGGED,
			    tagged ? TERM_DDP_T_VERSION : TERM_DDP_U_VERSION,
			    "bad DDP version");
}

/**
 * siw_ddp_rx_hdr - decode and check a segment's DDP header
 * @d: DDP receive state
 * @e: receive error to fill
 * @hdr: the header as received, MPA length first
 * @op: its opcode, known and matching the T bit
 *
 * Untagged segments must use their opcode's queue and carry the next
 * MSN of that queue (MSNs count from 1) (a Terminate is taken whatever its MSN says).
 * Return: 0 or -EPROTO (@e filled).
 */
int siw_ddp_rx_hdr(struct siw_ddp_rx *d, struct siw_rx_err *e,
		   const u8 *hdr, const struct siw_op *op)
{
	const struct iwarp_untagged_hdr *h = (const void *)hdr;
	u32 qn;

	d->last = iwarp_last(&h->ctrl);
	memset(&d->target, 0, sizeof(d->target));
	if (op->tagged)
		return 0;
	qn = be32_to_cpu(h->qn);
	if (qn != op->qn)
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				    TERM_DDP_U_INV_QN, "bad queue number");
	d->msn_got = be32_to_cpu(h->msn);
	if (qn != DDP_QN_TERMINATE && d->msn_got != d->msn_done[qn] + 1)
		return siw_rx_error(e, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				    TERM_DDP_U_INV_MSN_RANGE, "bad MSN");
	d->qn = qn;
	d->mo = be32_to_cpu(h->mo);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_ddp_rx_hdr);

/* RDMAP checked the target for the whole segment: placement goes there. */
void siw_ddp_rx_set_target(struct siw_ddp_rx *d,
			   const struct siw_rx_target *t)
{
	d->target = *t;
}

void siw_ddp_rx_target_put(struct siw_ddp_rx *d)
{
	if (d->target.mr) {
		siw_mr_put(d->target.mr);
		d->target.mr = NULL;
	}
}

/* The segment arrived intact: the next MSN, and the target is done. */
void siw_ddp_rx_done(struct siw_ddp_rx *d, const struct siw_op *op)
{
	if (!op->tagged && d->last)
		d->msn_done[d->qn]++;
	siw_ddp_rx_target_put(d);
}

/* Copy the chunk's bytes out of @skb/@off, updating the CRC. */
static int siw_ddp_rx_copy(struct siw_mpa_rx *crc, struct siw_mem_chunk *c,
			   const struct sk_buff *skb, int off)
{
	u8 *dst = kmap_local_page(c->page) + c->off;
	int rv = skb_copy_bits(skb, off, dst, c->len);

	if (!rv)
		siw_mpa_rx_crc(crc, dst, c->len);
	kunmap_local(dst);
	return rv;
}

/**
 * siw_ddp_rx_place - place payload of the current segment
 * @d: DDP receive state with the segment's target
 * @e: receive error to fill
 * @crc: the FPDU's CRC, updated with what is placed
 * @skb: source buffer
 * @off: offset in @skb
 * @len: bytes to place; never more than the segment has left
 *
 * The target (MR range or receive SGL) was checked for the whole segment
 * when its header arrived, so nothing is written outside it.
 * Return: 0 or -EPROTO (@e filled).
 */
int siw_ddp_rx_place(struct siw_ddp_rx *d, struct siw_rx_err *e,
		     struct siw_mpa_rx *crc, const struct sk_buff *skb,
		     int off, u32 len)
{
	struct siw_rx_target *t = &d->target;
	struct siw_mem_chunk c;
	int rv;

	while (len) {
		if (t->mr)
			rv = siw_mr_chunk(t->mr, t->gen, t->va, len, &c);
		else if (t->wqe)
			rv = siw_sgl_chunk(t->wqe, t->off, len, &c);
		else	/* payload nobody may receive: the header said so */
			rv = -EFAULT;
		if (!rv)
			rv = siw_ddp_rx_copy(crc, &c, skb, off);
		if (rv)
			return siw_rx_error(e, TERM_LAYER_DDP,
					    TERM_DDP_ETYPE_CATA,
					    TERM_DDP_CATA_UNSPEC,
					    "segment that could not be placed");
		t->va += c.len;
		t->off += c.len;
		off += c.len;
		len -= c.len;
	}
	return 0;
}
