// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KUnit suites for siw: MPA framing arithmetic, CRC and request/reply
 * negotiation; the opcode table against RFC 5040, DDP/RDMAP header
 * encoding and segmentation; STag/offset bounds; zero-copy release
 * order; the receive engine fed skbs built here (whole, split at every
 * byte, several FPDUs per skb, bad lengths, bad CRC, bad headers); and
 * the QP state machine's transitions.
 * Load siw.ko first, then this module; results in debugfs/kunit.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/crc32c.h>
#include <linux/string.h>
#include <linux/skbuff.h>
#include <linux/percpu.h>
#include <linux/sched/isolation.h>

#include "siw_kunit.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

/* ------------------------------------------------------------- MPA */

static void siw_test_mpa_pad(struct kunit *test)
{
	/* pad covers length field + ULPDU up to a multiple of 4 */
	KUNIT_EXPECT_EQ(test, mpa_pad(2), 0U);
	KUNIT_EXPECT_EQ(test, mpa_pad(3), 3U);
	KUNIT_EXPECT_EQ(test, mpa_pad(4), 2U);
	KUNIT_EXPECT_EQ(test, mpa_pad(5), 1U);
	KUNIT_EXPECT_EQ(test, mpa_pad(14), 0U);
	KUNIT_EXPECT_EQ(test, mpa_pad(18), 0U);
	KUNIT_EXPECT_EQ(test, mpa_pad(19), 3U);
	KUNIT_EXPECT_EQ(test, mpa_pad(0xffff), 3U);
}

/* RFC 3720 B.4 CRC32c examples, bytes as sent */
static void siw_test_crc32c_vectors(struct kunit *test)
{
	static const u8 want_zero[4] = { 0xaa, 0x36, 0x91, 0x8a };
	static const u8 want_ones[4] = { 0x43, 0xab, 0xa8, 0x62 };
	static const u8 want_inc[4] = { 0x4e, 0x79, 0xdd, 0x46 };
	static const u8 want_dec[4] = { 0x5c, 0xdb, 0x3f, 0x11 };
	u8 buf[32];
	__le32 w;
	int i;

	memset(buf, 0, sizeof(buf));
	w = mpa_crc_wire(crc32c(~0U, buf, sizeof(buf)));
	KUNIT_EXPECT_MEMEQ(test, &w, want_zero, 4);

	memset(buf, 0xff, sizeof(buf));
	w = mpa_crc_wire(crc32c(~0U, buf, sizeof(buf)));
	KUNIT_EXPECT_MEMEQ(test, &w, want_ones, 4);

	for (i = 0; i < 32; i++)
		buf[i] = i;
	w = mpa_crc_wire(crc32c(~0U, buf, sizeof(buf)));
	KUNIT_EXPECT_MEMEQ(test, &w, want_inc, 4);

	for (i = 0; i < 32; i++)
		buf[i] = 31 - i;
	w = mpa_crc_wire(crc32c(~0U, buf, sizeof(buf)));
	KUNIT_EXPECT_MEMEQ(test, &w, want_dec, 4);
}

/* CRC over pieces equals CRC over the whole: the way FPDUs are summed */
static void siw_test_crc32c_incremental(struct kunit *test)
{
	u8 buf[97];
	u32 whole, part;
	int i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = i * 7 + 3;
	whole = crc32c(~0U, buf, sizeof(buf));
	part = crc32c(~0U, buf, 10);
	part = crc32c(part, buf + 10, 50);
	part = crc32c(part, buf + 60, sizeof(buf) - 60);
	KUNIT_EXPECT_EQ(test, whole, part);
}

/*
 * Segmentation: every FPDU of a message fits the MSS, payload adds up,
 * only the last one may need pad, and no ULPDU exceeds 16 bits.
 */
static void siw_test_segmentation(struct kunit *test)
{
	static const u32 mss[] = { 536, 1448, 8948, 65483, 100 };
	static const u32 len[] = { 0, 1, 3, 4, 1427, 1428, 1429, 65536,
				   1000000 };
	int i, j;

	for (i = 0; i < ARRAY_SIZE(mss); i++) {
		for (j = 0; j < ARRAY_SIZE(len); j++) {
			u32 hlen = siw_op_table[RDMAP_WRITE].hdr_len;
			u32 max = mpa_seg_max(mss[i], hlen);
			u32 off = 0, n = 0;

			KUNIT_ASSERT_GT(test, max, 0U);
			KUNIT_EXPECT_EQ(test, max % 4, 0U);
			do {
				u32 seg = min(max, len[j] - off);
				u32 ulpdu = hlen + seg;
				u32 fpdu = MPA_HDR_SIZE + ulpdu + mpa_pad(ulpdu) +
					   MPA_CRC_SIZE;

				KUNIT_EXPECT_LE(test, ulpdu, MPA_MAX_ULPDU);
				KUNIT_EXPECT_EQ(test, fpdu % 4, 0U);
				if (mss[i] >= 256 && mss[i] <= MPA_MAX_ULPDU - 64)
					KUNIT_EXPECT_LE(test, fpdu, mss[i]);
				if (off + seg < len[j])
					KUNIT_EXPECT_EQ(test, mpa_pad(ulpdu), 0U);
				off += seg;
				n++;
			} while (off < len[j]);
			KUNIT_EXPECT_EQ(test, off, len[j]);
			KUNIT_EXPECT_EQ(test, n, len[j] ? DIV_ROUND_UP(len[j], max) :
							  1U);
		}
	}
}

/* ------------------------------------------------------ DDP / RDMAP */

static void siw_test_ctrl_bits(struct kunit *test)
{
	struct iwarp_ctrl c;
	unsigned int op;

	c.ddp_rdmap = iwarp_mk_ctrl(RDMAP_WRITE, true, true);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(c.ddp_rdmap), 0xc140);
	c.ddp_rdmap = iwarp_mk_ctrl(RDMAP_SEND, false, true);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(c.ddp_rdmap), 0x4143);
	c.ddp_rdmap = iwarp_mk_ctrl(RDMAP_READ_REQ, false, false);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(c.ddp_rdmap), 0x0141);

	for (op = 0; op < RDMAP_NUM_OPCODES; op++) {
		c.ddp_rdmap = iwarp_mk_ctrl(op, op & 1, !(op & 2));
		KUNIT_EXPECT_EQ(test, iwarp_opcode(&c), op);
		KUNIT_EXPECT_EQ(test, iwarp_tagged(&c), !!(op & 1));
		KUNIT_EXPECT_EQ(test, iwarp_last(&c), !(op & 2));
		KUNIT_EXPECT_EQ(test, iwarp_ddp_version(&c), DDP_VERSION);
		KUNIT_EXPECT_EQ(test, iwarp_rdmap_version(&c), RDMAP_VERSION);
	}
	KUNIT_EXPECT_EQ(test, term_mk_ctrl(TERM_LAYER_DDP,
					   TERM_DDP_ETYPE_TAGGED,
					   TERM_DDP_T_BASE_BOUNDS), 0x11010000U);
}

static void siw_test_hdr_sizes(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sizeof(struct iwarp_tagged_hdr), 16UL);
	KUNIT_EXPECT_EQ(test, sizeof(struct iwarp_untagged_hdr), 20UL);
	KUNIT_EXPECT_EQ(test, sizeof(struct iwarp_read_req), 48UL);
	KUNIT_EXPECT_EQ(test, sizeof(struct iwarp_terminate), 24UL);
	KUNIT_EXPECT_EQ(test, sizeof(struct mpa_rr), 20UL);
}

/*
 * The opcode table against RFC 5040: opcodes (4.1, table 4), buffer
 * model and queue numbers (5.1: QN 0 Send, 1 Read Request, 2
 * Terminate), header sizes (RFC 5041 4.2/4.3 plus the RDMAP bodies of
 * 4.4 and 4.8), solicited and invalidate semantics (4.3, 4.7).
 */
static void siw_test_op_table(struct kunit *test)
{
	static const struct {
		u8 opcode;
		bool tagged;
		u8 qn;
		u8 hdr_len;
		bool se;
		bool inv;
	} rfc[] = {
		{ RDMAP_WRITE, true, 0, 14, false, false },
		{ RDMAP_READ_REQ, false, 1, 46, false, false },
		{ RDMAP_READ_RESP, true, 0, 14, false, false },
		{ RDMAP_SEND, false, 0, 18, false, false },
		{ RDMAP_SEND_INVAL, false, 0, 18, false, true },
		{ RDMAP_SEND_SE, false, 0, 18, true, false },
		{ RDMAP_SEND_SE_INVAL, false, 0, 18, true, true },
		{ RDMAP_TERMINATE, false, 2, 22, false, false },
	};
	struct iwarp_ctrl c;
	unsigned int i;

	KUNIT_EXPECT_EQ(test, ARRAY_SIZE(rfc), (size_t)RDMAP_NUM_OPCODES);
	for (i = 0; i < ARRAY_SIZE(rfc); i++) {
		const struct siw_op *op = &siw_op_table[rfc[i].opcode];

		KUNIT_EXPECT_EQ(test, rfc[i].opcode, i);
		KUNIT_EXPECT_EQ(test, op->opcode, rfc[i].opcode);
		KUNIT_EXPECT_NOT_NULL(test, op->name);
		KUNIT_EXPECT_EQ(test, op->tagged, rfc[i].tagged);
		if (!op->tagged)
			KUNIT_EXPECT_EQ(test, op->qn, rfc[i].qn);
		KUNIT_EXPECT_EQ(test, op->hdr_len, rfc[i].hdr_len);
		KUNIT_EXPECT_EQ(test, op->solicited, rfc[i].se);
		KUNIT_EXPECT_EQ(test, op->invalidates, rfc[i].inv);
		KUNIT_EXPECT_EQ(test, op->var_len, i == RDMAP_TERMINATE);
		KUNIT_EXPECT_NOT_NULL(test, op->rx_hdr);
		KUNIT_EXPECT_NOT_NULL(test, op->rx_done);

		/* the receive lookup finds it only with the right T bit */
		c.ddp_rdmap = iwarp_mk_ctrl(i, rfc[i].tagged, true);
		KUNIT_EXPECT_PTR_EQ(test, siw_rx_op_of(&c), op);
		c.ddp_rdmap = iwarp_mk_ctrl(i, !rfc[i].tagged, true);
		KUNIT_EXPECT_NULL(test, siw_rx_op_of(&c));
	}
	for (i = RDMAP_NUM_OPCODES; i < 16; i++) {
		c.ddp_rdmap = iwarp_mk_ctrl(i, false, true);
		KUNIT_EXPECT_NULL(test, siw_rx_op_of(&c));
		c.ddp_rdmap = iwarp_mk_ctrl(i, true, true);
		KUNIT_EXPECT_NULL(test, siw_rx_op_of(&c));
	}
}

static void siw_test_tagged_hdr(struct kunit *test)
{
	static const u8 want[] = {
		0xc1, 0x40,		/* T L DV=1 RV=1 Write */
		0x12, 0x34, 0x56, 0x78,	/* STag */
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x64, /* TO */
	};
	struct siw_ddp_tx *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	struct siw_rdmap_tx *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	const struct siw_op *op = &siw_op_table[RDMAP_WRITE];

	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_NOT_NULL(test, m);
	m->op = op;
	m->stag = 0x12345678;
	m->to = 0x100001000ULL;
	m->len = 100;
	siw_ddp_tx_begin(d, op);
	d->off = 100;		/* the message's tail: no payload left */
	KUNIT_ASSERT_EQ(test, siw_ddp_tx_segment(d, op, m, 1024), 0);
	KUNIT_EXPECT_EQ(test, d->hdr_len, sizeof(want));
	KUNIT_EXPECT_TRUE(test, d->last);
	KUNIT_EXPECT_MEMEQ(test, d->hdr + MPA_HDR_SIZE, want, sizeof(want));
	KUNIT_EXPECT_TRUE(test, siw_ddp_tx_advance(d, m));
}

static void siw_test_untagged_hdr(struct kunit *test)
{
	static const u8 want[] = {
		0x41, 0x46,		/* L DV=1 RV=1 Send+SE+Inval */
		0xca, 0xfe, 0xf0, 0x0d,	/* STag to invalidate */
		0x00, 0x00, 0x00, 0x00,	/* QN 0 */
		0x00, 0x00, 0x00, 0x02,	/* MSN: the second Send */
		0x00, 0x00, 0x00, 0x00,	/* MO */
	};
	struct siw_ddp_tx *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	struct siw_rdmap_tx *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	const struct siw_op *op = &siw_op_table[RDMAP_SEND_SE_INVAL];

	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_NOT_NULL(test, m);
	m->op = op;
	m->inval = 0xcafef00d;
	siw_ddp_tx_begin(d, op);	/* MSN 1 */
	siw_ddp_tx_begin(d, op);	/* MSN 2 */
	KUNIT_ASSERT_EQ(test, siw_ddp_tx_segment(d, op, m, 1024), 0);
	KUNIT_EXPECT_EQ(test, d->hdr_len, sizeof(want));
	KUNIT_EXPECT_MEMEQ(test, d->hdr + MPA_HDR_SIZE, want, sizeof(want));
	/* a Read Request has its own queue and sequence */
	siw_ddp_tx_begin(d, &siw_op_table[RDMAP_READ_REQ]);
	KUNIT_EXPECT_EQ(test, d->msn, 1U);
}

/* One FPDU framed by MPA: length, header, pad and a CRC32c of it all. */
static void siw_test_mpa_frame(struct kunit *test)
{
	struct siw_ddp_tx *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	struct siw_mpa_tx *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	struct siw_rdmap_tx *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	const struct siw_op *op = &siw_op_table[RDMAP_READ_REQ];
	u8 wire[128];
	u32 n = 0, crc;
	__le32 got;
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_NOT_NULL(test, m);
	KUNIT_ASSERT_NOT_NULL(test, r);
	r->op = op;
	memset(r->body, 0xab, sizeof(struct iwarp_read_req_body));
	r->body_len = sizeof(struct iwarp_read_req_body);
	siw_ddp_tx_begin(d, op);
	KUNIT_ASSERT_EQ(test, siw_ddp_tx_segment(d, op, r, 1024), 0);
	KUNIT_EXPECT_EQ(test, d->hdr_len, op->hdr_len);
	KUNIT_EXPECT_TRUE(test, siw_mpa_tx_room(m, d));
	siw_mpa_tx_frame(m, d, true, NULL);
	KUNIT_EXPECT_EQ(test, m->nfpdu, 1U);
	for (i = 0; i < m->niov; i++) {
		const struct bio_vec *bv = &m->iov[i];

		KUNIT_ASSERT_LE(test, n + bv->bv_len, (u32)sizeof(wire));
		memcpy(wire + n, page_address(bv->bv_page) + bv->bv_offset,
		       bv->bv_len);
		n += bv->bv_len;
	}
	KUNIT_EXPECT_EQ(test, n, m->len);
	/* 2 + 46 = 48: no pad, then the CRC */
	KUNIT_EXPECT_EQ(test, n, 2U + 46U + 4U);
	KUNIT_EXPECT_EQ(test, (wire[0] << 8) | wire[1], 46);
	crc = crc32c(~0U, wire, n - 4);
	memcpy(&got, wire + n - 4, 4);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(got), ~crc);
}

/* ----------------------------------------------------- STag bounds */

/* siw_mr_check() of the MR's own STag, from the peer */
static int mrb_check(struct siw_mr *mr, struct ib_pd *pd, int access, u64 va,
		     u64 len)
{
	return siw_mr_check(mr, mr->stag, pd, access, va, len, true, NULL);
}

static void siw_test_mr_bounds(struct kunit *test)
{
	struct siw_mr *mr = kunit_kzalloc(test, sizeof(*mr), GFP_KERNEL);
	struct ib_pd *pd = kunit_kzalloc(test, sizeof(*pd), GFP_KERNEL);
	struct ib_pd *other = kunit_kzalloc(test, sizeof(*other), GFP_KERNEL);
	int rw = IB_ACCESS_REMOTE_WRITE;

	KUNIT_ASSERT_NOT_NULL(test, mr);
	KUNIT_ASSERT_NOT_NULL(test, pd);
	KUNIT_ASSERT_NOT_NULL(test, other);
	siw_mr_init(mr);
	mr->type = SIW_MR_USER;
	mr->stag = 0x0100;
	mr->valid = true;
	mr->pd = pd;
	mr->access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	mr->va = 0x10000;
	mr->len = 0x1000;

	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, rw, 0x10000, 0x1000),
			SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, rw, 0x10fff, 1), SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, rw, 0x11000, 0), SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, rw, 0x10fff, 2),
			SIW_ACC_BOUNDS);
	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, rw, 0xffff, 1), SIW_ACC_BOUNDS);
	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, rw, ~0ULL, 2), SIW_ACC_WRAP);
	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, IB_ACCESS_REMOTE_READ, 0x10000,
					1), SIW_ACC_RIGHTS);
	KUNIT_EXPECT_EQ(test, mrb_check(mr, other, rw, 0x10000, 1), SIW_ACC_PD);
	/* another key of the same index is another STag */
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, 0x0101, pd, rw, 0x10000, 1,
					   true, NULL), SIW_ACC_STAG);
	mr->valid = false;
	KUNIT_EXPECT_EQ(test, mrb_check(mr, pd, rw, 0x10000, 1), SIW_ACC_STAG);
}

/* -------------------------------------------------- MPA negotiation */

static void siw_mk_rr(struct mpa_rr *rr, const char *key, u16 bits,
		      u16 pd_len)
{
	memcpy(rr->key, key, MPA_KEY_SIZE);
	rr->bits = cpu_to_be16(bits);
	rr->pd_len = cpu_to_be16(pd_len);
}

static void siw_test_mpa_hdr_check(struct kunit *test)
{
	struct mpa_rr rr;

	siw_mk_rr(&rr, MPA_KEY_REQ, MPA_REVISION_2, 0);
	KUNIT_EXPECT_EQ(test, siw_mpa_hdr_check(&rr, true), 0);
	KUNIT_EXPECT_EQ(test, siw_mpa_hdr_check(&rr, false), -EBADMSG);
	siw_mk_rr(&rr, MPA_KEY_REP, MPA_REVISION_1, MPA_MAX_PRIVDATA);
	KUNIT_EXPECT_EQ(test, siw_mpa_hdr_check(&rr, false), 0);
	siw_mk_rr(&rr, MPA_KEY_REP, MPA_REVISION_1, MPA_MAX_PRIVDATA + 1);
	KUNIT_EXPECT_EQ(test, siw_mpa_hdr_check(&rr, false), -EMSGSIZE);
	siw_mk_rr(&rr, "MPA ID Req Fram!", MPA_REVISION_1, 0);
	KUNIT_EXPECT_EQ(test, siw_mpa_hdr_check(&rr, true), -EBADMSG);
}

static void siw_test_mpa_decode(struct kunit *test)
{
	/* IRD 16 + peer-to-peer, ORD 8 + Write RTR, then 3 ULP bytes */
	static const u8 pd[] = { 0x80, 0x10, 0x80, 0x08, 'a', 'b', 'c' };
	struct siw_mpa_info mi;
	struct mpa_rr rr;

	siw_mk_rr(&rr, MPA_KEY_REQ, MPA_FLAG_CRC | MPA_FLAG_ENHANCED |
		  MPA_REVISION_2, sizeof(pd));
	KUNIT_ASSERT_EQ(test, siw_mpa_decode(&rr, pd, &mi), 0);
	KUNIT_EXPECT_EQ(test, mi.rev, MPA_REVISION_2);
	KUNIT_EXPECT_TRUE(test, mi.crc);
	KUNIT_EXPECT_FALSE(test, mi.markers);
	KUNIT_EXPECT_TRUE(test, mi.v2);
	KUNIT_EXPECT_EQ(test, mi.ird, 16);
	KUNIT_EXPECT_EQ(test, mi.ord, 8);
	KUNIT_EXPECT_TRUE(test, mi.ird_bits & MPA_V2_PEER_TO_PEER);
	KUNIT_EXPECT_TRUE(test, mi.ord_bits & MPA_V2_RTR_WRITE);
	KUNIT_EXPECT_EQ(test, mi.ulp_off, 4);
	KUNIT_EXPECT_EQ(test, mi.ulp_len, 3);

	/* revision 1: all private data is the ULP's */
	siw_mk_rr(&rr, MPA_KEY_REP, MPA_FLAG_MARKERS | MPA_FLAG_REJECT |
		  MPA_REVISION_1, sizeof(pd));
	KUNIT_ASSERT_EQ(test, siw_mpa_decode(&rr, pd, &mi), 0);
	KUNIT_EXPECT_TRUE(test, mi.markers);
	KUNIT_EXPECT_TRUE(test, mi.reject);
	KUNIT_EXPECT_FALSE(test, mi.v2);
	KUNIT_EXPECT_EQ(test, mi.ulp_off, 0);
	KUNIT_EXPECT_EQ(test, mi.ulp_len, sizeof(pd));

	/* revision 2 announcing IRD/ORD without room for them */
	siw_mk_rr(&rr, MPA_KEY_REQ, MPA_FLAG_ENHANCED | MPA_REVISION_2, 2);
	KUNIT_EXPECT_EQ(test, siw_mpa_decode(&rr, pd, &mi), -EPROTO);
	/* unknown revisions */
	siw_mk_rr(&rr, MPA_KEY_REQ, 0, 0);
	KUNIT_EXPECT_EQ(test, siw_mpa_decode(&rr, pd, &mi), -EPROTO);
	siw_mk_rr(&rr, MPA_KEY_REQ, 3, 0);
	KUNIT_EXPECT_EQ(test, siw_mpa_decode(&rr, pd, &mi), -EPROTO);
}

static void siw_test_mpa_crc_decide(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, siw_mpa_crc_decide(false, false, false), 0);
	KUNIT_EXPECT_EQ(test, siw_mpa_crc_decide(false, true, false), 1);
	KUNIT_EXPECT_EQ(test, siw_mpa_crc_decide(true, false, false), 1);
	KUNIT_EXPECT_EQ(test, siw_mpa_crc_decide(true, true, true), 1);
	KUNIT_EXPECT_EQ(test, siw_mpa_crc_decide(false, false, true), 0);
	KUNIT_EXPECT_EQ(test, siw_mpa_crc_decide(true, false, true),
			-ECONNREFUSED);
	KUNIT_EXPECT_EQ(test, siw_mpa_crc_decide(false, true, true),
			-ECONNREFUSED);
}

static void siw_test_mpa_irdord(struct kunit *test)
{
	u32 ird = 16, ord = 16;

	/* ORD limited by the responder's IRD; IRD covers its ORD */
	siw_mpa_initiator_irdord(&ird, &ord, 4, 32);
	KUNIT_EXPECT_EQ(test, ord, 4U);
	KUNIT_EXPECT_EQ(test, ird, 32U);

	ird = 8;
	ord = 2;
	siw_mpa_initiator_irdord(&ird, &ord, 100, 1);
	KUNIT_EXPECT_EQ(test, ord, 2U);
	KUNIT_EXPECT_EQ(test, ird, 8U);

	ird = 1;
	ord = 1;
	siw_mpa_initiator_irdord(&ird, &ord, 0, 0x3fff);
	KUNIT_EXPECT_EQ(test, ord, 0U);
	KUNIT_EXPECT_EQ(test, ird, (u32)SIW_MAX_IRD);
}

/* Zero-copy releases out of order: completions move on in order only. */
static void siw_test_zc_release_order(struct kunit *test)
{
	struct siw_zc_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	static const u32 order[] = { 2, 0, 1, 4, 3 };
	static const u32 expect[] = { 0, 1, 3, 3, 5 };
	unsigned int i;
	u32 s;

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	ctx->started = 5;
	for (i = 0; i < ARRAY_SIZE(order); i++)
		KUNIT_EXPECT_EQ(test, siw_zc_mark_released(ctx, order[i]),
				expect[i]);

	/* a full window across the bitmap's wrap, released newest first */
	ctx->started = 5 + SIW_ZC_MAX;
	for (s = 5 + SIW_ZC_MAX - 1; s > 5; s--)
		KUNIT_EXPECT_EQ(test, siw_zc_mark_released(ctx, s), 5U);
	KUNIT_EXPECT_EQ(test, siw_zc_mark_released(ctx, 5), 5U + SIW_ZC_MAX);
	KUNIT_EXPECT_TRUE(test, bitmap_empty(ctx->done, SIW_ZC_MAX));

	/* sequence numbers wrap around u32 */
	ctx->released = U32_MAX - 1;
	KUNIT_EXPECT_EQ(test, siw_zc_mark_released(ctx, U32_MAX), U32_MAX - 1);
	KUNIT_EXPECT_EQ(test, siw_zc_mark_released(ctx, U32_MAX - 1), 0U);
}

/* -------------------------------------------------- receive engine */

/*
 * A QP without a device or socket, enough for the RX engine: a DMA MR
 * over a buffer with guard bytes on both sides, a kernel RQ and CQ.
 */
#define RXT_BUF		4096
#define RXT_GUARD	64
#define RXT_STAG	0x00000a07	/* index 0xa, key 7 */

struct rxt {
	struct siw_device *sdev;
	struct siw_qp *qp;
	struct siw_cq *cq;
	struct siw_mr *mr;
	struct ib_pd *pd;
	u8 *mem;			/* guard, buffer, guard */
	u8 *buf;
	u8 stream[2048];
	u32 len;
};

static void rxt_exit(void *data)
{
	struct rxt *t = data;

	flush_work(&t->qp->tx_work);
	kfree_skb(t->qp->rx.stage);
	xa_erase(&t->sdev->qp_xa, t->qp->id);
	xa_erase(&t->sdev->mr_xa, RXT_STAG >> 8);
}

static struct rxt *rxt_new(struct kunit *test, bool crc)
{
	struct rxt *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	struct siw_qp *qp;

	KUNIT_ASSERT_NOT_NULL(test, t);
	t->sdev = siw_kunit_sdev(test);
	t->mr = kunit_kzalloc(test, sizeof(*t->mr), GFP_KERNEL);
	t->pd = kunit_kzalloc(test, sizeof(*t->pd), GFP_KERNEL);
	t->mem = kunit_kzalloc(test, RXT_BUF + 2 * RXT_GUARD, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->mr);
	KUNIT_ASSERT_NOT_NULL(test, t->pd);
	KUNIT_ASSERT_NOT_NULL(test, t->mem);
	memset(t->mem, 0x5a, RXT_BUF + 2 * RXT_GUARD);
	t->buf = t->mem + RXT_GUARD;

	xa_init(&t->sdev->mr_xa);

	/* the table's reference is never dropped: the test owns the MR */
	siw_mr_init(t->mr);
	t->mr->sdev = t->sdev;
	t->mr->type = SIW_MR_DMA;
	t->mr->stag = RXT_STAG;
	t->mr->valid = true;
	t->mr->pd = t->pd;
	t->mr->access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	t->mr->va = (uintptr_t)t->buf;
	t->mr->len = RXT_BUF;
	KUNIT_ASSERT_EQ(test,
			xa_err(xa_store(&t->sdev->mr_xa, RXT_STAG >> 8, t->mr,
					GFP_KERNEL)), 0);

	t->cq = siw_kunit_cq(test, 8);
	t->qp = siw_kunit_qp(test, t->sdev, t->pd, t->cq);
	qp = t->qp;
	qp->attrs.rq_size = 4;
	qp->attrs.rq_max_sges = 2;
	qp->attrs.ird = 2;
	qp->attrs.ord = 2;
	qp->attrs.crc = crc;
	/* what rdma_cm gives a kernel QP */
	qp->attrs.access = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	qp->recvq = kunit_kcalloc(test, qp->attrs.rq_size,
				  sizeof(*qp->recvq), GFP_KERNEL);
	qp->irq = kunit_kcalloc(test, 2, sizeof(*qp->irq), GFP_KERNEL);
	qp->irq_size = 2;
	KUNIT_ASSERT_NOT_NULL(test, qp->recvq);
	KUNIT_ASSERT_NOT_NULL(test, qp->irq);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rxt_exit, t), 0);
	return t;
}

/* Back to a fresh connection: parser, rings, CQ, buffer. */
static void rxt_reset(struct rxt *t)
{
	t->qp->attrs.state = SIW_QP_RTS;
	t->qp->term_pending = false;
	kfree_skb(t->qp->rx.stage);
	memset(&t->qp->rx, 0, sizeof(t->qp->rx));
	memset(t->qp->recvq, 0, t->qp->attrs.rq_size * sizeof(*t->qp->recvq));
	t->qp->rq_get = 0;
	memset(t->cq->queue, 0, t->cq->num_cqe * sizeof(*t->cq->queue));
	t->cq->put = 0;
	memset(t->mem, 0x5a, RXT_BUF + 2 * RXT_GUARD);
}

static void rxt_post_recv(struct rxt *t, u32 len)
{
	struct siw_rqe *rqe = &t->qp->recvq[0];

	rqe->id = 0x1234;
	rqe->num_sge = 1;
	rqe->sge[0].laddr = (uintptr_t)t->buf;
	rqe->sge[0].length = len;
	rqe->sge[0].lkey = RXT_STAG;
	WRITE_ONCE(rqe->flags, SIW_WQE_VALID);
}

/* Append one FPDU to the test stream, encoded here, not by the module. */
static void rxt_fpdu(struct rxt *t, const void *hdr, u32 hlen,
		     const u8 *pay, u32 plen, bool crc)
{
	u8 *f = t->stream + t->len;
	u32 ulpdu = hlen - MPA_HDR_SIZE + plen;
	u32 pad = (4 - ((ulpdu + 2) & 3)) & 3;
	__le32 c = 0;

	memcpy(f, hdr, hlen);
	f[0] = ulpdu >> 8;
	f[1] = ulpdu & 0xff;
	memcpy(f + hlen, pay, plen);
	memset(f + hlen + plen, 0, pad);
	if (crc)
		c = cpu_to_le32(~crc32c(~0U, f, hlen + plen + pad));
	memcpy(f + hlen + plen + pad, &c, 4);
	t->len += hlen + plen + pad + 4;
}

static void rxt_send(struct rxt *t, const u8 *pay, u32 plen, u32 msn,
		     u32 mo, bool last, bool crc)
{
	struct iwarp_untagged_hdr h = {
		.ctrl.ddp_rdmap = iwarp_mk_ctrl(RDMAP_SEND, false, last),
		.qn = cpu_to_be32(DDP_QN_SEND),
		.msn = cpu_to_be32(msn),
		.mo = cpu_to_be32(mo),
	};

	rxt_fpdu(t, &h, sizeof(h), pay, plen, crc);
}

static void rxt_write(struct rxt *t, const u8 *pay, u32 plen, u64 to,
		      bool crc)
{
	struct iwarp_tagged_hdr h = {
		.ctrl.ddp_rdmap = iwarp_mk_ctrl(RDMAP_WRITE, true, true),
		.stag = cpu_to_be32(RXT_STAG),
		.to = cpu_to_be64(to),
	};

	rxt_fpdu(t, &h, sizeof(h), pay, plen, crc);
}

/* Feed stream bytes [from, to) as one skb, as TCP would. */
static void rxt_feed(struct kunit *test, struct rxt *t, u32 from, u32 to)
{
	read_descriptor_t desc = { .arg.data = t->qp, .count = 1 };
	struct sk_buff *skb = alloc_skb(to - from, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_put_data(skb, t->stream + from, to - from);
	KUNIT_EXPECT_EQ(test, siw_rx_actor(&desc, skb, 0, to - from),
			(int)(to - from));
	kfree_skb(skb);
}

static bool rxt_untouched(struct rxt *t)
{
	return !memchr_inv(t->mem, 0x5a, RXT_BUF + 2 * RXT_GUARD);
}

static bool rxt_guards_ok(struct rxt *t)
{
	return !memchr_inv(t->mem, 0x5a, RXT_GUARD) &&
	       !memchr_inv(t->buf + RXT_BUF, 0x5a, RXT_GUARD);
}

static u8 rxt_payload[300];

/* A 300 byte Send in three FPDUs, checked after it was received. */
static void rxt_three_sends(struct rxt *t, bool crc)
{
	unsigned int i;

	for (i = 0; i < sizeof(rxt_payload); i++)
		rxt_payload[i] = i * 7 + 3;
	t->len = 0;
	rxt_send(t, rxt_payload, 100, 1, 0, false, crc);
	rxt_send(t, rxt_payload + 100, 100, 1, 100, false, crc);
	rxt_send(t, rxt_payload + 200, 100, 1, 200, true, crc);
}

static void rxt_expect_received(struct kunit *test, struct rxt *t)
{
	struct siw_cqe *cqe = &t->cq->queue[0];

	KUNIT_EXPECT_EQ(test, t->qp->rx.state, SIW_RX_HDR);
	KUNIT_EXPECT_TRUE(test, cqe->flags & SIW_WQE_VALID);
	KUNIT_EXPECT_EQ(test, cqe->id, 0x1234ULL);
	KUNIT_EXPECT_EQ(test, cqe->bytes, (u32)sizeof(rxt_payload));
	KUNIT_EXPECT_EQ(test, cqe->status, (u8)IB_WC_SUCCESS);
	KUNIT_EXPECT_MEMEQ(test, t->buf, rxt_payload, sizeof(rxt_payload));
	KUNIT_EXPECT_EQ(test, t->buf[sizeof(rxt_payload)], 0x5a);
	KUNIT_EXPECT_TRUE(test, rxt_guards_ok(t));
	KUNIT_EXPECT_FALSE(test, t->qp->term_pending);
}

/* Several FPDUs in one skb, with and without CRC. */
static void siw_test_rx_whole(struct kunit *test)
{
	int crc;

	for (crc = 0; crc < 2; crc++) {
		struct rxt *t = rxt_new(test, crc);

		rxt_post_recv(t, 1000);
		rxt_three_sends(t, crc);
		rxt_feed(test, t, 0, t->len);
		rxt_expect_received(test, t);
		KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_RX_FPDU), 3ULL);
	}
}

/* The same stream split into two skbs at every byte boundary. */
static void siw_test_rx_split(struct kunit *test)
{
	struct rxt *t = rxt_new(test, true);
	u32 cut;

	rxt_three_sends(t, true);
	for (cut = 1; cut < t->len; cut++) {
		rxt_reset(t);
		rxt_post_recv(t, 1000);
		rxt_feed(test, t, 0, cut);
		rxt_feed(test, t, cut, t->len);
		rxt_expect_received(test, t);
	}
	/* and one byte at a time */
	rxt_reset(t);
	rxt_post_recv(t, 1000);
	for (cut = 0; cut < t->len; cut++)
		rxt_feed(test, t, cut, cut + 1);
	rxt_expect_received(test, t);
}

/* A tagged Write lands exactly at its offset, nothing around it. */
static void siw_test_rx_write(struct kunit *test)
{
	struct rxt *t = rxt_new(test, true);
	u8 data[61];

	memset(data, 0xc3, sizeof(data));
	rxt_write(t, data, sizeof(data), (uintptr_t)t->buf + 1000, true);
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_MEMEQ(test, t->buf + 1000, data, sizeof(data));
	KUNIT_EXPECT_EQ(test, t->buf[999], 0x5a);
	KUNIT_EXPECT_EQ(test, t->buf[1000 + sizeof(data)], 0x5a);
	KUNIT_EXPECT_FALSE(test, t->qp->term_pending);
	KUNIT_EXPECT_NULL(test, t->qp->rx.ddp.target.mr);
}

/* What a bad FPDU must lead to: this Terminate, no completion. */
static void rxt_expect_term(struct kunit *test, struct rxt *t, u8 layer,
			    u8 etype, u8 ecode, enum siw_stat counter)
{
	KUNIT_EXPECT_EQ(test, t->qp->rx.state, SIW_RX_DEAD);
	KUNIT_EXPECT_TRUE(test, t->qp->term_pending);
	KUNIT_EXPECT_EQ(test, t->qp->attrs.state, SIW_QP_TERMINATE);
	KUNIT_EXPECT_EQ(test, t->qp->term_ctrl >> 16,
			term_mk_ctrl(layer, etype, ecode) >> 16);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, counter), 1ULL);
	KUNIT_EXPECT_FALSE(test, t->cq->queue[0].flags & SIW_WQE_VALID);
	KUNIT_EXPECT_TRUE(test, rxt_guards_ok(t));
}

static void siw_test_rx_bad_crc(struct kunit *test)
{
	struct rxt *t = rxt_new(test, true);

	rxt_post_recv(t, 1000);
	rxt_three_sends(t, true);
	t->stream[t->len - 10] ^= 1;	/* last FPDU's payload */
	rxt_feed(test, t, 0, t->len);
	rxt_expect_term(test, t, TERM_LAYER_LLP, 0, TERM_MPA_CRC,
			SIW_STAT_RX_CRC_ERR);
	/* the stream after the error is drained, not parsed */
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_RX_FPDU), 2ULL);
}

/*
 * With CRC, an FPDU is checked before a byte of it is placed: one split
 * over two skbs is staged, and refused with nothing written when its CRC
 * is wrong; a good one split at every byte lands exactly where it should.
 */
static void siw_test_rx_verify_first(struct kunit *test)
{
	struct rxt *t = rxt_new(test, true);
	u8 data[700];
	u32 cut, end;

	memset(data, 0xc3, sizeof(data));
	rxt_write(t, data, sizeof(data), (uintptr_t)t->buf + 8, true);
	t->stream[t->len - 100] ^= 0x10;
	rxt_feed(test, t, 0, t->len - 50);
	KUNIT_EXPECT_EQ(test, t->qp->rx.state, SIW_RX_VERIFY);
	KUNIT_EXPECT_TRUE(test, rxt_untouched(t));
	rxt_feed(test, t, t->len - 50, t->len);
	rxt_expect_term(test, t, TERM_LAYER_LLP, 0, TERM_MPA_CRC,
			SIW_STAT_RX_CRC_ERR);
	KUNIT_EXPECT_TRUE(test, rxt_untouched(t));

	t->stream[t->len - 100] ^= 0x10;
	end = t->len;
	for (cut = 1; cut < end; cut++) {
		rxt_reset(t);
		rxt_feed(test, t, 0, cut);
		rxt_feed(test, t, cut, end);
		KUNIT_EXPECT_EQ(test, t->qp->rx.state, SIW_RX_HDR);
		KUNIT_EXPECT_MEMEQ(test, t->buf + 8, data, sizeof(data));
		KUNIT_EXPECT_EQ(test, t->buf[7], 0x5a);
		KUNIT_EXPECT_EQ(test, t->buf[8 + sizeof(data)], 0x5a);
		KUNIT_EXPECT_TRUE(test, rxt_guards_ok(t));
		KUNIT_EXPECT_FALSE(test, t->qp->term_pending);
	}
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_RX_CRC_LATE), 0ULL);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_RX_CRC_ERR), 1ULL);
}

static void siw_test_rx_bad_headers(struct kunit *test)
{
	struct rxt *t = rxt_new(test, false);
	u8 data[64] = {};

	/* ULPDU shorter than the Send header */
	rxt_send(t, NULL, 0, 1, 0, true, false);
	t->stream[1] = 4;
	rxt_feed(test, t, 0, t->len);
	rxt_expect_term(test, t, TERM_LAYER_LLP, 0, TERM_MPA_FRAME,
			SIW_STAT_RX_PROTO_ERR);

	/* a message longer than the receive buffer */
	rxt_reset(t);
	t->len = 0;
	rxt_post_recv(t, 16);
	rxt_send(t, data, sizeof(data), 1, 0, true, false);
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_EQ(test, t->qp->term_ctrl >> 16,
			term_mk_ctrl(TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				     TERM_DDP_U_MSG_TOO_LONG) >> 16);
	KUNIT_EXPECT_EQ(test, t->buf[0], 0x5a);

	/* wrong MSN */
	rxt_reset(t);
	t->len = 0;
	rxt_post_recv(t, 100);
	rxt_send(t, data, 8, 2, 0, true, false);
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_EQ(test, t->qp->term_ctrl >> 16,
			term_mk_ctrl(TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				     TERM_DDP_U_INV_MSN_RANGE) >> 16);

	/* unknown opcode 9 */
	rxt_reset(t);
	t->len = 0;
	rxt_send(t, data, 8, 1, 0, true, false);
	t->stream[3] = (t->stream[3] & 0xf0) | 9;
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_EQ(test, t->qp->term_ctrl >> 16,
			term_mk_ctrl(TERM_LAYER_RDMAP,
				     TERM_RDMAP_ETYPE_REMOTE_OP,
				     TERM_RDMAP_OPCODE) >> 16);

	/* DDP version 2 */
	rxt_reset(t);
	t->len = 0;
	rxt_send(t, data, 8, 1, 0, true, false);
	t->stream[2] = (t->stream[2] & ~0x03) | 0x02;
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_EQ(test, t->qp->term_ctrl >> 16,
			term_mk_ctrl(TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				     TERM_DDP_U_VERSION) >> 16);

	/* Write outside the MR, by one byte */
	rxt_reset(t);
	t->len = 0;
	rxt_write(t, data, 8, (uintptr_t)t->buf + RXT_BUF - 7, false);
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_EQ(test, t->qp->term_ctrl >> 16,
			term_mk_ctrl(TERM_LAYER_DDP, TERM_DDP_ETYPE_TAGGED,
				     TERM_DDP_T_BASE_BOUNDS) >> 16);
	KUNIT_EXPECT_TRUE(test, rxt_guards_ok(t));
	KUNIT_EXPECT_EQ(test, t->buf[RXT_BUF - 7], 0x5a);

	/* a Terminate longer than anything we quote */
	rxt_reset(t);
	t->len = 0;
	rxt_send(t, data, 8, 1, 0, true, false);
	t->stream[3] = (t->stream[3] & 0xf0) | RDMAP_TERMINATE;
	t->stream[0] = 0xff;
	t->stream[1] = 0xff;
	rxt_feed(test, t, 0, t->len);
	KUNIT_EXPECT_EQ(test, t->qp->term_ctrl >> 16,
			term_mk_ctrl(TERM_LAYER_LLP, 0, TERM_MPA_FRAME) >> 16);
}

/* ------------------------------------------------ QP state machine */

static void siw_test_qp_states(struct kunit *test)
{
	struct rxt *t = rxt_new(test, false);
	struct siw_llp_params p = { .ird = 4, .ord = 4 };
	struct siw_qp *qp = t->qp;

	qp->attrs.state = SIW_QP_IDLE;
	qp->attrs.sq_size = 4;
	qp->sendq = kunit_kcalloc(test, 4, sizeof(*qp->sendq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->sendq);
	qp->irq = NULL;
	KUNIT_EXPECT_EQ(test, siw_qp_ib_state(qp), IB_QPS_INIT);

	KUNIT_ASSERT_EQ(test, siw_qp_to_rts(qp, &p), 0);
	KUNIT_EXPECT_EQ(test, qp->attrs.state, SIW_QP_RTS);
	KUNIT_EXPECT_EQ(test, siw_qp_ib_state(qp), IB_QPS_RTS);
	KUNIT_EXPECT_EQ(test, qp->attrs.ird, 4U);
	/* only an idle QP connects */
	KUNIT_EXPECT_EQ(test, siw_qp_to_rts(qp, &p), -EINVAL);

	siw_qp_close_graceful(qp);
	KUNIT_EXPECT_EQ(test, qp->attrs.state, SIW_QP_CLOSING);
	KUNIT_EXPECT_EQ(test, siw_qp_ib_state(qp), IB_QPS_SQD);

	siw_term_set(qp, TERM_LAYER_RDMAP, TERM_RDMAP_ETYPE_REMOTE_OP,
		     TERM_RDMAP_OPCODE, NULL, 0);
	KUNIT_EXPECT_EQ(test, qp->attrs.state, SIW_QP_TERMINATE);
	KUNIT_EXPECT_TRUE(test, qp->term_pending);
	KUNIT_EXPECT_EQ(test, siw_qp_ib_state(qp), IB_QPS_SQE);

	siw_qp_to_error(qp);
	KUNIT_EXPECT_EQ(test, qp->attrs.state, SIW_QP_ERROR);
	KUNIT_EXPECT_EQ(test, siw_qp_ib_state(qp), IB_QPS_ERR);
	/* only the first error is reported */
	qp->term_pending = false;
	siw_term_set(qp, TERM_LAYER_DDP, 0, 0, NULL, 0);
	KUNIT_EXPECT_FALSE(test, qp->term_pending);
	KUNIT_EXPECT_EQ(test, qp->attrs.state, SIW_QP_ERROR);

	flush_work(&qp->tx_work);
	siw_qp_free(qp);
}

/* One FPDU of a Read Response into the test buffer at offset @off. */
static void rxt_rresp(struct rxt *t, const u8 *pay, u32 plen, u32 off,
		      bool last)
{
	struct iwarp_tagged_hdr h = {
		.ctrl.ddp_rdmap = iwarp_mk_ctrl(RDMAP_READ_RESP, true, last),
		.stag = cpu_to_be32(RXT_STAG),
		.to = cpu_to_be64((uintptr_t)t->buf + off),
	};

	rxt_fpdu(t, &h, sizeof(h), pay, plen, false);
}

/*
 * ib_drain_qp() while the response to one of our Reads is half
 * received: the Read has left the ORQ and is the receiver's. Moving to
 * ERROR and running the transmitter's flush must complete nothing
 * posted after it (a Send done behind it, the drain WR) before it;
 * the rest of the response places no byte; the connection's close
 * flushes the Read, then the Send and the drain WR follow in order.
 */
static void siw_test_drain_held_read(struct kunit *test)
{
	struct rxt *t = rxt_new(test, false);
	struct siw_llp_params p = { .ird = 2, .ord = 2 };
	struct siw_qp *qp = t->qp;
	struct siw_wqe *w = &qp->tx.sq_wqe, send = {};
	static const u64 ids[] = { 0x11, 0x22, 0x33 };
	static const u8 st[] = { IB_WC_WR_FLUSH_ERR, IB_WC_SUCCESS,
				 IB_WC_WR_FLUSH_ERR };
	unsigned int i;

	for (i = 0; i < sizeof(rxt_payload); i++)
		rxt_payload[i] = i * 5 + 1;
	qp->attrs.state = SIW_QP_IDLE;
	qp->attrs.sq_size = 4;
	qp->sendq = kunit_kcalloc(test, 4, sizeof(*qp->sendq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp->sendq);
	qp->irq = NULL;
	KUNIT_ASSERT_EQ(test, siw_qp_to_rts(qp, &p), 0);

	/* our signalled Read of 200 bytes into the buffer goes out */
	w->sqe.id = ids[0];
	w->sqe.opcode = SIW_OP_READ;
	w->sqe.flags = SIW_WQE_SIGNALLED;
	w->sqe.num_sge = 1;
	w->sqe.sge[0].laddr = (uintptr_t)t->buf;
	w->sqe.sge[0].length = 200;
	w->sqe.sge[0].lkey = RXT_STAG;
	w->bytes = 200;
	w->mr[0] = siw_mr_lookup(t->sdev, RXT_STAG);
	KUNIT_ASSERT_NOT_NULL(test, w->mr[0]);
	w->active = true;
	KUNIT_ASSERT_EQ(test, siw_rdmap_tx_start(qp, w), 0);
	/* a Send posted after it is done: its completion waits */
	send.sqe.id = ids[1];
	send.sqe.opcode = SIW_OP_SEND;
	send.sqe.flags = SIW_WQE_SIGNALLED;
	siw_sq_complete(qp, &send, IB_WC_SUCCESS, 8);
	KUNIT_EXPECT_EQ(test, t->cq->put, 0U);

	/* the first half of the response arrives */
	t->len = 0;
	rxt_rresp(t, rxt_payload, 100, 0, false);
	rxt_rresp(t, rxt_payload + 100, 100, 100, true);
	rxt_feed(test, t, 0, 100 + 16 + 4);
	KUNIT_EXPECT_TRUE(test, qp->rx.rdmap.rresp.active);
	KUNIT_EXPECT_MEMEQ(test, t->buf, rxt_payload, 100);

	/* ib_drain_qp(): to ERROR, the drain WR, the transmitter flushes */
	qp->sendq[0].id = ids[2];
	qp->sendq[0].opcode = SIW_OP_SEND;
	WRITE_ONCE(qp->sendq[0].flags, SIW_WQE_VALID | SIW_WQE_SIGNALLED);
	siw_qp_set_state_error(qp);
	siw_tx_sync(qp);
	KUNIT_EXPECT_EQ_MSG(test, t->cq->put, 0U,
			    "completed before the Read the receiver holds");

	/* the rest of the response: nothing placed in ERROR */
	rxt_feed(test, t, 100 + 16 + 4, t->len);
	KUNIT_EXPECT_EQ(test, t->buf[100], 0x5a);
	KUNIT_EXPECT_EQ(test, t->buf[199], 0x5a);
	KUNIT_EXPECT_EQ(test, t->cq->put, 0U);

	/* the close flushes the receiver, then the transmitter */
	siw_rdmap_rx_flush(qp);
	siw_tx_sync(qp);
	KUNIT_ASSERT_EQ(test, t->cq->put, 3U);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, t->cq->queue[i].id, ids[i]);
		KUNIT_EXPECT_EQ(test, t->cq->queue[i].status, st[i]);
	}
	KUNIT_EXPECT_FALSE(test, qp->rx.rdmap.rresp.active);
	KUNIT_EXPECT_TRUE(test, rxt_guards_ok(t));

	flush_work(&qp->tx_work);
	siw_qp_free(qp);
}

static struct kunit_case siw_rx_cases[] = {
	KUNIT_CASE(siw_test_rx_whole),
	KUNIT_CASE(siw_test_rx_split),
	KUNIT_CASE(siw_test_rx_write),
	KUNIT_CASE(siw_test_rx_bad_crc),
	KUNIT_CASE(siw_test_rx_verify_first),
	KUNIT_CASE(siw_test_rx_bad_headers),
	{}
};

static struct kunit_suite siw_rx_suite = {
	.name = "siw_rx_parser",
	.test_cases = siw_rx_cases,
};

/*
 * The doorbell's hand-over picks a CPU the poster may run on: a poster
 * pinned to its own CPU (or one whose cpuset holds no other) keeps its
 * stream off the others, and one with a second CPU gets that one.
 */
static void siw_test_hand_cpu(struct kunit *test)
{
	unsigned int self = cpumask_first(cpu_online_mask);
	unsigned int other = cpumask_last(cpu_online_mask);
	cpumask_var_t two;
	int cpu;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs, has %u", num_online_cpus());
	if (!housekeeping_test_cpu(other, HK_TYPE_WQ) ||
	    !housekeeping_test_cpu(other, HK_TYPE_DOMAIN))
		kunit_skip(test, "CPU %u is isolated here", other);
	KUNIT_ASSERT_TRUE(test, zalloc_cpumask_var(&two, GFP_KERNEL));

	/* pinned: no other CPU */
	KUNIT_EXPECT_EQ(test, siw_qp_hand_cpu(self, cpumask_of(self)), -1);
	/* another CPU allowed: that one, never the poster's */
	cpumask_set_cpu(self, two);
	cpumask_set_cpu(other, two);
	KUNIT_EXPECT_EQ(test, siw_qp_hand_cpu(self, two), (int)other);
	KUNIT_EXPECT_EQ(test, siw_qp_hand_cpu(other, two), (int)self);
	/* allowed only elsewhere (a cpuset moved the poster): still there */
	KUNIT_EXPECT_EQ(test, siw_qp_hand_cpu(self, cpumask_of(other)),
			(int)other);
	/* no task restriction: any online CPU but the poster's */
	cpu = siw_qp_hand_cpu(self, cpu_online_mask);
	KUNIT_EXPECT_NE(test, cpu, (int)self);
	KUNIT_EXPECT_TRUE(test, cpu >= 0 && cpu_online(cpu));
	free_cpumask_var(two);
}

static struct kunit_case siw_qp_cases[] = {
	KUNIT_CASE(siw_test_qp_states),
	KUNIT_CASE(siw_test_drain_held_read),
	KUNIT_CASE(siw_test_hand_cpu),
	{}
};

static struct kunit_suite siw_qp_suite = {
	.name = "siw_qp_state",
	.test_cases = siw_qp_cases,
};

static struct kunit_case siw_mpa_cases[] = {
	KUNIT_CASE(siw_test_mpa_pad),
	KUNIT_CASE(siw_test_crc32c_vectors),
	KUNIT_CASE(siw_test_crc32c_incremental),
	KUNIT_CASE(siw_test_segmentation),
	KUNIT_CASE(siw_test_mpa_hdr_check),
	KUNIT_CASE(siw_test_mpa_decode),
	KUNIT_CASE(siw_test_mpa_crc_decide),
	KUNIT_CASE(siw_test_mpa_irdord),
	{}
};

static struct kunit_suite siw_mpa_suite = {
	.name = "siw_mpa_framing",
	.test_cases = siw_mpa_cases,
};

static struct kunit_case siw_zc_cases[] = {
	KUNIT_CASE(siw_test_zc_release_order),
	{}
};

static struct kunit_suite siw_zc_suite = {
	.name = "siw_zcopy_release",
	.test_cases = siw_zc_cases,
};

static struct kunit_case siw_ddp_cases[] = {
	KUNIT_CASE(siw_test_ctrl_bits),
	KUNIT_CASE(siw_test_hdr_sizes),
	KUNIT_CASE(siw_test_op_table),
	KUNIT_CASE(siw_test_tagged_hdr),
	KUNIT_CASE(siw_test_untagged_hdr),
	KUNIT_CASE(siw_test_mpa_frame),
	KUNIT_CASE(siw_test_mr_bounds),
	{}
};

static struct kunit_suite siw_ddp_suite = {
	.name = "siw_ddp_rdmap_headers",
	.test_cases = siw_ddp_cases,
};

kunit_test_suites(&siw_mpa_suite, &siw_ddp_suite, &siw_zc_suite,
		  &siw_rx_suite, &siw_qp_suite);

MODULE_DESCRIPTION("KUnit tests for siw protocol logic");
MODULE_LICENSE("Dual BSD/GPL");
