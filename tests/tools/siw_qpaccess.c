// SPDX-License-Identifier: GPL-2.0
/*
 * siw_qpaccess: the QP's remote access flags (IBV_ACCESS_REMOTE_WRITE /
 * IBV_ACCESS_REMOTE_READ set with ibv_modify_qp) are enforced, both ways.
 *   siw_qpaccess -a ADDR [-p PORT] [-t TIMEOUT] [-s SCENARIO]
 * ADDR: a local IPv4 address of the siw device's netdev (not lo, see
 * rdev_veth_local in tests/lib/caselib.sh); PORT..PORT+5 are used.
 *
 * Each scenario is a fresh connected RC pair in this process: a client
 * QP (made by rdma_cm) and a server ("target") QP whose access flags are
 * restricted; the target MR always allows remote write and read, so only
 * the QP's flags can refuse. The flags are set in one of two ways:
 *  - INIT: the server QP is made with ibv_create_qp, moved to INIT with
 *    the flags by the tool and handed to rdma_accept by number, so
 *    rdma_cm never touches it (its RTR step would reset the flags to
 *    REMOTE_WRITE|REMOTE_READ for iWARP);
 *  - RTS: the server QP is rdma_cm's; once the connection is established
 *    ibv_modify_qp(IBV_QP_ACCESS_FLAGS) alone changes the flags.
 * In every scenario the allowed operation runs first (it must succeed
 * with the data verified at its destination), then the refused one,
 * which must be a protection error: the target QP gets
 * IBV_EVENT_QP_ACCESS_ERR and goes to ERROR, the initiator's QP goes to
 * ERROR (the target's Terminate), the target memory (Write) or the
 * initiator's sink buffer (Read) is unchanged, and a refused Read
 * completes with IBV_WC_REM_ACCESS_ERR.
 *
 * Scenarios (-s NAME runs one; default all):
 *   init-r     INIT {READ}:   Read ok, Write refused
 *   init-w     INIT {WRITE}:  Write ok, Read refused
 *   init-none  INIT {}:       Write refused
 *   rts-r      RTS  {READ}:   Read ok, Write refused
 *   rts-w      RTS  {WRITE}:  Write ok, Read refused
 *   rts-back   RTS  {} then {WRITE|READ}: Write ok and Read ok
 * Output: "ok - ..." / "FAIL - ..." lines, then "# refused N" (refusals
 * seen as protection errors); exit 0 iff no FAIL.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netdb.h>

#define BUF_LEN 65536
#define XFER 4096

static const char *addr;
static int port = 18800;
static double tmo = 10;

enum how { INIT_QP, RTS_QP };
enum rdma_op { OP_NONE, OP_WRITE, OP_READ };

struct scenario {
	const char *name;
	enum how how;
	int flags;         /* the target QP's access flags */
	enum rdma_op allowed;   /* runs first, must succeed */
	enum rdma_op refused;   /* then must be a protection error */
};

#define RW (IBV_ACCESS_REMOTE_WRITE)
#define RR (IBV_ACCESS_REMOTE_READ)
static const struct scenario scen[] = {
	{ "init-r", INIT_QP, RR, OP_READ, OP_WRITE },
	{ "init-w", INIT_QP, RW, OP_WRITE, OP_READ },
	{ "init-none", INIT_QP, 0, OP_NONE, OP_WRITE },
	{ "rts-r", RTS_QP, RR, OP_READ, OP_WRITE },
	{ "rts-w", RTS_QP, RW, OP_WRITE, OP_READ },
	{ "rts-back", RTS_QP, -1, OP_NONE, OP_NONE }, /* special, see run_back() */
};

struct pair {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *cli, *srv;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *ccq, *scq;
	struct ibv_qp *sqp;      /* the target QP (rdma_cm's or ours) */
	int own_sqp;             /* sqp made by ibv_create_qp */
	uint8_t *cbuf, *sbuf;
	struct ibv_mr *cmr, *smr;
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

static void pair_down(struct pair *p)
{
	if (p->cli && p->cli->qp)
		rdma_destroy_qp(p->cli);
	if (p->srv) {
		if (p->srv->qp)
			rdma_destroy_qp(p->srv);
		rdma_destroy_id(p->srv);
	}
	if (p->own_sqp && p->sqp)
		ibv_destroy_qp(p->sqp);
	if (p->cmr)
		ibv_dereg_mr(p->cmr);
	if (p->smr)
		ibv_dereg_mr(p->smr);
	if (p->ccq)
		ibv_destroy_cq(p->ccq);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->cli)
		rdma_destroy_id(p->cli);
	if (p->lid)
		rdma_destroy_id(p->lid);
	if (p->ch)
		rdma_destroy_event_channel(p->ch);
	free(p->cbuf);
	free(p->sbuf);
	memset(p, 0, sizeof(*p));
}

/*
 * Listen on addr:port, connect to it; the server QP is made by rdma_cm
 * (RTS_QP) or by ibv_create_qp + INIT with @flags (INIT_QP).
 */
static int pair_up(struct pair *p, int k, enum how how, int flags)
{
	struct rdma_addrinfo hints = { 0 }, *res = NULL;
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_cm_event *ev;
	char ps[16];
	int est = 0, acc = IBV_ACCESS_LOCAL_WRITE | RW | RR;
	double end;

	memset(p, 0, sizeof(*p));
	p->ch = rdma_create_event_channel();
	if (!p->ch || rdma_create_id(p->ch, &p->lid, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(p->ch, &p->cli, NULL, RDMA_PS_TCP)) {
		NOTE("rdma_create_id: %s", strerror(errno));
		return -1;
	}
	snprintf(ps, sizeof(ps), "%d", port + k);
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, ps, &hints, &res)) {
		NOTE("rdma_getaddrinfo %s: %s", addr, strerror(errno));
		return -1;
	}
	if (rdma_bind_addr(p->lid, res->ai_src_addr) || rdma_listen(p->lid, 2) ||
	    rdma_resolve_addr(p->cli, NULL, res->ai_src_addr, 2000)) {
		NOTE("bind/listen/resolve %s:%d: %s", addr, port + k, strerror(errno));
		rdma_freeaddrinfo(res);
		return -1;
	}
	rdma_freeaddrinfo(res);
	ev = cm_expect(p->ch, RDMA_CM_EVENT_ADDR_RESOLVED, tmo);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(p->cli, 2000))
		return -1;
	ev = cm_expect(p->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, tmo);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);

	p->ctx = p->cli->verbs;
	p->pd = ibv_alloc_pd(p->ctx);
	p->ccq = ibv_create_cq(p->ctx, 16, NULL, NULL, 0);
	p->scq = ibv_create_cq(p->ctx, 16, NULL, NULL, 0);
	p->cbuf = aligned_alloc(4096, BUF_LEN);
	p->sbuf = aligned_alloc(4096, BUF_LEN);
	if (!p->pd || !p->ccq || !p->scq || !p->cbuf || !p->sbuf) {
		NOTE("pd/cq/buffers: %s", strerror(errno));
		return -1;
	}
	memset(p->cbuf, 0xc1, BUF_LEN);
	memset(p->sbuf, 0x5e, BUF_LEN);
	/* the MRs allow everything: only the QP's flags may refuse */
	p->cmr = ibv_reg_mr(p->pd, p->cbuf, BUF_LEN, acc);
	p->smr = ibv_reg_mr(p->pd, p->sbuf, BUF_LEN, acc);
	if (!p->cmr || !p->smr) {
		NOTE("ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.send_cq = p->ccq;
	qa.recv_cq = p->ccq;
	if (rdma_create_qp(p->cli, p->pd, &qa)) {
		NOTE("rdma_create_qp (client): %s", strerror(errno));
		return -1;
	}
	cp.responder_resources = 4;
	cp.initiator_depth = 4;
	cp.retry_count = 7;
	if (rdma_connect(p->cli, &cp)) {
		NOTE("rdma_connect: %s", strerror(errno));
		return -1;
	}
	end = now_s() + tmo;
	while (est < 2) {
		ev = cm_wait(p->ch, end - now_s());
		if (!ev) {
			NOTE("connect timed out");
			return -1;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_conn_param sp = cp;

			p->srv = ev->id;
			qa.send_cq = p->scq;
			qa.recv_cq = p->scq;
			if (how == RTS_QP) {
				if (rdma_create_qp(p->srv, p->pd, &qa)) {
					NOTE("rdma_create_qp (server): %s", strerror(errno));
					rdma_ack_cm_event(ev);
					return -1;
				}
				p->sqp = p->srv->qp;
			} else {
				p->sqp = ibv_create_qp(p->pd, &qa);
				if (!p->sqp) {
					NOTE("ibv_create_qp (server): %s", strerror(errno));
					rdma_ack_cm_event(ev);
					return -1;
				}
				p->own_sqp = 1;
				if (modify_flags(p->sqp, flags, 1)) {
					FAIL("%s: ibv_modify_qp(INIT, access %s) of an idle QP: %s",
					     "init", flags_str(flags), strerror(errno));
					rdma_ack_cm_event(ev);
					return -1;
				}
				sp.qp_num = p->sqp->qp_num;
			}
			if (rdma_accept(p->srv, &sp)) {
				NOTE("rdma_accept: %s", strerror(errno));
				rdma_ack_cm_event(ev);
				return -1;
			}
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			est++;
		} else {
			NOTE("connect: unexpected %s status %d", rdma_event_str(ev->event),
			     ev->status);
			rdma_ack_cm_event(ev);
			return -1;
		}
		rdma_ack_cm_event(ev);
	}
	return 0;
}

static int post_rdma(struct pair *p, enum rdma_op op, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)p->cbuf, XFER, p->cmr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)p->sbuf;
	wr.wr.rdma.rkey = p->smr->rkey;
	return ibv_post_send(p->cli->qp, &wr, &bad);
}

static const char *op_name(enum rdma_op op)
{
	return op == OP_WRITE ? "RDMA Write" : "RDMA Read";
}

/* An allowed Write/Read: success completion and the data at its destination. */
static int do_allowed(struct pair *p, const char *sn, enum rdma_op op, uint64_t key)
{
	struct ibv_wc wc;
	uint8_t *src = op == OP_WRITE ? p->cbuf : p->sbuf;
	uint8_t *dst = op == OP_WRITE ? p->sbuf : p->cbuf;
	double end;
	size_t bad;

	pat_fill(src, key, 0, XFER);
	if (post_rdma(p, op, key)) {
		FAIL("%s: post %s: %s", sn, op_name(op), strerror(errno));
		return -1;
	}
	if (poll_one(p->ccq, &wc, tmo) != 1) {
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
	OK("%s: allowed %s succeeded, %d bytes verified", sn, op_name(op), XFER);
	return 0;
}

/*
 * A refused Write/Read: a protection error. Returns 0 when every part of
 * it was seen.
 */
static int do_refused(struct pair *p, const char *sn, enum rdma_op op, uint64_t key)
{
	uint8_t *guard = malloc(XFER);
	uint8_t *victim = op == OP_WRITE ? p->sbuf : p->cbuf;
	struct ibv_async_event ae;
	struct ibv_wc wc;
	int srv_acc_err = 0, cli_ev = -1, got_wc = 0, fails = 0;
	int sst = -1, cst = -1;
	double end;

	if (!guard)
		DIE("malloc");
	pat_fill(op == OP_WRITE ? p->cbuf : p->sbuf, key, 0, XFER);
	memcpy(guard, victim, XFER);
	if (post_rdma(p, op, key)) {
		FAIL("%s: post %s: %s", sn, op_name(op), strerror(errno));
		free(guard);
		return -1;
	}
	/* collect: the completion, both QPs' async events, both states */
	end = now_s() + tmo;
	while (now_s() < end) {
		if (!got_wc && ibv_poll_cq(p->ccq, 1, &wc) == 1)
			got_wc = 1;
		while (async_wait(p->ctx, &ae, 0.01)) {
			int t = ae.event_type;

			if (t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR ||
			    t == IBV_EVENT_QP_ACCESS_ERR || t == IBV_EVENT_COMM_EST ||
			    t == IBV_EVENT_SQ_DRAINED || t == IBV_EVENT_QP_LAST_WQE_REACHED) {
				if (ae.element.qp == p->sqp && t == IBV_EVENT_QP_ACCESS_ERR)
					srv_acc_err = 1;
				else if (ae.element.qp == p->cli->qp && cli_ev < 0)
					cli_ev = t;
				NOTE("%s: async event %s on the %s QP", sn, ibv_event_type_str(t),
				     ae.element.qp == p->sqp ? "target" : "initiator");
			} else {
				NOTE("%s: async event %s", sn, ibv_event_type_str(t));
			}
		}
		sst = qp_state(p->sqp, NULL);
		cst = qp_state(p->cli->qp, NULL);
		if (got_wc && srv_acc_err && sst == IBV_QPS_ERR && cst == IBV_QPS_ERR)
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
	if (!srv_acc_err) {
		FAIL("%s: no IBV_EVENT_QP_ACCESS_ERR on the target QP for the refused %s", sn,
		     op_name(op));
		fails++;
	}
	if (sst != IBV_QPS_ERR) {
		FAIL("%s: the target QP is in state %d after the refused %s, want ERROR", sn,
		     sst, op_name(op));
		fails++;
	}
	if (cst != IBV_QPS_ERR) {
		FAIL("%s: the initiator's QP is in state %d after the refused %s, want ERROR (the target's Terminate)",
		     sn, cst, op_name(op));
		fails++;
	}
	if (!fails)
		OK("%s: refused %s: protection error (target QP: QP_ACCESS_ERR, ERROR; "
		   "initiator QP: ERROR%s%s; no data moved)", sn, op_name(op),
		   cli_ev >= 0 ? ", " : "",
		   cli_ev >= 0 ? ibv_event_type_str(cli_ev) : "");
	free(guard);
	return fails ? -1 : 0;
}

static int refused_total;

static void run(int k)
{
	const struct scenario *s = &scen[k];
	struct pair p;
	int fl = -1, st;
	uint64_t key = 0x5157000000ull + (uint64_t)k * 16;

	snprintf(t_context, sizeof(t_context), "scenario %s", s->name);
	if (pair_up(&p, k, s->how, s->how == INIT_QP ? s->flags : 0)) {
		FAIL("%s: connected pair on %s:%d not made", s->name, addr, port + k);
		pair_down(&p);
		return;
	}
	if (s->how == RTS_QP) {
		int want = s->flags < 0 ? 0 : s->flags;

		st = qp_state(p.sqp, &fl);
		if (st != IBV_QPS_RTS)
			FAIL("%s: target QP in state %d after connect, want RTS", s->name, st);
		if (modify_flags(p.sqp, want, 0)) {
			FAIL("%s: ibv_modify_qp(IBV_QP_ACCESS_FLAGS %s) in RTS refused: %s",
			     s->name, flags_str(want), strerror(errno));
			pair_down(&p);
			return;
		}
		OK("%s: access flags %s -> %s in RTS", s->name, flags_str(fl), flags_str(want));
	}
	st = qp_state(p.sqp, &fl);
	if (st != IBV_QPS_RTS)
		FAIL("%s: target QP in state %d, want RTS", s->name, st);
	if (s->flags >= 0 && (fl & (RW | RR)) != s->flags)
		FAIL("%s: ibv_query_qp reports access %s, set %s", s->name, flags_str(fl),
		     flags_str(s->flags));
	if (s->flags < 0) {
		/* rts-back: narrowed to {} above; widen again, both must work */
		if (modify_flags(p.sqp, RW | RR, 0)) {
			FAIL("%s: ibv_modify_qp(IBV_QP_ACCESS_FLAGS {WRITE|READ}) in RTS: %s",
			     s->name, strerror(errno));
		} else {
			OK("%s: access flags {} -> {WRITE|READ} in RTS", s->name);
			if (!do_allowed(&p, s->name, OP_WRITE, key + 1))
				do_allowed(&p, s->name, OP_READ, key + 2);
		}
		pair_down(&p);
		return;
	}
	if (s->allowed != OP_NONE && do_allowed(&p, s->name, s->allowed, key + 1)) {
		pair_down(&p);
		return;
	}
	if (!do_refused(&p, s->name, s->refused, key + 2))
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
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 't':
			tmo = atof(optarg);
			break;
		case 's':
			only = optarg;
			break;
		default:
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
