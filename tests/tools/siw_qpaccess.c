// SPDX-License-Identifier: GPL-2.0
/*
 * siw_qpaccess: the QP's remote access flags (IBV_ACCESS_REMOTE_WRITE /
 * IBV_ACCESS_REMOTE_READ set with ibv_modify_qp) are enforced, both ways.
 *   siw_qpaccess -a ADDR [-p PORT] [-t TIMEOUT] [-s SCENARIO]
 * ADDR: a local IPv4 address of the siw device's netdev (not lo, see
 * rdev_veth_local in tests/lib/caselib.sh); PORT..PORT+5 are used.
 *
 * Each scenario is a fresh connected RC pair in this process: an active
 * QP (rdma_cm's, the connecting side) and a passive one (the accepting
 * side). One of them is the target: its access flags are narrowed with
 * ibv_modify_qp(IBV_QP_ACCESS_FLAGS) alone once the connection is
 * established (RTS); the other is the initiator of the Writes and Reads.
 * The target MR always allows remote write and read, so only the QP's
 * flags can refuse. In every scenario the allowed operation runs first
 * (it must succeed with the data verified at its destination), then the
 * refused one, which must be a protection error: the target QP gets
 * IBV_EVENT_QP_ACCESS_ERR and goes to ERROR, the initiator's QP goes to
 * ERROR (the target's Terminate), the target memory (Write) or the
 * initiator's sink buffer (Read) is unchanged, and a refused Read
 * completes with IBV_WC_REM_ACCESS_ERR.
 *
 * Flags set before the connection: librdmacm sets a user QP's flags
 * before RTS (0 on the active side, remote Write|Read on the passive
 * side), so siw(7) (ACCESS) says a user QP enters RTS allowing remote
 * Write and Read whatever they were; scenario init-set checks that with
 * a passive QP the tool makes itself (ibv_create_qp, INIT with {READ},
 * handed to rdma_accept by number so librdmacm never modifies it).
 *
 * Scenarios (-s NAME runs one; default all); target passive unless named:
 *   init-set      INIT {READ}, connected: query {WRITE|READ}, Write and
 *                 Read ok; then RTS {READ}: Write refused
 *   rts-r         RTS {READ}:  Read ok, Write refused
 *   rts-w         RTS {WRITE}: Write ok, Read refused
 *   rts-none      RTS {}:      Write refused
 *   active-r      target the active QP, RTS {READ}:  Read ok, Write refused
 *   active-w      target the active QP, RTS {WRITE}: Write ok, Read refused
 *   rts-back      RTS {} then {WRITE|READ}: Write ok and Read ok
 * Output: "ok - ..." / "FAIL - ..." lines, then "# refused N" (refusals
 * seen as protection errors); exit 0 iff no FAIL.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>

#define BUF_LEN 65536
#define XFER 4096

static const char *addr;
static int port = 18800;
static double tmo = 10;

enum how { INIT_QP, RTS_QP };
enum rdma_op { OP_NONE, OP_WRITE, OP_READ };

#define RW (IBV_ACCESS_REMOTE_WRITE)
#define RR (IBV_ACCESS_REMOTE_READ)

struct scenario {
	const char *name;
	enum how how;      /* INIT_QP: the passive QP is ours, INIT with {READ} */
	int active;        /* the target is the active QP */
	int flags;         /* the target's flags in RTS; -1: {} then {WRITE|READ} */
	enum rdma_op allowed;   /* runs first, must succeed */
	enum rdma_op refused;   /* then must be a protection error */
};

static const struct scenario scen[] = {
	{ "init-set", INIT_QP, 0, RR, OP_NONE, OP_WRITE },
	{ "rts-r", RTS_QP, 0, RR, OP_READ, OP_WRITE },
	{ "rts-w", RTS_QP, 0, RW, OP_WRITE, OP_READ },
	{ "rts-none", RTS_QP, 0, 0, OP_NONE, OP_WRITE },
	{ "active-r", RTS_QP, 1, RR, OP_READ, OP_WRITE },
	{ "active-w", RTS_QP, 1, RW, OP_WRITE, OP_READ },
	{ "rts-back", RTS_QP, 0, -1, OP_NONE, OP_NONE },
};

/* one end of the connection */
struct side {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
	const char *name;
};

struct pair {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *cli, *srv;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct side a, p;        /* active (client), passive (server) */
	int own_pqp;             /* p.qp made by ibv_create_qp */
};

static int modify_flags(struct ibv_qp *qp, int flags, int with_init)
{
	struct ibv_qp_attr a = { 0 };
	int mask = IBV_QP_ACCESS_FLAGS;

	a.qp_access_flags = flags;
	if (with_init) {
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		mask |= IBV_QP_STATE | IBV_QP_PORT;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int qp_state(struct ibv_qp *qp, int *flags)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &ia))
		return -1;
	if (flags)
		*flags = a.qp_access_flags;
	return a.qp_state;
}

static const char *flags_str(int f)
{
	static char buf[4][24];
	static int n;
	char *s = buf[n++ % 4];

	snprintf(s, sizeof(buf[0]), "{%s%s%s}", f & RW ? "WRITE" : "",
		 (f & RW) && (f & RR) ? "|" : "", f & RR ? "READ" : "");
	return s;
}

static void side_free(struct side *x)
{
	if (x->mr)
		ibv_dereg_mr(x->mr);
	if (x->cq)
		ibv_destroy_cq(x->cq);
	free(x->buf);
}

static void pair_down(struct pair *p)
{
	if (p->cli && p->cli->qp)
		rdma_destroy_qp(p->cli);
	if (p->srv) {
		if (p->srv->qp)
			rdma_destroy_qp(p->srv);
		rdma_destroy_id(p->srv);
	}
	if (p->own_pqp && p->p.qp)
		ibv_destroy_qp(p->p.qp);
	side_free(&p->a);
	side_free(&p->p);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->cli)
		rdma_destroy_id(p->cli);
	if (p->lid)
		rdma_destroy_id(p->lid);
	if (p->ch)
		rdma_destroy_event_channel(p->ch);
	memset(p, 0, sizeof(*p));
}

static int side_init(struct pair *p, struct side *x, const char *name, int fill)
{
	/* the MRs allow everything: only the QP's flags may refuse */
	int acc = IBV_ACCESS_LOCAL_WRITE | RW | RR;

	x->name = name;
	x->cq = ibv_create_cq(p->ctx, 16, NULL, NULL, 0);
	x->buf = aligned_alloc(4096, BUF_LEN);
	if (!x->cq || !x->buf) {
		NOTE("cq/buffer: %s", strerror(errno));
		return -1;
	}
	memset(x->buf, fill, BUF_LEN);
	x->mr = ibv_reg_mr(p->pd, x->buf, BUF_LEN, acc);
	if (!x->mr) {
		NOTE("ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	return 0;
}

struct accept_arg {
	struct pair *p;
	enum how how;
	struct ibv_qp_init_attr *qa;
};

/* the passive QP: made by rdma_cm (RTS_QP) or by us, INIT with {READ}
 * (INIT_QP), then accepted
 */
static int accept_passive(struct rdma_cm_id *srv, struct rdma_conn_param *cp, void *arg)
{
	struct accept_arg *a = arg;
	struct pair *p = a->p;
	struct ibv_qp_init_attr *qa = a->qa;
	struct rdma_conn_param sp = *cp;

	p->srv = srv;
	qa->send_cq = p->p.cq;
	qa->recv_cq = p->p.cq;
	if (a->how == RTS_QP) {
		if (rdma_create_qp(p->srv, p->pd, qa)) {
			NOTE("rdma_create_qp (passive): %s", strerror(errno));
			return -1;
		}
		p->p.qp = p->srv->qp;
	} else {
		p->p.qp = ibv_create_qp(p->pd, qa);
		if (!p->p.qp) {
			NOTE("ibv_create_qp (passive): %s", strerror(errno));
			return -1;
		}
		p->own_pqp = 1;
		if (modify_flags(p->p.qp, RR, 1)) {
			FAIL("ibv_modify_qp(INIT, access {READ}) of an idle QP: %s",
			     strerror(errno));
			return -1;
		}
		sp.qp_num = p->p.qp->qp_num;
	}
	if (rdma_accept(p->srv, &sp)) {
		NOTE("rdma_accept: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Listen on addr:port, connect to it; the passive QP is made by rdma_cm
 * (RTS_QP) or by ibv_create_qp + INIT with {READ} (INIT_QP).
 */
static int pair_up(struct pair *p, int k, enum how how)
{
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	struct accept_arg aa = { .p = p, .how = how, .qa = &qa };

	memset(p, 0, sizeof(*p));
	if (lb_resolve(&p->ch, &p->lid, &p->cli, addr, port + k, tmo))
		return -1;
	p->ctx = p->cli->verbs;
	p->pd = ibv_alloc_pd(p->ctx);
	if (!p->pd || side_init(p, &p->a, "active", 0xc1) ||
	    side_init(p, &p->p, "passive", 0x5e))
		return -1;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.send_cq = p->a.cq;
	qa.recv_cq = p->a.cq;
	if (rdma_create_qp(p->cli, p->pd, &qa)) {
		NOTE("rdma_create_qp (active): %s", strerror(errno));
		return -1;
	}
	p->a.qp = p->cli->qp;
	cp.responder_resources = 4;
	cp.initiator_depth = 4;
	cp.retry_count = 7;
	return lb_connect(p->ch, p->cli, &cp, accept_passive, &aa, tmo);
}

static int post_rdma(struct side *ini, struct side *tgt, enum rdma_op op, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)ini->buf, XFER, ini->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)tgt->buf;
	wr.wr.rdma.rkey = tgt->mr->rkey;
	return ibv_post_send(ini->qp, &wr, &bad);
}

static const char *op_name(enum rdma_op op)
{
	return op == OP_WRITE ? "RDMA Write" : "RDMA Read";
}

/* An allowed Write/Read: success completion and the data at its destination. */
static int do_allowed(struct side *ini, struct side *tgt, const char *sn, enum rdma_op op,
		      uint64_t key)
{
	struct ibv_wc wc;
	uint8_t *src = op == OP_WRITE ? ini->buf : tgt->buf;
	uint8_t *dst = op == OP_WRITE ? tgt->buf : ini->buf;
	double end;
	size_t bad;

	pat_fill(src, key, 0, XFER);
	if (post_rdma(ini, tgt, op, key)) {
		FAIL("%s: post %s: %s", sn, op_name(op), strerror(errno));
		return -1;
	}
	if (poll_one(ini->cq, &wc, tmo) != 1) {
		FAIL("%s: allowed %s: no completion in %.0f s", sn, op_name(op), tmo);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		FAIL("%s: allowed %s completed with %s", sn, op_name(op),
		     ibv_wc_status_str(wc.status));
		return -1;
	}
	/* a Write's local completion does not mean placed: wait for the bytes */
	end = now_s() + tmo;
	while ((bad = pat_check(dst, key, 0, XFER)) != (size_t)-1 && now_s() < end)
		usleep(1000);
	if (bad != (size_t)-1) {
		FAIL("%s: allowed %s: data differs at byte %zu", sn, op_name(op), bad);
		return -1;
	}
	OK("%s: allowed %s to the %s QP succeeded, %d bytes verified", sn, op_name(op),
	   tgt->name, XFER);
	return 0;
}

/*
 * A refused Write/Read: a protection error. Returns 0 when every part of
 * it was seen.
 */
static int do_refused(struct pair *p, struct side *ini, struct side *tgt, const char *sn,
		      enum rdma_op op, uint64_t key)
{
	uint8_t *guard = malloc(XFER);
	uint8_t *victim = op == OP_WRITE ? tgt->buf : ini->buf;
	struct ibv_async_event ae;
	struct ibv_wc wc;
	int tgt_acc_err = 0, ini_ev = -1, got_wc = 0, fails = 0;
	int tst = -1, ist = -1;
	double end;

	if (!guard)
		DIE("malloc");
	pat_fill(op == OP_WRITE ? ini->buf : tgt->buf, key, 0, XFER);
	memcpy(guard, victim, XFER);
	if (post_rdma(ini, tgt, op, key)) {
		FAIL("%s: post %s: %s", sn, op_name(op), strerror(errno));
		free(guard);
		return -1;
	}
	/* collect: the completion, both QPs' async events, both states */
	end = now_s() + tmo;
	while (now_s() < end) {
		if (!got_wc && ibv_poll_cq(ini->cq, 1, &wc) == 1)
			got_wc = 1;
		while (async_wait(p->ctx, &ae, 0.01)) {
			int t = ae.event_type;

			if (t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR ||
			    t == IBV_EVENT_QP_ACCESS_ERR || t == IBV_EVENT_COMM_EST ||
			    t == IBV_EVENT_SQ_DRAINED || t == IBV_EVENT_QP_LAST_WQE_REACHED) {
				if (ae.element.qp == tgt->qp && t == IBV_EVENT_QP_ACCESS_ERR)
					tgt_acc_err = 1;
				else if (ae.element.qp == ini->qp && ini_ev < 0)
					ini_ev = t;
				NOTE("%s: async event %s on the %s QP", sn, ibv_event_type_str(t),
				     ae.element.qp == tgt->qp ? "target" : "initiator");
			} else {
				NOTE("%s: async event %s", sn, ibv_event_type_str(t));
			}
		}
		tst = qp_state(tgt->qp, NULL);
		ist = qp_state(ini->qp, NULL);
		if (got_wc && tgt_acc_err && tst == IBV_QPS_ERR && ist == IBV_QPS_ERR)
			break;
	}
	if (!got_wc) {
		FAIL("%s: refused %s: no completion in %.0f s", sn, op_name(op), tmo);
		fails++;
	} else if (op == OP_READ && wc.status != IBV_WC_REM_ACCESS_ERR) {
		FAIL("%s: refused %s completed with %s, want %s", sn, op_name(op),
		     ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fails++;
	} else {
		NOTE("%s: the %s completed with %s", sn, op_name(op),
		     ibv_wc_status_str(wc.status));
	}
	if (memcmp(victim, guard, XFER)) {
		FAIL("%s: refused %s moved data: the %s changed (first byte at %zu)", sn,
		     op_name(op), op == OP_WRITE ? "target MR" : "initiator's sink buffer",
		     first_diff(victim, guard, XFER));
		fails++;
	}
	if (!tgt_acc_err) {
		FAIL("%s: no IBV_EVENT_QP_ACCESS_ERR on the target (%s) QP for the refused %s", sn,
		     tgt->name, op_name(op));
		fails++;
	}
	if (tst != IBV_QPS_ERR) {
		FAIL("%s: the target (%s) QP is in state %d after the refused %s, want ERROR", sn,
		     tgt->name, tst, op_name(op));
		fails++;
	}
	if (ist != IBV_QPS_ERR) {
		FAIL("%s: the initiator's QP is in state %d after the refused %s, want ERROR (the target's Terminate)",
		     sn, ist, op_name(op));
		fails++;
	}
	if (!fails)
		OK("%s: refused %s to the %s QP: protection error (target QP: QP_ACCESS_ERR, ERROR; initiator QP: ERROR%s%s; no data moved)",
		   sn, op_name(op), tgt->name, ini_ev >= 0 ? ", " : "",
		   ini_ev >= 0 ? ibv_event_type_str(ini_ev) : "");
	free(guard);
	return fails ? -1 : 0;
}

static int refused_total;

/* narrow (or widen) the target's flags in RTS; query must show them */
static int set_rts_flags(const char *sn, struct side *tgt, int want)
{
	int fl = -1, st;

	st = qp_state(tgt->qp, &fl);
	if (st != IBV_QPS_RTS)
		FAIL("%s: the %s QP is in state %d, want RTS", sn, tgt->name, st);
	if (modify_flags(tgt->qp, want, 0)) {
		FAIL("%s: ibv_modify_qp(IBV_QP_ACCESS_FLAGS %s) of the %s QP in RTS refused: %s",
		     sn, flags_str(want), tgt->name, strerror(errno));
		return -1;
	}
	st = qp_state(tgt->qp, &fl);
	if (st != IBV_QPS_RTS || (fl & (RW | RR)) != want) {
		FAIL("%s: after the change the %s QP is in state %d with access %s, want RTS %s",
		     sn, tgt->name, st, flags_str(fl), flags_str(want));
		return -1;
	}
	OK("%s: access flags of the %s QP -> %s in RTS", sn, tgt->name, flags_str(want));
	return 0;
}

static void run(int k)
{
	const struct scenario *s = &scen[k];
	struct pair p;
	struct side *tgt, *ini;
	uint64_t key = 0x5157000000ull + (uint64_t)k * 16;
	int fl = -1, st;

	snprintf(t_context, sizeof(t_context), "scenario %s", s->name);
	if (pair_up(&p, k, s->how)) {
		FAIL("%s: connected pair on %s:%d not made", s->name, addr, port + k);
		pair_down(&p);
		return;
	}
	tgt = s->active ? &p.a : &p.p;
	ini = s->active ? &p.p : &p.a;
	if (s->how == INIT_QP) {
		/* siw(7) ACCESS: a user QP enters RTS allowing remote Write and Read */
		st = qp_state(tgt->qp, &fl);
		if (st != IBV_QPS_RTS || (fl & (RW | RR)) != (RW | RR)) {
			FAIL("%s: a QP set to %s in INIT is in state %d with access %s once connected, want RTS %s (siw(7) ACCESS)",
			     s->name, flags_str(RR), st, flags_str(fl), flags_str(RW | RR));
		} else {
			OK("%s: a QP set to %s in INIT enters RTS with %s", s->name,
			   flags_str(RR), flags_str(fl));
			if (do_allowed(ini, tgt, s->name, OP_WRITE, key + 3) ||
			    do_allowed(ini, tgt, s->name, OP_READ, key + 4)) {
				pair_down(&p);
				return;
			}
		}
	}
	if (s->flags < 0) {
		/* rts-back: narrowed to {}, widened again: both must work */
		if (!set_rts_flags(s->name, tgt, 0) && !set_rts_flags(s->name, tgt, RW | RR) &&
		    !do_allowed(ini, tgt, s->name, OP_WRITE, key + 1))
			do_allowed(ini, tgt, s->name, OP_READ, key + 2);
		pair_down(&p);
		return;
	}
	if (set_rts_flags(s->name, tgt, s->flags)) {
		pair_down(&p);
		return;
	}
	if (s->allowed != OP_NONE && do_allowed(ini, tgt, s->name, s->allowed, key + 1)) {
		pair_down(&p);
		return;
	}
	if (!do_refused(&p, ini, tgt, s->name, s->refused, key + 2))
		refused_total++;
	pair_down(&p);
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int c, ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "a:p:t:s:")) != -1) {
		switch (c) {
		case 't':
			tmo = atof(optarg);
			break;
		case 's':
			only = optarg;
			break;
		default:
			if (lb_opt(c, optarg, &addr, &port))
				break;
			fprintf(stderr, "usage: %s -a ADDR [-p PORT] [-t TIMEOUT] [-s SCENARIO]\n",
				argv[0]);
			return 2;
		}
	}
	if (!addr) {
		fprintf(stderr, "-a ADDR is required\n");
		return 2;
	}
	for (size_t k = 0; k < ARRAY_SIZE(scen); k++) {
		if (only && strcmp(only, scen[k].name))
			continue;
		run(k);
		ran++;
	}
	if (!ran)
		DIE("no scenario named %s", only);
	NOTE("refused %d", refused_total);
	NOTE("%d failure(s)", t_failures);
	return t_failures ? 1 : 0;
}
