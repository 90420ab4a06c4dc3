// SPDX-License-Identifier: GPL-2.0
/*
 * siw_objects: verbs object boundaries over plain libibverbs.
 *   siw_objects -d siw0 [-x]
 *   -x: exhaust every object limit the device reports instead (PDs, CQs,
 *       MRs, QPs, SRQs; meant for a device created with a small
 *       max_objects): exactly the limit can be created, one more fails
 *       with ENOMEM, and after freeing one the next succeeds.
 * One line per check: "ok - ..." / "FAIL - ..."; "# ..." are notes.
 * Exit status 1 if any check failed.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <unistd.h>
#include <signal.h>
#include <sys/mman.h>
#include <rdma/siw-abi.h>

static struct ibv_context *ctx;
static struct ibv_device_attr da;
static struct ibv_port_attr pa;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static int iwarp;

static const char *errname(int e)
{
	switch (e) {
	case EINVAL:
		return "EINVAL";
	case ENOMEM:
		return "ENOMEM";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case EPERM:
		return "EPERM";
	case EFAULT:
		return "EFAULT";
	case ENOSYS:
		return "ENOSYS";
	case EAGAIN:
		return "EAGAIN";
	case 0:
		return "no errno";
	default:
		return strerror(e);
	}
}

/* expect a failure; EINVAL preferred, other errnos reported */
static void expect_einval(int failed, int err, const char *what)
{
	if (!failed)
		FAIL("%s: succeeded, must fail", what);
	else if (err == EINVAL)
		OK("%s: fails with EINVAL", what);
	else
		OK("%s: fails with %s (EINVAL expected; reported)", what, errname(err));
}

static void t_query(void)
{
	if (ibv_query_device(ctx, &da))
		DIE("ibv_query_device: %s", strerror(errno));
	OK("query device: max_qp %d max_qp_wr %d max_sge %d max_sge_rd %d max_cq %d max_cqe %d max_mr %d max_mr_size 0x%llx max_pd %d max_qp_rd_atom %d max_qp_init_rd_atom %d max_srq %d max_srq_wr %d max_srq_sge %d phys_port_cnt %d atomic_cap %d",
	   da.max_qp, da.max_qp_wr, da.max_sge, da.max_sge_rd, da.max_cq, da.max_cqe, da.max_mr,
	   (unsigned long long)da.max_mr_size, da.max_pd, da.max_qp_rd_atom, da.max_qp_init_rd_atom,
	   da.max_srq, da.max_srq_wr, da.max_srq_sge, da.phys_port_cnt, da.atomic_cap);
	CHECK(da.max_qp > 0 && da.max_qp_wr > 0 && da.max_sge > 0 && da.max_cq > 0 &&
	      da.max_cqe > 0 &&
	      da.max_mr > 0 && da.max_mr_size > 0 && da.max_pd > 0 && da.max_qp_rd_atom > 0 &&
	      da.max_qp_init_rd_atom > 0 && da.phys_port_cnt >= 1,
	      "device limits are non-zero");
	if (ibv_query_port(ctx, 1, &pa))
		FAIL("ibv_query_port(1): %s", strerror(errno));
	else
		OK("query port 1: state %s max_mtu %d active_mtu %d gid_tbl_len %d link_layer %d",
		   ibv_port_state_str(pa.state), pa.max_mtu, pa.active_mtu, pa.gid_tbl_len,
		   pa.link_layer);
	CHECK(pa.state == IBV_PORT_ACTIVE, "port 1 is ACTIVE");
	union ibv_gid gid;

	CHECK(!ibv_query_gid(ctx, 1, 0, &gid), "query gid 0");
	iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	NOTE("transport %s, node type %s", iwarp ? "iWARP" : "other",
	     ibv_node_type_str(ctx->device->node_type));
	if (iwarp)
		CHECK(da.atomic_cap == IBV_ATOMIC_NONE, "atomic_cap is NONE (siw has no atomics)");
}

static void t_pd(void)
{
	struct ibv_pd *p = ibv_alloc_pd(ctx);

	CHECK(p, "alloc PD");
	if (p)
		CHECK(!ibv_dealloc_pd(p), "dealloc PD");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		DIE("alloc PD");
	/* number of PDs */
	int n = da.max_pd <= 4096 ? da.max_pd - 1 : 1024;
	struct ibv_pd **v = calloc((size_t)n + 1, sizeof(*v));
	int got = 0;

	for (; got < n; got++) {
		v[got] = ibv_alloc_pd(ctx);
		if (!v[got])
			break;
	}
	if (da.max_pd <= 4096) {
		CHECK(got == n, "allocated max_pd=%d PDs (got %d + 1)", da.max_pd, got);
		struct ibv_pd *x = ibv_alloc_pd(ctx);

		if (x) {
			NOTE("PD number %d (> max_pd) was allocated: limit not enforced",
			     da.max_pd + 1);
			ibv_dealloc_pd(x);
		} else {
			OK("PD beyond max_pd refused (%s)", errname(errno));
		}
	} else {
		CHECK(got == n, "allocated %d PDs (max_pd %d too large to exhaust)", got,
		      da.max_pd);
	}
	int bad = 0;

	for (int k = 0; k < got; k++)
		bad |= ibv_dealloc_pd(v[k]);
	CHECK(!bad, "deallocated %d PDs", got);
	free(v);
}

static void t_cq(void)
{
	struct ibv_cq *c;

	c = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	CHECK(c, "CQ cqe=1 (%s)", c ? "ok" : errname(errno));
	if (c) {
		CHECK(c->cqe >= 1, "CQ cqe=1 reports cqe %d >= 1", c->cqe);
		ibv_destroy_cq(c);
	}
	c = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
	CHECK(c, "CQ cqe=max_cqe=%d (%s)", da.max_cqe, c ? "ok" : errname(errno));
	if (c) {
		CHECK(c->cqe >= da.max_cqe, "CQ max_cqe reports cqe %d", c->cqe);
		ibv_destroy_cq(c);
	}
	/*
	 * A depth that is not a power of 2 is rounded up to one, and the
	 * CQ says so: libsiw indexes the ring with the depth it is told,
	 * and only a power of 2 wraps at 2^32 without a false overflow.
	 */
	for (int i = 0; i < 3; i++) {
		static const int ask[] = { 1000, 65, 3 };

		c = ibv_create_cq(ctx, ask[i], NULL, NULL, 0);
		CHECK(c, "CQ cqe=%d (%s)", ask[i], c ? "ok" : errname(errno));
		if (!c)
			continue;
		CHECK(c->cqe >= ask[i] && !(c->cqe & (c->cqe - 1)),
		      "CQ cqe=%d reports cqe %d, a power of 2", ask[i], c->cqe);
		ibv_destroy_cq(c);
	}
	errno = 0;
	c = ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0);
	expect_einval(!c, errno, "CQ cqe=max_cqe+1");
	if (c)
		ibv_destroy_cq(c);
	errno = 0;
	c = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	NOTE("CQ cqe=0: %s", c ? "created" : errname(errno));
	if (c)
		ibv_destroy_cq(c);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!cq)
		DIE("create CQ 256");

	/* arming and completion channel */
	struct ibv_comp_channel *chn = ibv_create_comp_channel(ctx);

	CHECK(chn, "create completion channel");
	if (!chn)
		return;
	c = ibv_create_cq(ctx, 16, NULL, chn, 0);
	CHECK(c, "CQ with completion channel");
	if (c) {
		CHECK(!ibv_req_notify_cq(c, 0), "req_notify_cq solicited_only=0");
		CHECK(!ibv_req_notify_cq(c, 1), "req_notify_cq solicited_only=1");
		CHECK(!ibv_req_notify_cq(c, 0), "req_notify_cq re-arm");
		struct pollfd pfd = { .fd = chn->fd, .events = POLLIN };
		int r = poll(&pfd, 1, 200);

		CHECK(r == 0, "no CQ event within 200 ms with nothing posted (poll=%d)", r);
		CHECK(!ibv_destroy_cq(c), "destroy armed CQ");
	}
	CHECK(!ibv_destroy_comp_channel(chn), "destroy completion channel");
}

static struct ibv_qp *mkqp(enum ibv_qp_type t, int swr, int rwr, int ssge, int rsge, int inl,
			   struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = { 0 };

	a.qp_type = t;
	a.send_cq = cq;
	a.recv_cq = cq;
	a.srq = srq;
	a.cap.max_send_wr = (uint32_t)swr;
	a.cap.max_recv_wr = (uint32_t)rwr;
	a.cap.max_send_sge = (uint32_t)ssge;
	a.cap.max_recv_sge = (uint32_t)rsge;
	a.cap.max_inline_data = (uint32_t)inl;
	errno = 0;
	return ibv_create_qp(pd, &a);
}

static int inl_ok(int n)
{
	struct ibv_qp *q = mkqp(IBV_QPT_RC, 4, 4, 1, 1, n, NULL);

	if (q)
		ibv_destroy_qp(q);
	return !!q;
}

static void t_qp(void)
{
	struct ibv_qp *q;
	int W = da.max_qp_wr, G = da.max_sge;

	q = mkqp(IBV_QPT_RC, 1, 1, 1, 1, 0, NULL);
	CHECK(q, "RC QP minimal (%s)", q ? "ok" : errname(errno));
	if (q)
		CHECK(!ibv_destroy_qp(q), "destroy RC QP");
	q = mkqp(IBV_QPT_RC, W, 1, 1, 1, 0, NULL);
	CHECK(q, "RC QP max_send_wr=max_qp_wr=%d (%s)", W, q ? "ok" : errname(errno));
	if (q)
		ibv_destroy_qp(q);
	q = mkqp(IBV_QPT_RC, 1, W, 1, 1, 0, NULL);
	CHECK(q, "RC QP max_recv_wr=max_qp_wr=%d (%s)", W, q ? "ok" : errname(errno));
	if (q)
		ibv_destroy_qp(q);
	q = mkqp(IBV_QPT_RC, W + 1, 1, 1, 1, 0, NULL);
	expect_einval(!q, errno, "RC QP max_send_wr=max_qp_wr+1");
	if (q)
		ibv_destroy_qp(q);
	q = mkqp(IBV_QPT_RC, 1, W + 1, 1, 1, 0, NULL);
	expect_einval(!q, errno, "RC QP max_recv_wr=max_qp_wr+1");
	if (q)
		ibv_destroy_qp(q);
	q = mkqp(IBV_QPT_RC, 4, 4, G, G, 0, NULL);
	CHECK(q, "RC QP send/recv sge=max_sge=%d (%s)", G, q ? "ok" : errname(errno));
	if (q)
		ibv_destroy_qp(q);
	q = mkqp(IBV_QPT_RC, 4, 4, G + 1, 1, 0, NULL);
	expect_einval(!q, errno, "RC QP max_send_sge=max_sge+1");
	if (q)
		ibv_destroy_qp(q);
	q = mkqp(IBV_QPT_RC, 4, 4, 1, G + 1, 0, NULL);
	expect_einval(!q, errno, "RC QP max_recv_sge=max_sge+1");
	if (q)
		ibv_destroy_qp(q);

	/* max inline: not a device attribute; find the largest accepted */
	int lo = 0, hi = 1 << 16;

	if (inl_ok(hi)) {
		NOTE("inline %d accepted: no inline limit found", hi);
	} else {
		while (hi - lo > 1) {
			int mid = (lo + hi) / 2;

			if (inl_ok(mid))
				lo = mid; else hi = mid;
		}
		NOTE("largest accepted max_inline_data: %d", lo);
		if (iwarp && !strncmp(ibv_get_device_name(ctx->device), "siw", 3))
			CHECK(lo == (int)SIW_MAX_INLINE,
			      "max_inline_data limit == SIW_MAX_INLINE (%d): works, +1 fails",
			      (int)SIW_MAX_INLINE);
		else
			CHECK(lo > 0, "max_inline_data %d works, %d fails", lo, lo + 1);
	}
	q = mkqp(IBV_QPT_RC, 4, 4, 1, 1, 0, NULL);
	if (q) {
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		CHECK(!ibv_query_qp(q, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi), "query fresh QP");
		/* verbs say RESET; iWARP providers (the kernel's siw) report INIT
		 * for a fresh QP: both accepted, reported
		 */
		CHECK(qa.qp_state == IBV_QPS_RESET || qa.qp_state == IBV_QPS_INIT,
		      "fresh QP state RESET or INIT (%d%s)", qa.qp_state,
		      qa.qp_state == IBV_QPS_INIT ? ": INIT" : "");
		ibv_destroy_qp(q);
	}
	/* unsupported QP types */
	q = mkqp(IBV_QPT_UD, 4, 4, 1, 1, 0, NULL);
	if (iwarp) {
		CHECK(!q && (errno == EOPNOTSUPP || errno == EINVAL), "UD QP refused (%s)",
		      q ? "created!" : errname(errno));
	} else {
		NOTE("UD QP on non-iWARP device: %s", q ? "created" : errname(errno));
	}
	if (q)
		ibv_destroy_qp(q);
	q = mkqp(IBV_QPT_UC, 4, 4, 1, 1, 0, NULL);
	if (iwarp) {
		CHECK(!q && (errno == EOPNOTSUPP || errno == EINVAL), "UC QP refused (%s)",
		      q ? "created!" : errname(errno));
	} else {
		NOTE("UC QP on non-iWARP device: %s", q ? "created" : errname(errno));
	}
	if (q)
		ibv_destroy_qp(q);

	/* many QPs */
	int n = da.max_qp < 256 ? da.max_qp : 256, got = 0;
	struct ibv_qp **v = calloc((size_t)n, sizeof(*v));

	for (; got < n; got++) {
		v[got] = mkqp(IBV_QPT_RC, 2, 2, 1, 1, 0, NULL);
		if (!v[got])
			break;
	}
	if (got < n)
		NOTE("QP number %d failed: %s", got + 1, errname(errno));
	CHECK(got >= (n < 16 ? n : 16),
	      "created %d of %d RC QPs at once (max_qp %d; >= 16 required)", got, n, da.max_qp);
	uint32_t dup = 0;

	for (int a = 0; a < got; a++)
		for (int b = a + 1; b < got; b++)
			if (v[a]->qp_num == v[b]->qp_num)
				dup++;
	CHECK(dup == 0, "QP numbers are distinct (%u duplicates)", dup);
	for (int k = 0; k < got; k++)
		ibv_destroy_qp(v[k]);
	free(v);
}

static void t_srq(void)
{
	struct ibv_srq *s;
	struct ibv_srq_init_attr sa;

	if (!da.max_srq) {
		NOTE("device has no SRQ support (max_srq 0)");
		return;
	}
#define MKSRQ(w, g) (memset(&sa, 0, sizeof(sa)), sa.attr.max_wr = (uint32_t)(w), \
		     sa.attr.max_sge = (uint32_t)(g), errno = 0, ibv_create_srq(pd, &sa))
	s = MKSRQ(da.max_srq_wr, da.max_srq_sge);
	CHECK(s, "SRQ max_wr=max_srq_wr=%d max_sge=max_srq_sge=%d (%s)", da.max_srq_wr,
	      da.max_srq_sge,
	      s ? "ok" : errname(errno));
	if (s)
		ibv_destroy_srq(s);
	s = MKSRQ(da.max_srq_wr + 1, 1);
	expect_einval(!s, errno, "SRQ max_wr=max_srq_wr+1");
	if (s)
		ibv_destroy_srq(s);
	s = MKSRQ(16, da.max_srq_sge + 1);
	expect_einval(!s, errno, "SRQ max_sge=max_srq_sge+1");
	if (s)
		ibv_destroy_srq(s);

	s = MKSRQ(64, 1);
	if (!s) {
		FAIL("SRQ 64: %s", errname(errno));
		return;
	}
	struct ibv_srq_attr a = { 0 };
	uint32_t mw = sa.attr.max_wr; /* written back by ibv_create_srq */

	CHECK(mw >= 64, "SRQ max_wr %u (from create) >= requested 64", mw);
	int qr = ibv_query_srq(s, &a);
	int can_query = qr == 0;

	if (qr == EOPNOTSUPP || qr == ENOSYS || qr == -EOPNOTSUPP) {
		NOTE("ibv_query_srq not supported by the provider (%s): limit read-back skipped",
		     errname(qr < 0 ? -qr : qr));
	} else {
		CHECK(!qr, "query SRQ: max_wr %u max_sge %u limit %u", a.max_wr, a.max_sge,
		      a.srq_limit);
		CHECK(a.srq_limit == 0, "fresh SRQ limit is 0 (%u)", a.srq_limit);
		if (!qr && a.max_wr)
			mw = a.max_wr;
	}
	a.max_wr = mw;
	a.srq_limit = 10;
	CHECK(!ibv_modify_srq(s, &a, IBV_SRQ_LIMIT), "modify SRQ limit=10");
	memset(&a, 0, sizeof(a));
	if (can_query)
		CHECK(!ibv_query_srq(s, &a) && a.srq_limit == 10, "query SRQ shows limit 10 (%u)",
		      a.srq_limit);
	a.srq_limit = mw;
	int r = ibv_modify_srq(s, &a, IBV_SRQ_LIMIT);

	NOTE("modify SRQ limit=max_wr(%u): %s", mw, r ? errname(r) : "ok");
	a.srq_limit = mw + 1;
	errno = 0;
	r = ibv_modify_srq(s, &a, IBV_SRQ_LIMIT);
	expect_einval(r != 0, r, "modify SRQ limit > max_wr");
	a.max_wr = mw * 2;
	r = ibv_modify_srq(s, &a, IBV_SRQ_MAX_WR);
	NOTE("resize SRQ (IBV_SRQ_MAX_WR): %s", r ? errname(r) : "ok");
	CHECK(!ibv_destroy_srq(s), "destroy SRQ");
	/* QP on SRQ */
	s = MKSRQ(16, 1);
	if (s) {
		struct ibv_qp *q = mkqp(IBV_QPT_RC, 4, 0, 1, 0, 0, s);

		CHECK(q, "RC QP attached to SRQ (%s)", q ? "ok" : errname(errno));
		if (q)
			ibv_destroy_qp(q);
		ibv_destroy_srq(s);
	}
}

static const char *accname(int acc, char *b)
{
	b[0] = 0;
	if (acc & IBV_ACCESS_LOCAL_WRITE)
		strcat(b, "LW|");
	if (acc & IBV_ACCESS_REMOTE_WRITE)
		strcat(b, "RW|");
	if (acc & IBV_ACCESS_REMOTE_READ)
		strcat(b, "RR|");
	if (acc & IBV_ACCESS_REMOTE_ATOMIC)
		strcat(b, "RA|");
	if (acc & IBV_ACCESS_MW_BIND)
		strcat(b, "MWB|");
	if (!b[0])
		strcpy(b, "none|");
	b[strlen(b) - 1] = 0;
	return b;
}

/* the loaded siw is this project's (out of tree: taint flag O) */
static int siw_is_ours(void)
{
	char t[32] = "";
	FILE *f = fopen("/sys/module/siw/taint", "r");

	if (!f)
		return 0;
	if (!fgets(t, sizeof(t), f))
		t[0] = 0;
	fclose(f);
	return !!strchr(t, 'O');
}

static void t_mr(void)
{
	static const int bits[] = { IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE,
				    IBV_ACCESS_REMOTE_READ,
				    IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_MW_BIND };
	size_t len = 1 << 16;
	void *buf = aligned_alloc(4096, len);
	char nb[64];

	for (int m = 0; m < 32; m++) {
		int acc = 0;

		for (int k = 0; k < 5; k++)
			if (m & (1 << k))
				acc |= bits[k];
		int invalid = (acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
			      !(acc & IBV_ACCESS_LOCAL_WRITE);
		errno = 0;
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, acc);
		int e = errno;

		if (invalid) {
			CHECK(!mr && e == EINVAL, "MR access %s invalid: %s", accname(acc, nb),
			      mr ? "registered!" : errname(e));
		} else if ((acc & IBV_ACCESS_REMOTE_ATOMIC) && da.atomic_cap == IBV_ATOMIC_NONE &&
			   !mr) {
			OK("MR access %s refused (%s) on a device without atomics: accepted",
			   accname(acc, nb), errname(e));
		} else {
			CHECK(mr, "MR access %s valid: %s", accname(acc, nb),
			      mr ? "registered" : errname(e));
		}
		if (mr)
			ibv_dereg_mr(mr);
	}
	/* zero length */
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);

	NOTE("MR of length 0: %s", mr ? "registered" : errname(errno));
	if (mr)
		ibv_dereg_mr(mr);
	/*
	 * One byte over max_mr_size must be refused before anything is
	 * pinned: the length is checked first (siw: EINVAL). The range is
	 * reserved address space only (PROT_NONE, MAP_NORESERVE): a module
	 * that tried to pin it would fail with EFAULT instead, and this check
	 * with it. Another driver (rxe, the kernel's siw, whose max_mr_size is
	 * the memlock limit) may refuse with another error.
	 */
	if (!da.max_mr_size || da.max_mr_size > (1ull << 46)) {
		FAIL("max_mr_size 0x%llx: no bound that a mapping can exceed",
		     (unsigned long long)da.max_mr_size);
	} else {
		size_t big = (size_t)da.max_mr_size + 1;
		int ours = ctx->device->transport_type == IBV_TRANSPORT_IWARP &&
			   siw_is_ours();
		void *p = mmap(NULL, big, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED) {
			FAIL("mmap of max_mr_size+1 (0x%zx) bytes of address space: %s",
			     big, errname(errno));
		} else {
			errno = 0;
			mr = ibv_reg_mr(pd, p, big, IBV_ACCESS_LOCAL_WRITE);
			if (mr) {
				FAIL("MR of max_mr_size+1 (0x%zx) registered", big);
				ibv_dereg_mr(mr);
			} else if (ours) {
				CHECK(errno == EINVAL, "MR of max_mr_size+1 (0x%zx) refused with %s (want EINVAL, before any pinning)",
				      big, errname(errno));
			} else {
				OK("MR of max_mr_size+1 (0x%zx) refused (%s)",
				   big, errname(errno));
			}
			munmap(p, big);
		}
	}
	/* distinct keys */
	enum { NMR = 64 };
	struct ibv_mr *v[NMR];
	int n = 0;

	for (; n < NMR; n++) {
		v[n] = ibv_reg_mr(pd, (char *)buf + n * 64, 64,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ);
		if (!v[n])
			break;
	}
	CHECK(n == NMR, "registered %d MRs on overlapping ranges", n);
	int dl = 0, dr = 0;

	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			dl += v[a]->lkey == v[b]->lkey;
			dr += v[a]->rkey == v[b]->rkey;
		}
	CHECK(!dl && !dr, "lkeys and rkeys distinct across %d MRs (%d/%d duplicates)", n, dl, dr);
	for (int k = 0; k < n; k++)
		ibv_dereg_mr(v[k]);
	/* re-registration gives a different key */
	struct ibv_mr *m1 = ibv_reg_mr(pd, buf, 4096,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);

	if (m1) {
		uint32_t k1 = m1->rkey, l1 = m1->lkey;

		ibv_dereg_mr(m1);
		struct ibv_mr *m2 = ibv_reg_mr(pd, buf, 4096,
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);

		if (m2) {
			NOTE("re-register: rkey 0x%08x -> 0x%08x, lkey 0x%08x -> 0x%08x", k1,
			     m2->rkey, l1, m2->lkey);
			CHECK(m2->rkey != k1, "re-registered buffer gets a different rkey");
			CHECK((m2->rkey & 0xff) != (k1 & 0xff),
			      "re-registration changes the 8-bit key part (0x%02x -> 0x%02x)",
			      k1 & 0xff, m2->rkey & 0xff);
			ibv_dereg_mr(m2);
		} else {
			FAIL("re-register: %s", errname(errno));
		}
	} else {
		FAIL("reg MR 4096: %s", errname(errno));
	}
	free(buf);
}

static void t_qp_state(void)
{
	struct ibv_qp *q = mkqp(IBV_QPT_RC, 8, 8, 1, 1, 0, NULL);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr qi;
	char buf[256];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

	if (!q || !mr) {
		FAIL("QP/MR for state test: %s", errname(errno));
		return;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int r = ibv_modify_qp(q, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	if (r) {
		NOTE("RESET->INIT with pkey/port/access: %s; trying STATE|ACCESS_FLAGS (as iw_cm does)",
		     errname(r));
		r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	}
	CHECK(!r, "modify QP RESET->INIT (%s)", r ? errname(r) : "ok");
	CHECK(!ibv_query_qp(q, &a, IBV_QP_STATE, &qi) && a.qp_state == IBV_QPS_INIT,
	      "query shows INIT (%d)", a.qp_state);
	enum { NR = 5 };
	int posted = 0;

	for (int k = 0; k < NR; k++) {
		struct ibv_sge sge = { (uintptr_t)buf + k * 32, 32, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 0xabc000 + (uint64_t)k, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (!ibv_post_recv(q, &wr, &bad))
			posted++;
	}
	CHECK(posted == NR, "posted %d receives in INIT", posted);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	r = ibv_modify_qp(q, &a, IBV_QP_STATE);
	CHECK(!r, "modify QP INIT->ERR (%s)", r ? errname(r) : "ok");
	CHECK(!ibv_query_qp(q, &a, IBV_QP_STATE, &qi) && a.qp_state == IBV_QPS_ERR,
	      "query shows ERR (%d)", a.qp_state);
	int got = 0, badid = 0, badst = 0;
	struct ibv_wc wc;

	while (got < posted && poll_one(cq, &wc, 2.0) == 1) {
		if (wc.wr_id != 0xabc000 + (uint64_t)got)
			badid++;
		if (wc.status != IBV_WC_WR_FLUSH_ERR)
			badst++;
		got++;
	}
	CHECK(got == posted && !badid && !badst,
	      "flushed %d/%d receives with WR_FLUSH_ERR in order (%d bad ids, %d bad status)",
	      got, posted, badid, badst);
	CHECK(poll_one(cq, &wc, 0.2) == 0, "no extra completions after flush");
	/* post after error: must flush immediately or be refused */
	struct ibv_sge sge = { (uintptr_t)buf, 32, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 0xdef, .sg_list = &sge, .num_sge = 1 }, *bad;

	r = ibv_post_recv(q, &wr, &bad);
	if (r) {
		OK("post_recv in ERR refused (%s)", errname(r));
	} else {
		/* IB spec: flushed at once; not all providers do (rxe does not):
		 * reported, not enforced
		 */
		int p = poll_one(cq, &wc, 2.0);

		NOTE("post_recv in ERR: %s", p == 1 && wc.wr_id == 0xdef &&
		     wc.status == IBV_WC_WR_FLUSH_ERR ?
		     "completed with WR_FLUSH_ERR" : p == 1 ? "completed with another status/id" : "no completion within 2s");
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	r = ibv_modify_qp(q, &a, IBV_QP_STATE);
	NOTE("modify QP ERR->RESET: %s", r ? errname(r) : "ok");
	CHECK(!ibv_destroy_qp(q), "destroy QP in ERR/RESET");
	ibv_dereg_mr(mr);
}

/* ---- -x: every reported object limit ---------------------------------- */

static char lim_buf[4096];

static void *lim_pd(void) { return ibv_alloc_pd(ctx); }
static void lim_pd_free(void *o) { ibv_dealloc_pd(o); }
static void *lim_cq(void) { return ibv_create_cq(ctx, 1, NULL, NULL, 0); }
static void lim_cq_free(void *o) { ibv_destroy_cq(o); }
static void *lim_mr(void)
{
	return ibv_reg_mr(pd, lim_buf, sizeof(lim_buf), IBV_ACCESS_LOCAL_WRITE);
}

static void lim_mr_free(void *o) { ibv_dereg_mr(o); }
static void *lim_qp(void) { return mkqp(IBV_QPT_RC, 1, 1, 1, 1, 0, NULL); }
static void lim_qp_free(void *o) { ibv_destroy_qp(o); }
static void *lim_srq(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };

	return ibv_create_srq(pd, &sa);
}

static void lim_srq_free(void *o) { ibv_destroy_srq(o); }

/*
 * Create objects until the device refuses: exactly @max - @held must
 * succeed (@held: ones this process already holds), the next must fail
 * with ENOMEM, and one freed makes room for one more.
 */
static void t_exhaust(const char *what, int max, int held, void *(*mk)(void),
		      void (*rm)(void *))
{
	int want = max - held, got = 0, e;
	void **v;
	void *x;

	if (max <= 0 || max > 4096) {
		CHECK(0, "%s: limit %d too large to exhaust (set max_objects)", what, max);
		return;
	}
	v = calloc((size_t)max + 1, sizeof(*v));
	if (!v)
		DIE("out of memory");
	for (; got < want; got++) {
		errno = 0;
		v[got] = mk();
		if (!v[got])
			break;
	}
	e = errno;
	CHECK(got == want, "%s: created %d of the %d the limit leaves (%s)", what, got, want,
	      got == want ? "ok" : errname(e));
	errno = 0;
	x = mk();
	e = errno;
	CHECK(!x && e == ENOMEM, "%s: number %d refused with ENOMEM (%s)", what, max + 1,
	      x ? "created" : errname(e));
	if (x)
		rm(x);
	if (got) {
		rm(v[--got]);
		errno = 0;
		v[got] = mk();
		CHECK(v[got], "%s: one freed, one created again (%s)", what,
		      v[got] ? "ok" : errname(errno));
		if (v[got])
			got++;
	}
	while (got)
		rm(v[--got]);
	free(v);
}

static void t_limits(void)
{
	/* this process holds one PD and one CQ (for the MRs, QPs, SRQs) */
	t_exhaust("PDs", da.max_pd, 1, lim_pd, lim_pd_free);
	t_exhaust("CQs", da.max_cq, 1, lim_cq, lim_cq_free);
	t_exhaust("MRs", da.max_mr, 0, lim_mr, lim_mr_free);
	t_exhaust("QPs", da.max_qp, 0, lim_qp, lim_qp_free);
	t_exhaust("SRQs", da.max_srq, 0, lim_srq, lim_srq_free);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int c, exhaust = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "d:xh")) != -1) {
		if (c == 'd') {
			dev = optarg;
		} else if (c == 'x') {
			exhaust = 1;
		} else {
			fprintf(stderr, "usage: siw_objects -d DEVICE [-x]\n");
			return 2;
		}
	}
	alarm(300);
	ctx = open_dev(dev);
	if (!ctx)
		DIE("cannot open device %s", dev ? dev : "(first)");
	OK("opened device %s", ibv_get_device_name(ctx->device));
	t_query();
	if (exhaust) {
		pd = ibv_alloc_pd(ctx);
		cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!pd || !cq)
			DIE("PD/CQ for the limit checks");
		t_limits();
		goto out;
	}
	t_pd();
	t_cq();
	t_qp();
	t_srq();
	t_mr();
	t_qp_state();
out:
	ibv_destroy_cq(cq);
	CHECK(!ibv_dealloc_pd(pd), "dealloc PD at end");
	CHECK(!ibv_close_device(ctx), "close device");
	printf("# %d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
