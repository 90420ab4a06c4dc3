// SPDX-License-Identifier: GPL-2.0
/*
 * siw_zcclose: one rdma_cm connection that is closed gracefully while the
 * Sends it posted are still held by TCP, for the device-removal test of
 * issue 21 defect 13 (datapath/zcopy-orphan: zero-copy data nobody ACKs)
 * and for datapath/close-timeout (copied data a black hole holds up past
 * the close timeout).
 *
 *   siw_zcclose server [-n NRECV] [-s SIZE] [-t SECS] ADDR:PORT
 *       Listens on ADDR:PORT ("# listening"), accepts one connection with
 *       NRECV receives of SIZE bytes posted (default 16 x 65536), prints
 *       "# ready" once it is established, then stays connected, counting
 *       receive completions, until the peer disconnects (exit 0, after
 *       "# received K message(s), E completion(s) with an error"), it is
 *       killed, or SECS pass (exit 1).
 *
 *   siw_zcclose client [-n N] [-s SIZE] [-t SECS] [-P FILE] [-g FILE]
 *                      ADDR:PORT
 *       Connects ("# connected"), waits for FILE -P to exist if given,
 *       posts N signaled Sends of SIZE bytes (default 8 x 4096) and prints
 *       "# posted N", waits for FILE -g to exist if given, reports the
 *       Sends completed so far ("# before disconnect: ok K"), then calls
 *       rdma_disconnect() ("# disconnecting") and waits at most SECS for
 *       DISCONNECTED ("# disconnected after X.XXX s"). Then it collects
 *       the N send completions (a flush error is expected when the data
 *       was never acknowledged; "# sends: ok K, flushed F, other O"),
 *       destroys everything and exits 0; 1 if an event or a completion
 *       did not come in time.
 *
 * Waiting for a file is the case's go signal: the case changes the network
 * between the steps (netem) and says when to go on.
 */
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <time.h>
#include <sys/stat.h>
#include "common.h"

struct conn {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
	size_t len;
};

static void conn_setup(struct conn *c, struct rdma_cm_id *id, int nsend,
		       int nrecv, size_t size)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = nsend, .max_recv_wr = nrecv,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int n = nsend > nrecv ? nsend : nrecv;

	c->pd = ibv_alloc_pd(id->verbs);
	if (!c->pd)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	c->cq = ibv_create_cq(id->verbs, nsend + nrecv + 4, NULL, NULL, 0);
	if (!c->cq)
		DIE("ibv_create_cq: %s", strerror(errno));
	a.send_cq = c->cq;
	a.recv_cq = c->cq;
	if (rdma_create_qp(id, c->pd, &a))
		DIE("rdma_create_qp: %s", strerror(errno));
	c->len = (size_t)n * size;
	if (posix_memalign((void **)&c->buf, 4096, c->len))
		DIE("no memory for %zu bytes", c->len);
	for (size_t i = 0; i < c->len; i++)
		c->buf[i] = (char)(i * 7 + 1);
	c->mr = ibv_reg_mr(c->pd, c->buf, c->len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		DIE("ibv_reg_mr: %s", strerror(errno));
}

static void conn_destroy(struct conn *c, struct rdma_cm_id *id)
{
	rdma_destroy_qp(id);
	if (ibv_dereg_mr(c->mr))
		printf("# ibv_dereg_mr: %s\n", strerror(errno));
	if (ibv_destroy_cq(c->cq))
		printf("# ibv_destroy_cq: %s\n", strerror(errno));
	if (ibv_dealloc_pd(c->pd))
		printf("# ibv_dealloc_pd: %s\n", strerror(errno));
	free(c->buf);
}

/* until @path exists, at most @t seconds: 1 if it does */
static int wait_file(const char *path, double t)
{
	double end = now_s() + t;
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	struct stat st;

	while (stat(path, &st)) {
		if (now_s() > end)
			return 0;
		nanosleep(&ts, NULL);
	}
	return 1;
}

/* count what @cq holds now into @ok and @err; the number taken */
static int drain_cq(struct ibv_cq *cq, long *ok, long *err)
{
	struct ibv_wc wc;
	int n, got = 0;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 1) {
		got++;
		if (wc.status == IBV_WC_SUCCESS)
			(*ok)++;
		else
			(*err)++;
	}
	if (n < 0)
		DIE("ibv_poll_cq failed");
	return got;
}

static int do_server(const char *ap, int nrecv, size_t size, double t)
{
	struct rdma_event_channel *ch = cm_channel();
	struct rdma_cm_id *lid = cm_listen(ch, ap, NULL, 1), *id = NULL;
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	struct conn c = { 0 };
	double end = now_s() + t;
	long recvd = 0, rerr = 0;
	int done = 0;

	NOTE("listening");
	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, t);
	if (!ev)
		DIE("no connection request within %.0f s", t);
	id = ev->id;
	rdma_ack_cm_event(ev);
	conn_setup(&c, id, 1, nrecv, size);
	for (int i = 0; i < nrecv; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)c.buf + (size_t)i * size,
			.length = size, .lkey = c.mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(id->qp, &wr, &bad))
			DIE("ibv_post_recv %d: %s", i, strerror(errno));
	}
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	if (rdma_accept(id, &cp))
		DIE("rdma_accept: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, t);
	if (!ev)
		DIE("connection not established within %.0f s", t);
	rdma_ack_cm_event(ev);
	NOTE("ready: %d receives of %zu bytes posted", nrecv, size);

	while (!done) {
		drain_cq(c.cq, &recvd, &rerr);
		if (now_s() > end)
			DIE("still connected after %.0f s (%ld received)", t,
			    recvd);
		ev = cm_wait(ch, 0.05);
		if (!ev)
			continue;
		NOTE("event %s status %d", rdma_event_str(ev->event),
		     ev->status);
		done = ev->event == RDMA_CM_EVENT_DISCONNECTED;
		rdma_ack_cm_event(ev);
	}
	/* what completed between the last poll and DISCONNECTED */
	drain_cq(c.cq, &recvd, &rerr);
	NOTE("received %ld message(s), %ld completion(s) with an error",
	     recvd, rerr);
	conn_destroy(&c, id);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int do_client(const char *ap, int nsend, size_t size, double t,
		     const char *postfile, const char *gofile)
{
	struct rdma_event_channel *ch = cm_channel();
	struct rdma_cm_id *id = cm_resolve(ch, ap);
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };
	struct rdma_cm_event *ev;
	struct conn c = { 0 };
	long ok = 0, flushed = 0, other = 0;
	int got;
	double t0;

	conn_setup(&c, id, nsend, 1, size);
	if (rdma_connect(id, &cp))
		DIE("rdma_connect: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, t);
	if (!ev)
		DIE("connection to %s not established", ap);
	rdma_ack_cm_event(ev);
	NOTE("connected");

	if (postfile && !wait_file(postfile, t))
		DIE("no %s within %.0f s", postfile, t);
	for (int i = 0; i < nsend; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)c.buf + (size_t)i * size,
			.length = size, .lkey = c.mr->lkey,
		};
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		if (ibv_post_send(id->qp, &wr, &bad))
			DIE("ibv_post_send %d: %s", i, strerror(errno));
	}
	NOTE("posted %d sends of %zu bytes", nsend, size);

	if (gofile && !wait_file(gofile, t))
		DIE("no %s within %.0f s", gofile, t);
	got = drain_cq(c.cq, &ok, &other);
	NOTE("before disconnect: ok %ld, with an error %ld", ok, other);

	t0 = now_s();
	if (rdma_disconnect(id))
		DIE("rdma_disconnect: %s", strerror(errno));
	NOTE("disconnecting");
	ev = cm_wait(ch, t);
	if (!ev) {
		FAIL("no DISCONNECTED within %.0f s of rdma_disconnect", t);
	} else {
		if (ev->event != RDMA_CM_EVENT_DISCONNECTED)
			FAIL("expected DISCONNECTED, got %s (status %d)",
			     rdma_event_str(ev->event), ev->status);
		else
			NOTE("disconnected after %.3f s", now_s() - t0);
		rdma_ack_cm_event(ev);
	}

	while (got < nsend) {
		struct ibv_wc wc;
		int n = poll_one(c.cq, &wc, 10);

		if (n < 0)
			DIE("ibv_poll_cq failed");
		if (!n) {
			FAIL("%d of %d send completions missing 10 s after the disconnect",
			     nsend - got, nsend);
			break;
		}
		got++;
		if (wc.status == IBV_WC_SUCCESS)
			ok++;
		else if (wc.status == IBV_WC_WR_FLUSH_ERR)
			flushed++;
		else
			other++;
	}
	NOTE("sends: ok %ld, flushed %ld, other %ld", ok, flushed, other);
	conn_destroy(&c, id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	NOTE("done");
	return t_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode, *postfile = NULL, *gofile = NULL;
	int n = -1, c;
	long size = -1;
	double t = 30;

	if (argc < 2)
		DIE("usage: siw_zcclose server|client ... (see the source)");
	mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "n:s:t:P:g:")) != -1) {
		switch (c) {
		case 'n':
			n = atoi(optarg);
			break;
		case 's':
			size = atol(optarg);
			break;
		case 't':
			t = atof(optarg);
			break;
		case 'P':
			postfile = optarg;
			break;
		case 'g':
			gofile = optarg;
			break;
		default:
			DIE("bad option");
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (optind != argc - 1)
		DIE("usage: siw_zcclose server|client ... (see the source)");
	if (!strcmp(mode, "server")) {
		if (n < 0)
			n = 16;
		if (size < 0)
			size = 65536;
		if (n < 1 || n > 1024 || size < 1 || size > (1 << 24))
			DIE("bad -n %d or -s %ld", n, size);
		return do_server(argv[optind], n, size, t);
	}
	if (!strcmp(mode, "client")) {
		if (n < 0)
			n = 8;
		if (size < 0)
			size = 4096;
		if (n < 1 || n > 64 || size < 1 || size > (1 << 24))
			DIE("bad -n %d or -s %ld", n, size);
		return do_client(argv[optind], n, size, t, postfile, gofile);
	}
	DIE("usage: siw_zcclose server|client ... (see the source)");
}
