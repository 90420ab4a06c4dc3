// SPDX-License-Identifier: GPL-2.0
/*
 * siw_hostile: a hostile user process scribbling on the siw rings.
 *   siw_hostile -a ADDR [-p port] [-t timeout] [-f flip_rounds] [-o name]
 * ADDR: a local IPv4 address of the siw device's netdev (not lo: an iWARP
 * device on lo cannot be resolved by address).
 *
 * libsiw keeps its struct siw_qp private, so the rings are found through
 * /proc/self/maps: the uverbs mappings that appear while the client QP is
 * created are its SQ (num_sqe * sizeof(struct siw_sqe)) and RQ
 * (num_rqe * sizeof(struct siw_rqe)); the QP is created with ring sizes
 * whose page counts differ so the two cannot be confused, and the SQ is
 * confirmed by finding a marker WR's id in it. The doorbell is rung like
 * libsiw does it (siw_doorbell(), common.c).
 *
 * For every kind of garbage WQE a fresh connected RC pair is made over
 * rdma_cm in this process (listen and connect on one local address, -a);
 * the garbage goes into the slot the kernel will read next, the doorbell
 * rings, and within the timeout there must be an error completion for it,
 * or the QP must go to error (flush / async event / disconnect). A
 * success completion for an invalid WQE is a failure, so is a hang.
 * Last, a fresh pair must move data correctly (bytes verified).
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <rdma/siw-abi.h>

static const char *addr = "127.0.0.1";
static int port = 18700;
static double tmo = 10;

/* the uverbs mappings before the client QP, and those it added */
static struct uv_map before[UV_MAPS_MAX], added[4];
static int nbefore, nadded;

static void snap_before(void)
{
	nbefore = uv_maps_read(before);
}

static void snap_after(void)
{
	nadded = uv_maps_new(before, nbefore, added, 4);
}

struct rings {
	struct siw_sqe *sq;
	struct siw_rqe *rq;
	size_t sq_len, rq_len;
	uint32_t num_sqe, num_rqe;
};

/* new mappings since snap_before(): the larger is the SQ */
static int find_rings(struct rings *r, uint32_t num_sqe, uint32_t num_rqe)
{
	if (nadded != 2) {
		printf("# expected 2 new uverbs mappings for the QP, found %d\n", nadded);
		return -1;
	}
	size_t l0 = added[0].end - added[0].start, l1 = added[1].end - added[1].start;
	int s = l0 > l1 ? 0 : 1;

	r->sq = (struct siw_sqe *)added[s].start;
	r->sq_len = added[s].end - added[s].start;
	r->rq = (struct siw_rqe *)added[!s].start;
	r->rq_len = added[!s].end - added[!s].start;
	r->num_sqe = num_sqe;
	r->num_rqe = num_rqe;
	if (r->sq_len < num_sqe * sizeof(struct siw_sqe) ||
	    r->rq_len < num_rqe * sizeof(struct siw_rqe) ||
	    r->sq_len == r->rq_len) {
		printf("# mapping sizes %zu/%zu do not fit SQ %u x %zu, RQ %u x %zu\n", r->sq_len,
		       r->rq_len,
		       num_sqe, sizeof(struct siw_sqe), num_rqe, sizeof(struct siw_rqe));
		return -1;
	}
	return 0;
}

struct env {
	struct lb_pair lp;
	struct rings r;
	struct ibv_mr *mr;     /* local buffer (client side) */
	struct ibv_mr *rmr;    /* remote region (server side) */
	char *buf, *rbuf;
	size_t len;
	uint32_t sq_idx;       /* next SQ slot the kernel reads */
	uint32_t rq_idx;       /* next RQ slot the kernel reads */
};

static int env_up(struct env *e, int k)
{
	struct ibv_qp_init_attr cap = { 0 };

	memset(e, 0, sizeof(*e));
	/* SQ 64 x 120 B = 2 pages, RQ 8 x 112 B = 1 page: distinct sizes */
	cap.cap.max_send_wr = 64;
	cap.cap.max_recv_wr = 8;
	cap.cap.max_send_sge = SIW_MAX_SGE;
	cap.cap.max_recv_sge = SIW_MAX_SGE;
	lb_pre_cli_qp = snap_before;
	lb_post_cli_qp = snap_after;
	if (lb_pair_create(&e->lp, addr, port + k, &cap, tmo)) {
		printf("# connect on %s:%d failed\n", addr, port + k);
		return -1;
	}
	if (find_rings(&e->r, e->lp.cli_cap.max_send_wr, e->lp.cli_cap.max_recv_wr))
		return -1;
	e->len = 1 << 20;
	e->buf = aligned_alloc(4096, e->len);
	e->rbuf = aligned_alloc(4096, e->len);
	memset(e->buf, 0x11, e->len);
	memset(e->rbuf, 0x22, e->len);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	e->mr = ibv_reg_mr(e->lp.pd, e->buf, e->len, acc);
	e->rmr = ibv_reg_mr(e->lp.pd, e->rbuf, e->len, acc);
	if (!e->mr || !e->rmr)
		return -1;
	/* marker: one valid signaled WRITE; find its slot in the SQ */
	struct ibv_sge sge = { (uintptr_t)e->buf, 8, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x4d41524b00000000ull | (uint64_t)k, .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
				  *bad;
	wr.wr.rdma.remote_addr = (uintptr_t)e->rbuf;
	wr.wr.rdma.rkey = e->rmr->rkey;
	if (ibv_post_send(e->lp.cli->qp, &wr, &bad))
		return -1;
	struct ibv_wc wc;

	if (poll_one(e->lp.cq_cli, &wc, tmo) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.wr_id != wr.wr_id) {
		printf("# marker WRITE did not complete\n");
		return -1;
	}
	int found = -1;

	for (uint32_t i = 0; i < e->r.num_sqe; i++)
		if (e->r.sq[i].id == wr.wr_id)
			found = (int)i;
	if (found < 0) {
		printf("# marker id not found in the presumed SQ mapping\n");
		return -1;
	}
	if (e->r.sq[found].flags & SIW_WQE_VALID) {
		printf("# marker SQE still VALID after its completion\n");
		return -1;
	}
	e->sq_idx = ((uint32_t)found + 1) % e->r.num_sqe;
	/* RQ: libsiw starts at slot 0 and we post no receive on the client
	 * before the garbage, so the kernel reads RQ slot 0 first
	 */
	e->rq_idx = 0;
	return 0;
}

static void env_down(struct env *e)
{
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->rmr)
		ibv_dereg_mr(e->rmr);
	lb_pair_destroy(&e->lp);
	free(e->buf);
	free(e->rbuf);
}

/* Wait for the outcome of garbage WQE 'id': returns a description and sets
 * *ok (1 = error completion / QP error, 0 = success completion or hang)
 */
static const char *outcome(struct env *e, uint64_t id, struct ibv_cq *cq, int *ok, int success_ok)
{
	static char d[160];
	struct ibv_wc wc;
	double end = now_s() + tmo;

	*ok = 0;
	while (now_s() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0) {
			snprintf(d, sizeof(d), "poll_cq error");
			return d;
		}
		if (n == 1) {
			if (wc.wr_id == id || wc.status != IBV_WC_SUCCESS) {
				*ok = wc.status != IBV_WC_SUCCESS || success_ok;
				snprintf(d, sizeof(d), "completion wr_id 0x%llx status %s (%d)%s",
					 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
					 wc.status,
					 wc.wr_id == id ? "" : " (other WR)");
				return d;
			}
			continue;
		}
		struct ibv_async_event ae;

		if (async_wait(e->lp.ctx, &ae, 0.005)) {
			if (ae.event_type == IBV_EVENT_QP_FATAL ||
			    ae.event_type == IBV_EVENT_QP_REQ_ERR ||
			    ae.event_type == IBV_EVENT_QP_ACCESS_ERR) {
				*ok = 1;
				snprintf(d, sizeof(d), "async %s",
					 ibv_event_type_str(ae.event_type));
				return d;
			}
		}
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		if (!ibv_query_qp(e->lp.cli->qp, &qa, IBV_QP_STATE, &qi) &&
		    qa.qp_state == IBV_QPS_ERR) {
			*ok = 1;
			snprintf(d, sizeof(d), "QP state ERR");
			return d;
		}
	}
	snprintf(d, sizeof(d), "no completion and QP not in error within %.0fs", tmo);
	return d;
}

static void sqe_put(struct env *e, const struct siw_sqe *src)
{
	struct siw_sqe *s = &e->r.sq[e->sq_idx];
	uint16_t fl = src->flags;

	memcpy(s, src, sizeof(*s));
	atomic_thread_fence(memory_order_seq_cst);
	__atomic_store_n(&s->flags, (uint16_t)(fl | SIW_WQE_VALID), __ATOMIC_RELEASE);
}

struct garbage {
	const char *name;
	int success_ok; /* a SUCCESS completion is acceptable (not invalid per se) */
	void (*make)(struct env *e, struct siw_sqe *s);
};

static void base_write(struct env *e, struct siw_sqe *s)
{
	memset(s, 0, sizeof(*s));
	s->id = 0xbad0000;
	s->flags = SIW_WQE_SIGNALLED;
	s->opcode = SIW_OP_WRITE;
	s->num_sge = 1;
	s->rkey = e->rmr->rkey;
	s->raddr = (uintptr_t)e->rbuf;
	s->sge[0].laddr = (uintptr_t)e->buf;
	s->sge[0].length = 64;
	s->sge[0].lkey = e->mr->lkey;
}

static void g_op_ff(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = 0xff;
}

static void g_op_recv(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_RECEIVE;
}

static void g_op_rresp(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_READ_RESPONSE;
}

static void g_op_inval(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_INVAL_STAG;
	s->sge[0].lkey = e->rmr->rkey;
}

static void g_op_regmr(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_REG_MR;
	s->base_mr = 0xffff888000001000ull; /* a kernel-looking pointer */
	s->access = 0xffffffff;
}

static void g_op_faa(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_FETCH_AND_ADD;
}

static void g_op_cas(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_COMP_AND_SWAP;
}

static void g_op_imm(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_SEND_WITH_IMM;
}

static void g_op_rli(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_READ_LOCAL_INV;
}

static void g_nsge200(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->num_sge = 200;
}

static void g_nsge7(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->num_sge = SIW_MAX_SGE + 1;
}

static void g_len_max(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->sge[0].length = 0xffffffff;
}

static void g_len_sum(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_SEND;
	s->num_sge = SIW_MAX_SGE;
	for (int k = 0; k < SIW_MAX_SGE; k++) {
		s->sge[k].laddr = (uintptr_t)e->buf;
		s->sge[k].length = 0x7fffffff;
		s->sge[k].lkey = e->mr->lkey;
	}
}

static void g_bad_lkey(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->sge[0].lkey = 0xdeadbe00;
}

static void g_inline_big(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_SEND;
	s->flags |= SIW_WQE_INLINE;
	s->sge[0].length = 1000;
}

static void g_inline_max(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->flags |= SIW_WQE_INLINE;
	s->sge[0].length = 0xffffffff;
}

static void g_laddr0(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->sge[0].laddr = 0;
}

static void g_laddr_k(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->sge[0].laddr = 0xffff888000000000ull;
}

static void g_read_k(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_READ;
	s->sge[0].laddr = 0xffffffff81000000ull;
}

static void g_read_nsge(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_READ;
	s->num_sge = 50;
}

static void g_flags_all(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->flags = 0xffff;
	s->sge[0].laddr = 0;
}

static void g_send_inv_bad(struct env *e, struct siw_sqe *s)
{
	base_write(e, s);
	s->opcode = SIW_OP_SEND_REMOTE_INV;
	s->rkey = 0xffffffff;
	s->sge[0].lkey = 0;
}

static const struct garbage gtab[] = {
	{ "opcode 0xff", 0, g_op_ff },
	{ "opcode SIW_OP_RECEIVE", 0, g_op_recv },
	{ "opcode SIW_OP_READ_RESPONSE", 0, g_op_rresp },
	{ "opcode SIW_OP_INVAL_STAG (kernel only)", 0, g_op_inval },
	{ "opcode SIW_OP_REG_MR (kernel only, kernel pointer)", 0, g_op_regmr },
	{ "opcode SIW_OP_FETCH_AND_ADD", 0, g_op_faa },
	{ "opcode SIW_OP_COMP_AND_SWAP", 0, g_op_cas },
	{ "opcode SIW_OP_SEND_WITH_IMM", 1, g_op_imm },
	{ "opcode SIW_OP_READ_LOCAL_INV", 1, g_op_rli },
	{ "num_sge 200", 0, g_nsge200 },
	{ "num_sge SIW_MAX_SGE+1", 0, g_nsge7 },
	{ "sge length 0xffffffff", 0, g_len_max },
	{ "6 sge of 0x7fffffff (sum overflows 32 bit)", 0, g_len_sum },
	{ "bogus lkey", 0, g_bad_lkey },
	{ "inline length 1000 > SIW_MAX_INLINE", 0, g_inline_big },
	{ "inline length 0xffffffff", 0, g_inline_max },
	{ "laddr 0", 0, g_laddr0 },
	{ "laddr kernel address", 0, g_laddr_k },
	{ "READ into kernel text address", 0, g_read_k },
	/* the kernel's siw clamps a READ's num_sge to 1 (one sink SGE): safe,
	 * so success is tolerated
	 */
	{ "READ num_sge 50", 1, g_read_nsge },
	/* all flags include INLINE: the data come from the SQE, laddr unused */
	{ "all flag bits + laddr 0", 1, g_flags_all },
	{ "SEND_REMOTE_INV lkey 0 stag 0xffffffff", 0, g_send_inv_bad },
};

/* ---- RQ garbage */
struct rgarbage {
	const char *name;
	int success_ok;
	void (*make)(struct env *e, struct siw_rqe *r);
};

static void r_base(struct env *e, struct siw_rqe *r)
{
	memset(r, 0, sizeof(*r));
	r->id = 0xbadd000;
	r->num_sge = 1;
	r->sge[0].laddr = (uintptr_t)e->buf;
	r->sge[0].length = 256;
	r->sge[0].lkey = e->mr->lkey;
}

static void r_nsge(struct env *e, struct siw_rqe *r)
{
	r_base(e, r);
	r->num_sge = 200;
}

static void r_len(struct env *e, struct siw_rqe *r)
{
	r_base(e, r);
	r->sge[0].length = 0xffffffff;
	r->sge[0].laddr = (uintptr_t)e->buf + e->len - 16;
}

static void r_lkey(struct env *e, struct siw_rqe *r)
{
	r_base(e, r);
	r->sge[0].lkey = 0x12345600;
}

static void r_kaddr(struct env *e, struct siw_rqe *r)
{
	r_base(e, r);
	r->sge[0].laddr = 0xffff888000000000ull;
}

static void r_opc(struct env *e, struct siw_rqe *r)
{
	r_base(e, r);
	r->opcode = 0xff;
	r->flags = 0xfffe;
}

static void r_zero(struct env *e, struct siw_rqe *r)
{
	r_base(e, r);
	r->num_sge = 0;
	r->sge[0].length = 0;
}

static const struct rgarbage rtab[] = {
	{ "RQE num_sge 200", 0, r_nsge },
	{ "RQE length 0xffffffff past MR end", 0, r_len },
	{ "RQE bogus lkey", 0, r_lkey },
	{ "RQE kernel laddr", 0, r_kaddr },
	/* siw-abi.h: the RQE opcode is "ignored if set by user" and flags
	 * carry only VALID: a valid receive otherwise, success is fine
	 */
	{ "RQE opcode 0xff, all flag bits", 1, r_opc },
	{ "RQE num_sge 0 (receive of 64 bytes into nothing)", 0, r_zero },
};

static int test_sqe(int k, const struct garbage *g)
{
	struct env e;
	struct siw_sqe s;
	int ok;

	if (env_up(&e, k)) {
		FAIL("%s: could not set up a connected pair", g->name);
		env_down(&e);
		return -1;
	}
	g->make(&e, &s);
	s.id = 0xbad0000ull + (uint64_t)k;
	sqe_put(&e, &s);
	int rc = siw_doorbell(e.lp.cli->qp);
	const char *d = outcome(&e, s.id, e.lp.cq_cli, &ok, g->success_ok);

	if (rc && !ok) {
		ok = 1;
		d = "doorbell refused";
	}
	if (ok)
		OK("SQE %s: %s%s", g->name, d, rc ? " (doorbell returned error)" : "");
	else
		FAIL("SQE %s: %s", g->name, d);
	env_down(&e);
	return 0;
}

static int test_rqe(int k, const struct rgarbage *g)
{
	struct env e;
	struct siw_rqe r;
	int ok;

	if (env_up(&e, k)) {
		FAIL("%s: could not set up a connected pair", g->name);
		env_down(&e);
		return -1;
	}
	g->make(&e, &r);
	r.id = 0xbadd000ull + (uint64_t)k;
	struct siw_rqe *q = &e.r.rq[e.rq_idx];
	uint16_t fl = r.flags;

	memcpy(q, &r, sizeof(r));
	atomic_thread_fence(memory_order_seq_cst);
	__atomic_store_n(&q->flags, (uint16_t)(fl | SIW_WQE_VALID), __ATOMIC_RELEASE);
	/* the server sends 64 bytes into it */
	struct ibv_sge sge = { (uintptr_t)e.rbuf, 64, e.rmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x5e4d, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (ibv_post_send(e.lp.srv->qp, &wr, &bad)) {
		FAIL("%s: server post_send failed", g->name);
		env_down(&e);
		return -1;
	}
	const char *d = outcome(&e, r.id, e.lp.cq_cli, &ok, g->success_ok);

	if (ok)
		OK("%s: %s", g->name, d);
	else
		FAIL("%s: %s", g->name, d);
	env_down(&e);
	return 0;
}

/* flipper: rewrite an SQE while the kernel is processing it */
static atomic_int flip_stop;
static struct siw_sqe *flip_sqe;
static void *flipper(void *arg)
{
	uint64_t rs = (uintptr_t)arg;
	volatile struct siw_sqe *s = flip_sqe;

	while (!atomic_load(&flip_stop)) {
		switch (sm64(&rs) % 8) {
		case 0:
			s->num_sge = (uint8_t)(sm64(&rs) % 256);
			break;
		case 1:
			s->sge[sm64(&rs) % SIW_MAX_SGE].length = (uint32_t)sm64(&rs);
			break;
		case 2:
			s->opcode = (uint8_t)(sm64(&rs) % 16);
			break;
		case 3:
			s->flags = (uint16_t)sm64(&rs);
			break;
		case 4:
			s->sge[0].laddr = sm64(&rs);
			break;
		case 5:
			s->sge[sm64(&rs) % SIW_MAX_SGE].lkey = (uint32_t)sm64(&rs);
			break;
		case 6:
			s->raddr = sm64(&rs);
			break;
		case 7:
			s->flags |= SIW_WQE_VALID;
			break;
		}
	}
	return NULL;
}

static void test_flip(int k, int rounds)
{
	int survived = 0;

	for (int i = 0; i < rounds; i++) {
		struct env e;
		struct siw_sqe s;

		if (env_up(&e, k + i)) {
			FAIL("flip %d: could not set up a connected pair", i);
			env_down(&e);
			continue;
		}
		base_write(&e, &s);
		s.num_sge = SIW_MAX_SGE;
		for (int j = 0; j < SIW_MAX_SGE; j++) {
			s.sge[j].laddr = (uintptr_t)e.buf + (uint64_t)j * (e.len / SIW_MAX_SGE);
			s.sge[j].length = (uint32_t)(e.len / SIW_MAX_SGE);
			s.sge[j].lkey = e.mr->lkey;
		}
		s.id = 0xf11b000ull + (uint64_t)i;
		flip_sqe = &e.r.sq[e.sq_idx];
		sqe_put(&e, &s);
		atomic_store(&flip_stop, 0);
		pthread_t th;

		pthread_create(&th, NULL, flipper, (void *)(uintptr_t)(0x1234 + i));
		for (int j = 0; j < 20; j++) {
			siw_doorbell(e.lp.cli->qp);
			usleep(10000);
		}
		atomic_store(&flip_stop, 1);
		pthread_join(th, NULL);
		/* drain whatever came; must not hang */
		struct ibv_wc wc;
		int n = 0;
		double end = now_s() + 2;

		while (now_s() < end)
			n += ibv_poll_cq(e.lp.cq_cli, 1, &wc) > 0;
		survived++;
		env_down(&e);
		(void)n;
	}
	CHECK(survived == rounds,
	      "flipping SQE fields while the kernel reads them: %d/%d rounds survived", survived,
	      rounds);
}

/* fresh pair must move data correctly */
static void test_data(int k)
{
	struct env e;

	if (env_up(&e, k)) {
		FAIL("final: could not set up a fresh connected pair");
		env_down(&e);
		return;
	}
	const size_t L = 256 * 1024;

	pat_fill((uint8_t *)e.buf, 77, 0, L);
	memset(e.rbuf, 0, L + 4096);
	/* WRITE L bytes, READ them back to buf+L, SEND 4 KiB */
	struct ibv_sge sg = { (uintptr_t)e.buf, (uint32_t)L, e.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	wr.wr.rdma.remote_addr = (uintptr_t)e.rbuf;
	wr.wr.rdma.rkey = e.rmr->rkey;
	struct ibv_wc wc;
	int ok = !ibv_post_send(e.lp.cli->qp, &wr, &bad) && poll_one(e.lp.cq_cli, &wc, tmo) == 1 &&
		 wc.status == IBV_WC_SUCCESS;
	struct ibv_sge sg2 = { (uintptr_t)e.buf + L, (uint32_t)L, e.mr->lkey };

	wr.wr_id = 2;
	wr.sg_list = &sg2;
	wr.opcode = IBV_WR_RDMA_READ;
	ok = ok && !ibv_post_send(e.lp.cli->qp, &wr, &bad) && poll_one(e.lp.cq_cli, &wc,
								       tmo) == 1 &&
	     wc.status == IBV_WC_SUCCESS;
	size_t d1 = pat_check((uint8_t *)e.rbuf, 77, 0, L);
	size_t d2 = pat_check((uint8_t *)e.buf + L, 77, 0, L);

	CHECK(ok && d1 == (size_t)-1 && d2 == (size_t)-1,
	      "fresh pair after the abuse: 256 KiB WRITE + READ back verified (ok=%d, write mismatch at %zd, read mismatch at %zd)",
	      ok, (ssize_t)d1, (ssize_t)d2);
	/* SEND */
	struct ibv_sge rs = { (uintptr_t)e.rbuf + L, 8192, e.rmr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 3, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { (uintptr_t)e.buf, 4096, e.mr->lkey };
	struct ibv_send_wr sw = { .wr_id = 4, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	ok = !ibv_post_recv(e.lp.srv->qp, &rw, &rbad) && !ibv_post_send(e.lp.cli->qp, &sw, &bad) &&
	     poll_one(e.lp.cq_cli, &wc, tmo) == 1 && wc.status == IBV_WC_SUCCESS &&
	     poll_one(e.lp.cq_srv, &wc,
		      tmo) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 4096;
	size_t d3 = pat_check((uint8_t *)e.rbuf + L, 77, 0, 4096);

	CHECK(ok && d3 == (size_t)-1, "fresh pair: 4 KiB SEND verified");
	env_down(&e);
}

int main(int argc, char **argv)
{
	int c, flips = 5;
	const char *only = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "a:p:t:f:o:")) != -1) {
		switch (c) {
		case 't':
			tmo = atof(optarg);
			break;
		case 'f':
			flips = atoi(optarg);
			break;
		case 'o':
			only = optarg;
			break;
		default:
			if (lb_opt(c, optarg, &addr, &port))
				break;
			fprintf(stderr,
				"usage: siw_hostile [-a addr] [-p port] [-t timeout] [-f flip_rounds] [-o name-substring]\n");
			return 2;
		}
	}
	t_alarm(1200, "FAIL - siw_hostile: global timeout (hang)\n");
	signal(SIGPIPE, SIG_IGN);
	/* self-check of the ring discovery on a clean pair */
	struct env e;

	if (env_up(&e, 0)) {
		FAIL("setup: could not connect a pair on %s or locate its rings (is this siw?)",
		     addr);
		env_down(&e);
		return 1;
	}
	OK("rings located: SQ %u x %zu B at %p (mapping %zu B), RQ %u x %zu B at %p (mapping %zu B), next SQ slot %u",
	   e.r.num_sqe, sizeof(struct siw_sqe), (void *)e.r.sq, e.r.sq_len, e.r.num_rqe,
	   sizeof(struct siw_rqe),
	   (void *)e.r.rq, e.r.rq_len, e.sq_idx);
	env_down(&e);
	int k = 1;

	for (size_t i = 0; i < ARRAY_SIZE(gtab); i++, k++)
		if (!only || strstr(gtab[i].name, only))
			test_sqe(k, &gtab[i]);
	for (size_t i = 0; i < ARRAY_SIZE(rtab); i++, k++)
		if (!only || strstr(rtab[i].name, only))
			test_rqe(k, &rtab[i]);
	if (flips)
		test_flip(k, flips);
	k += flips;
	test_data(k);
	printf("# %d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
