// SPDX-License-Identifier: GPL-2.0
/*
 * siw_lat: small-message latency timed with CLOCK_MONOTONIC, for
 * scripts/bench.sh (not a test). perftest times with the TSC and a
 * calibration against gettimeofday that is unsteady under qemu TCG; this
 * tool reads the clock the kernel keeps instead, per iteration.
 *
 *   siw_lat server -o OP [-n N] [-s SIZE] ADDR:PORT
 *   siw_lat client -o OP [-n N] [-s SIZE] ADDR:PORT
 *
 * OP is one of
 *   write  ping-pong of RDMA Writes; each side spins on the last byte of
 *          its buffer (as ib_write_lat); half the round trip is reported
 *   send   ping-pong of Sends into posted receives; half the round trip
 *   read   the client's RDMA Reads of the server's buffer, one at a time;
 *          the whole round trip is reported (as ib_read_lat)
 * Both ends take the same -o, -n and -s. The client prints
 *   "# lat OP SIZE N MIN P50 P90 P99 AVG CLK"   (microseconds)
 * over N iterations after WARMUP more; each sample has CLK, the cost of
 * one clock read, taken off. Buffers are exchanged in the
 * connection's private data.
 */
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "common.h"

#define WARMUP		32
#define SPIN_LIMIT_S	10.0
#define QP_DEPTH	64

enum lat_op { LAT_WRITE, LAT_SEND, LAT_READ };

struct lat_peer {
	uint64_t addr;
	uint32_t rkey;
	uint32_t size;
};

struct lat {
	enum lat_op op;
	int n;
	uint32_t size;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	uint8_t *buf;		/* [0, size): written by the peer; then ours */
	struct lat_peer peer;
	int unacked;		/* signaled sends not yet polled */
};

static void lat_setup(struct lat *l, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = QP_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	size_t len = 2 * (size_t)l->size;

	l->id = id;
	l->pd = ibv_alloc_pd(id->verbs);
	l->scq = ibv_create_cq(id->verbs, QP_DEPTH, NULL, NULL, 0);
	l->rcq = ibv_create_cq(id->verbs, QP_DEPTH, NULL, NULL, 0);
	if (!l->pd || !l->scq || !l->rcq)
		DIE("pd/cq: %s", strerror(errno));
	a.send_cq = l->scq;
	a.recv_cq = l->rcq;
	if (rdma_create_qp(id, l->pd, &a))
		DIE("rdma_create_qp: %s", strerror(errno));
	l->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!l->buf)
		DIE("out of memory");
	memset(l->buf, 0, len);
	l->mr = ibv_reg_mr(l->pd, l->buf, len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!l->mr)
		DIE("ibv_reg_mr: %s", strerror(errno));
}

static void lat_me(struct lat *l, struct lat_peer *p)
{
	p->addr = htobe64((uintptr_t)l->buf);
	p->rkey = htobe32(l->mr->rkey);
	p->size = htobe32(l->size);
}

static void lat_take_peer(struct lat *l, const void *pd, uint8_t len)
{
	struct lat_peer p;

	if (!pd || len < sizeof(p))
		DIE("no buffer in the peer's private data (%u bytes)", len);
	memcpy(&p, pd, sizeof(p));
	l->peer.addr = be64toh(p.addr);
	l->peer.rkey = be32toh(p.rkey);
	l->peer.size = be32toh(p.size);
	if (l->peer.size != l->size)
		DIE("peer size %u, ours %u: give both ends the same -s",
		    l->peer.size, l->size);
}

static void post_recv(struct lat *l)
{
	struct ibv_sge sg = { (uintptr_t)l->buf, l->size, l->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(l->id->qp, &wr, &bad))
		DIE("ibv_post_recv: %s", strerror(errno));
}

/* QP, buffer and receives for @id; @cp then carries our buffer (@me). */
static void lat_ready(struct lat *l, struct rdma_cm_id *id,
		      struct rdma_conn_param *cp, struct lat_peer *me)
{
	int i;

	lat_setup(l, id);
	if (l->op == LAT_SEND)
		for (i = 0; i < QP_DEPTH / 2; i++)
			post_recv(l);
	lat_me(l, me);
	cp->private_data = me;
	cp->private_data_len = sizeof(*me);
}

static struct rdma_cm_event *lat_established(struct lat *l)
{
	struct rdma_cm_event *ev = cm_expect(l->ch, RDMA_CM_EVENT_ESTABLISHED,
					     30);

	if (!ev)
		DIE("not established");
	return ev;
}

/* One completion of 'cq', spinning; dies on an error or after 10 s. */
static void spin_cq(struct ibv_cq *cq, const char *what)
{
	double end = now_s() + SPIN_LIMIT_S;
	struct ibv_wc wc;
	unsigned int k = 0;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, &wc)))
		if (!(++k & 0xfff) && now_s() > end)
			DIE("no %s completion in %.0f s", what, SPIN_LIMIT_S);
	if (n < 0 || wc.status != IBV_WC_SUCCESS)
		DIE("%s completion: %s", what,
		    n < 0 ? "poll failed" : wc_status_name(wc.status));
}

/* Wait until the last byte of our buffer turns 'seq'. */
static void spin_mem(struct lat *l, uint8_t seq)
{
	uint8_t *last = l->buf + l->size - 1;
	double end = now_s() + SPIN_LIMIT_S;
	unsigned int k = 0;

	/* the NIC writes it: load it anew each time */
	while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != seq)
		if (!(++k & 0xfff) && now_s() > end)
			DIE("no write from the peer in %.0f s", SPIN_LIMIT_S);
}

/*
 * Post one message; every one is signaled, and completions are reaped
 * only when half the send queue is in use, off the timed path's critical
 * part as far as possible.
 */
static void post_op(struct lat *l, enum ibv_wr_opcode opc, uint8_t seq)
{
	uint8_t *src = l->buf + l->size;
	struct ibv_sge sg = { (uintptr_t)src, l->size, l->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1,
				  .opcode = opc, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	src[l->size - 1] = seq;
	if (opc != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = l->peer.addr;
		wr.wr.rdma.rkey = l->peer.rkey;
	}
	if (opc == IBV_WR_RDMA_READ)
		sg.addr = (uintptr_t)l->buf;
	if (ibv_post_send(l->id->qp, &wr, &bad))
		DIE("ibv_post_send: %s", strerror(errno));
	if (++l->unacked < QP_DEPTH / 2)
		return;
	while (l->unacked) {
		spin_cq(l->scq, "send");
		l->unacked--;
	}
}

static uint8_t seq_of(int i)
{
	return (uint8_t)(i % 255 + 1);	/* never 0, the buffer's start */
}

/* One iteration of the ping-pong; the server answers, the client asks. */
static void lat_step(struct lat *l, int i, int client)
{
	uint8_t s = seq_of(i);

	switch (l->op) {
	case LAT_WRITE:
		if (client)
			post_op(l, IBV_WR_RDMA_WRITE, s);
		spin_mem(l, s);
		if (!client)
			post_op(l, IBV_WR_RDMA_WRITE, s);
		break;
	case LAT_SEND:
		if (client)
			post_op(l, IBV_WR_SEND, s);
		spin_cq(l->rcq, "receive");
		post_recv(l);
		if (!client)
			post_op(l, IBV_WR_SEND, s);
		break;
	case LAT_READ:
		post_op(l, IBV_WR_RDMA_READ, s);
		while (l->unacked) {
			spin_cq(l->scq, "read");
			l->unacked--;
		}
		break;
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void lat_report(struct lat *l, double *us, double clk)
{
	static const char * const name[] = { "write", "send", "read" };
	double sum = 0;
	int i, n = l->n;

	for (i = 0; i < n; i++)
		sum += us[i];
	qsort(us, n, sizeof(*us), cmp_d);
	printf("# lat %s %u %d %.2f %.2f %.2f %.2f %.2f %.2f\n", name[l->op],
	       l->size, n, us[0], us[n / 2], us[n * 9 / 10], us[n * 99 / 100],
	       sum / n, clk);
}

static double ts_us(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1e6 + (b->tv_nsec - a->tv_nsec) / 1e3;
}

/*
 * What one clock read adds to an interval: the median of back-to-back
 * pairs. With a clock the vDSO cannot read (the HPET of a TCG guest) it
 * is a system call, microseconds; it is taken off each sample.
 */
static double clock_cost_us(void)
{
	double d[201];
	struct timespec a, b;
	int i;

	for (i = 0; i < 201; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_MONOTONIC, &b);
		d[i] = ts_us(&a, &b);
	}
	qsort(d, 201, sizeof(*d), cmp_d);
	return d[100];
}

static void run_client(struct lat *l, struct sockaddr_in *sa)
{
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1, .retry_count = 7 };
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct lat_peer me;
	struct timespec a, b;
	double half = l->op == LAT_READ ? 1 : 0.5, *us, clk;
	int i;

	us = calloc(l->n, sizeof(*us));
	if (!us)
		DIE("out of memory");
	if (rdma_create_id(l->ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)sa, 2000))
		DIE("resolve: %s", strerror(errno));
	ev = cm_expect(l->ch, RDMA_CM_EVENT_ADDR_RESOLVED, 10);
	if (!ev)
		DIE("address not resolved");
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		DIE("rdma_resolve_route: %s", strerror(errno));
	ev = cm_expect(l->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 10);
	if (!ev)
		DIE("route not resolved");
	rdma_ack_cm_event(ev);
	lat_ready(l, id, &cp, &me);
	if (rdma_connect(id, &cp))
		DIE("rdma_connect: %s", strerror(errno));
	ev = lat_established(l);
	lat_take_peer(l, ev->param.conn.private_data,
		      ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);

	clk = clock_cost_us();
	for (i = 0; i < WARMUP + l->n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		lat_step(l, i, 1);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (i >= WARMUP)
			us[i - WARMUP] = (ts_us(&a, &b) - clk) * half;
	}
	lat_report(l, us, clk);
	rdma_disconnect(id);
	ev = cm_expect(l->ch, RDMA_CM_EVENT_DISCONNECTED, 10);
	if (ev)
		rdma_ack_cm_event(ev);
}

static void run_server(struct lat *l, struct sockaddr_in *sa)
{
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };
	struct rdma_cm_id *lid, *id;
	struct rdma_cm_event *ev;
	struct lat_peer me;
	int i;

	if (rdma_create_id(l->ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)sa) || rdma_listen(lid, 1))
		DIE("listen: %s", strerror(errno));
	printf("# listening\n");
	ev = cm_expect(l->ch, RDMA_CM_EVENT_CONNECT_REQUEST, 120);
	if (!ev)
		DIE("no connection request");
	id = ev->id;
	lat_take_peer(l, ev->param.conn.private_data,
		      ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	lat_ready(l, id, &cp, &me);
	if (rdma_accept(id, &cp))
		DIE("rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(lat_established(l));
	if (l->op != LAT_READ)
		for (i = 0; i < WARMUP + l->n; i++)
			lat_step(l, i, 0);
	ev = cm_expect(l->ch, RDMA_CM_EVENT_DISCONNECTED, 120);
	if (!ev)
		DIE("no disconnect from the client");
	rdma_ack_cm_event(ev);
}

int main(int argc, char **argv)
{
	struct lat l = { .op = LAT_WRITE, .n = 1000, .size = 64 };
	struct sockaddr_in sa;
	const char *mode;
	int opt;

	if (argc < 2)
		DIE("usage: siw_lat server|client -o write|send|read [-n N] [-s SIZE] ADDR:PORT");
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "o:n:s:")) != -1) {
		if (opt == 'n')
			l.n = atoi(optarg);
		else if (opt == 's')
			l.size = strtoul(optarg, NULL, 0);
		else if (opt == 'o' && !strcmp(optarg, "write"))
			l.op = LAT_WRITE;
		else if (opt == 'o' && !strcmp(optarg, "send"))
			l.op = LAT_SEND;
		else if (opt == 'o' && !strcmp(optarg, "read"))
			l.op = LAT_READ;
		else
			DIE("bad option -%c", opt);
	}
	if (l.n < 1 || l.size < 1 || l.size > (1 << 20) || optind != argc - 1)
		DIE("need -n >= 1, 1 <= -s <= 1 MiB and ADDR:PORT");
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_addr_port(argv[optind], &sa);
	l.ch = rdma_create_event_channel();
	if (!l.ch)
		DIE("rdma_create_event_channel: %s", strerror(errno));
	if (!strcmp(mode, "server"))
		run_server(&l, &sa);
	else if (!strcmp(mode, "client"))
		run_client(&l, &sa);
	else
		DIE("unknown mode %s", mode);
	return 0;
}
