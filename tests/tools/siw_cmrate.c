// SPDX-License-Identifier: GPL-2.0
/*
 * siw_cmrate: connection setup cost, for scripts/bench.sh (not a test).
 *
 *   siw_cmrate rate [-n N] ADDR:PORT
 *       N times, one after the other: rdma_cm connect (RC QP, CQ), wait
 *       for ESTABLISHED, disconnect, wait for DISCONNECTED, destroy. The
 *       peer is `siw_cmtest listen -n N ADDR:PORT`. Prints
 *       "# rate N T RATE P50 P90": connections, seconds, connections per
 *       second, median and 90th percentile connect-to-established in ms.
 *       With -T FILE, each connection's step times go to FILE, one line
 *       "A I T0 .. T7" (CLOCK_MONOTONIC s): start, route resolved, QP
 *       created (rdma_connect called), rdma_connect returned,
 *       ESTABLISHED, rdma_disconnect called, DISCONNECTED, destroyed;
 *       `siw_cmtest listen -T` writes the other end's (scripts/bench.sh
 *       joins them by I).
 *   siw_cmrate hold [-n N] ADDR:PORT
 *       Establishes N connections and keeps them; prints "# holding N"
 *       and waits for a line (or EOF) on stdin, then tears them down.
 *   siw_cmrate qps [-n N] -d DEV
 *       Creates N RC QPs (each with its own CQ) on DEV without connecting
 *       them; prints "# holding N" and waits for stdin as above.
 * QP: 64 send and 64 receive WRs, 1 SGE; CQ: 128 entries.
 */
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "common.h"

#define QP_WR QP_PAD_WR
#define CQ_N  CQ_PAD_N

static struct ibv_qp_init_attr qp_attr(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = QP_WR, .max_recv_wr = QP_WR,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	return a;
}

struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
};

static struct ibv_pd *pd;

/* siw_cmrate -T: the times taken of each connection */
enum {
	T_START, T_ROUTE, T_QP, T_CONNECT_RET, T_ESTAB, T_DISC_CALL, T_DISC,
	T_DESTROYED, T_NUM
};

/* Resolve, create the QP and connect; returns ms to ESTABLISHED. */
static double conn_up(struct rdma_event_channel *ch, struct sockaddr_in *sa,
		      struct conn *c, double *ts)
{
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };
	struct ibv_qp_init_attr a;
	struct rdma_cm_event *ev;

	ts[T_START] = now_s();
	if (rdma_create_id(ch, &c->id, NULL, RDMA_PS_TCP))
		DIE("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)sa, 2000))
		DIE("rdma_resolve_addr: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 10);
	if (!ev)
		DIE("address not resolved");
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(c->id, 2000))
		DIE("rdma_resolve_route: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 10);
	if (!ev)
		DIE("route not resolved");
	rdma_ack_cm_event(ev);
	ts[T_ROUTE] = now_s();
	if (!pd) {
		pd = ibv_alloc_pd(c->id->verbs);
		if (!pd)
			DIE("ibv_alloc_pd: %s", strerror(errno));
		if (!mmap_key_pad(c->id->verbs))
			DIE("ibv_create_cq (pad): %s", strerror(errno));
	}
	c->cq = ibv_create_cq(c->id->verbs, CQ_N, NULL, NULL, 0);
	if (!c->cq)
		DIE("ibv_create_cq: %s", strerror(errno));
	a = qp_attr(c->cq);
	if (rdma_create_qp(c->id, pd, &a))
		DIE("rdma_create_qp: %s", strerror(errno));
	ts[T_QP] = now_s();
	if (rdma_connect(c->id, &cp))
		DIE("rdma_connect: %s", strerror(errno));
	ts[T_CONNECT_RET] = now_s();
	ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 30);
	if (!ev)
		DIE("not established");
	ts[T_ESTAB] = now_s();
	rdma_ack_cm_event(ev);
	return (ts[T_ESTAB] - ts[T_QP]) * 1000;
}

static void conn_down(struct rdma_event_channel *ch, struct conn *c,
		      double *ts)
{
	struct rdma_cm_event *ev;

	ts[T_DISC_CALL] = now_s();
	if (rdma_disconnect(c->id))
		DIE("rdma_disconnect: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 30);
	if (!ev)
		DIE("no DISCONNECTED");
	ts[T_DISC] = now_s();
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(c->id);
	ibv_destroy_cq(c->cq);
	rdma_destroy_id(c->id);
	ts[T_DESTROYED] = now_s();
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void wait_stdin(int n)
{
	char line[16];

	printf("# holding %d\n", n);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return;
}

int main(int argc, char **argv)
{
	const char *mode, *dev = NULL, *tfile = NULL;
	double ts[T_NUM], (*steps)[T_NUM];
	struct rdma_event_channel *ch;
	struct sockaddr_in sa;
	struct conn *c;
	double *ms, t0, t;
	int n = 100, i, opt;

	if (argc < 2)
		DIE("usage: siw_cmrate rate|hold|qps ... (see the source)");
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "n:d:T:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'd')
			dev = optarg;
		else if (opt == 'T')
			tfile = optarg;
		else
			DIE("bad option");
	}
	if (n < 1)
		DIE("-n must be >= 1");
	setvbuf(stdout, NULL, _IOLBF, 0);
	c = calloc(n, sizeof(*c));
	ms = calloc(n, sizeof(*ms));
	steps = calloc(n, sizeof(*steps));
	if (!c || !ms || !steps)
		DIE("out of memory");

	if (!strcmp(mode, "qps")) {
		struct ibv_context *ctx;
		struct ibv_qp **qp = calloc(n, sizeof(*qp));

		if (!dev || !qp)
			DIE("qps needs -d DEV");
		ctx = open_dev(dev);
		if (!ctx)
			DIE("cannot open %s", dev);
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			DIE("ibv_alloc_pd: %s", strerror(errno));
		if (!mmap_key_pad(ctx))
			DIE("ibv_create_cq (pad): %s", strerror(errno));
		for (i = 0; i < n; i++) {
			struct ibv_qp_init_attr a;

			c[i].cq = ibv_create_cq(ctx, CQ_N, NULL, NULL, 0);
			if (!c[i].cq)
				DIE("ibv_create_cq %d: %s", i, strerror(errno));
			a = qp_attr(c[i].cq);
			qp[i] = ibv_create_qp(pd, &a);
			if (!qp[i])
				DIE("ibv_create_qp %d: %s", i, strerror(errno));
		}
		wait_stdin(n);
		for (i = 0; i < n; i++) {
			ibv_destroy_qp(qp[i]);
			ibv_destroy_cq(c[i].cq);
		}
		return 0;
	}

	if (optind != argc - 1)
		DIE("ADDR:PORT missing");
	parse_addr_port(argv[optind], &sa);
	ch = rdma_create_event_channel();
	if (!ch)
		DIE("rdma_create_event_channel: %s", strerror(errno));
	if (!strcmp(mode, "rate")) {
		t0 = now_s();
		for (i = 0; i < n; i++) {
			ms[i] = conn_up(ch, &sa, &c[0], steps[i]);
			conn_down(ch, &c[0], steps[i]);
		}
		t = now_s() - t0;
		if (tfile)
			write_times(tfile, "A", steps[0], n, T_NUM);
		qsort(ms, n, sizeof(*ms), cmp_d);
		printf("# rate %d %.3f %.1f %.2f %.2f\n", n, t, n / t,
		       ms[n / 2], ms[n * 9 / 10]);
		return 0;
	}
	if (!strcmp(mode, "hold")) {
		for (i = 0; i < n; i++)
			conn_up(ch, &sa, &c[i], ts);
		wait_stdin(n);
		for (i = 0; i < n; i++)
			conn_down(ch, &c[i], ts);
		return 0;
	}
	DIE("unknown mode %s", mode);
}
