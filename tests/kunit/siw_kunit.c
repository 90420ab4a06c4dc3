// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KUnit suites for siw's pure protocol logic: MPA framing arithmetic and
 * CRC, DDP/RDMAP header encoding, segmentation of messages into FPDUs,
 * STag/offset bounds checks and MPA request/reply negotiation.
 * Load siw.ko first, then this module; results in debugfs/kunit.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/crc32c.h>
#include <linux/string.h>

#include "siw.h"

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
			u32 hlen = siw_ddp_hdr_len(RDMAP_WRITE);
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
	KUNIT_EXPECT_EQ(test, siw_ddp_hdr_len(RDMAP_WRITE), 14U);
	KUNIT_EXPECT_EQ(test, siw_ddp_hdr_len(RDMAP_READ_RESP), 14U);
	KUNIT_EXPECT_EQ(test, siw_ddp_hdr_len(RDMAP_SEND), 18U);
	KUNIT_EXPECT_EQ(test, siw_ddp_hdr_len(RDMAP_TERMINATE), 18U);
	KUNIT_EXPECT_EQ(test, siw_ddp_hdr_len(RDMAP_READ_REQ), 46U);
}

static void siw_test_tagged_hdr(struct kunit *test)
{
	static const u8 want[] = {
		0x04, 0x02,		/* ULPDU 14 + 1012 */
		0xc1, 0x40,		/* T L DV=1 RV=1 Write */
		0x12, 0x34, 0x56, 0x78,	/* STag */
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x64, /* TO */
	};
	struct siw_tx *tx = kunit_kzalloc(test, sizeof(*tx), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, tx);
	tx->op = RDMAP_WRITE;
	tx->stag = 0x12345678;
	tx->to = 0x100001000ULL;
	tx->msg_off = 100;
	siw_ddp_tx_hdr(tx, 1012, true);
	KUNIT_EXPECT_EQ(test, tx->hdr_len, sizeof(want));
	KUNIT_EXPECT_MEMEQ(test, tx->hdr, want, sizeof(want));
}

static void siw_test_untagged_hdr(struct kunit *test)
{
	static const u8 want[] = {
		0x00, 0x1a,		/* ULPDU 18 + 8 */
		0x01, 0x46,		/* DV=1 RV=1 Send+SE+Inval, not last */
		0xca, 0xfe, 0xf0, 0x0d,	/* STag to invalidate */
		0x00, 0x00, 0x00, 0x00,	/* QN 0 */
		0x00, 0x00, 0x00, 0x07,	/* MSN */
		0x00, 0x00, 0x10, 0x00,	/* MO */
	};
	struct siw_tx *tx = kunit_kzalloc(test, sizeof(*tx), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, tx);
	tx->op = RDMAP_SEND_SE_INVAL;
	tx->inval = 0xcafef00d;
	tx->qn = DDP_QN_SEND;
	tx->msn = 7;
	tx->msg_off = 4096;
	siw_ddp_tx_hdr(tx, 8, false);
	KUNIT_EXPECT_EQ(test, tx->hdr_len, sizeof(want));
	KUNIT_EXPECT_MEMEQ(test, tx->hdr, want, sizeof(want));
}

/* ----------------------------------------------------- STag bounds */

static void siw_test_mr_bounds(struct kunit *test)
{
	struct siw_mr *mr = kunit_kzalloc(test, sizeof(*mr), GFP_KERNEL);
	struct ib_pd *pd = kunit_kzalloc(test, sizeof(*pd), GFP_KERNEL);
	struct ib_pd *other = kunit_kzalloc(test, sizeof(*other), GFP_KERNEL);
	int rw = IB_ACCESS_REMOTE_WRITE;

	KUNIT_ASSERT_NOT_NULL(test, mr);
	KUNIT_ASSERT_NOT_NULL(test, pd);
	KUNIT_ASSERT_NOT_NULL(test, other);
	mr->type = SIW_MR_USER;
	mr->valid = true;
	mr->pd = pd;
	mr->access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	mr->va = 0x10000;
	mr->len = 0x1000;

	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, rw, 0x10000, 0x1000, true),
			SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, rw, 0x10fff, 1, true),
			SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, rw, 0x11000, 0, true),
			SIW_ACC_OK);
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, rw, 0x10fff, 2, true),
			SIW_ACC_BOUNDS);
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, rw, 0xffff, 1, true),
			SIW_ACC_BOUNDS);
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, rw, ~0ULL, 2, true),
			SIW_ACC_WRAP);
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, IB_ACCESS_REMOTE_READ,
					   0x10000, 1, true), SIW_ACC_RIGHTS);
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, other, rw, 0x10000, 1, true),
			SIW_ACC_PD);
	mr->valid = false;
	KUNIT_EXPECT_EQ(test, siw_mr_check(mr, pd, rw, 0x10000, 1, true),
			SIW_ACC_STAG);
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

static struct kunit_case siw_mpa_cases[] = {
	KUNIT_CASE(siw_test_mpa_pad),
	KUNIT_CASE(siw_test_crc32c_vectors),
	KUNIT_CASE(siw_test_crc32c_incremental),
	KUNIT_CASE(siw_test_segmentation),
	KUNIT_CASE(siw_test_mpa_hdr_check),
	KUNIT_CASE(siw_test_mpa_decode),
	KUNIT_CASE(siw_test_mpa_crc_decide),
	KUNIT_CASE(siw_test_mpa_irdord),
	KUNIT_CASE(siw_test_zc_release_order),
	{}
};

static struct kunit_suite siw_mpa_suite = {
	.name = "siw_mpa",
	.test_cases = siw_mpa_cases,
};

static struct kunit_case siw_ddp_cases[] = {
	KUNIT_CASE(siw_test_ctrl_bits),
	KUNIT_CASE(siw_test_hdr_sizes),
	KUNIT_CASE(siw_test_tagged_hdr),
	KUNIT_CASE(siw_test_untagged_hdr),
	KUNIT_CASE(siw_test_mr_bounds),
	{}
};

static struct kunit_suite siw_ddp_suite = {
	.name = "siw_ddp",
	.test_cases = siw_ddp_cases,
};

kunit_test_suites(&siw_mpa_suite, &siw_ddp_suite);

MODULE_DESCRIPTION("KUnit tests for siw protocol logic");
MODULE_LICENSE("Dual BSD/GPL");
