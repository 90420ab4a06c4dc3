// SPDX-License-Identifier: GPL-2.0
/*
 * siw_churn: create/destroy the whole verbs object graph many times, then
 * SIGKILL child processes while their objects are alive.
 *   siw_churn -d siw0 [-n cycles] [-k kills]
 * Afterwards the caller checks `rdma res show` for leftovers.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

static const char *dev;

struct graph {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq[2];
	struct ibv_srq *srq;
	struct ibv_qp *qp[4];
	struct ibv_mr *mr[4];
	char *buf;
};

/* build the graph; returns 0 or -1 (partial graph left for teardown) */
static int build(struct graph *g, uint64_t *rs)
{
	memset(g, 0, sizeof(*g));
	g->ctx = open_dev(dev);
	if (!g->ctx)
		return -1;
	g->pd = ibv_alloc_pd(g->ctx);
	if (!g->pd)
		return -1;
	g->buf = aligned_alloc(4096, 4 * 16384);
	if (!g->buf)
		return -1;
	static const int acc[4] = {
		IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ,
	};
	for (int k = 0; k < 4; k++) {
		size_t len = (size_t)rnd_range(rs, 1, 16384);

		g->mr[k] = ibv_reg_mr(g->pd, g->buf + k * 16384, len, acc[k]);
		if (!g->mr[k])
			return -1;
	}
	g->ch = ibv_create_comp_channel(g->ctx);
	if (!g->ch)
		return -1;
	g->cq[0] = ibv_create_cq(g->ctx, (int)rnd_range(rs, 1, 512), NULL, g->ch, 0);
	g->cq[1] = ibv_create_cq(g->ctx, (int)rnd_range(rs, 16, 256), NULL, NULL, 0);
	if (!g->cq[0] || !g->cq[1])
		return -1;
	ibv_req_notify_cq(g->cq[0], 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = (uint32_t)rnd_range(rs, 1,
			128), .max_sge = 1 } };

	g->srq = ibv_create_srq(g->pd, &sa); /* optional: device may lack SRQ */
	for (int k = 0; k < 4; k++) {
		struct ibv_qp_init_attr qa = { 0 };

		qa.qp_type = IBV_QPT_RC;
		qa.send_cq = g->cq[k & 1];
		qa.recv_cq = g->cq[(k >> 1) & 1];
		qa.srq = (k >= 2) ? g->srq : NULL;
		qa.cap.max_send_wr = (uint32_t)rnd_range(rs, 1, 256);
		qa.cap.max_recv_wr = qa.srq ? 0 : (uint32_t)rnd_range(rs, 1, 256);
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = qa.srq ? 0 : 1;
		g->qp[k] = ibv_create_qp(g->pd, &qa);
		if (!g->qp[k])
			return -1;
	}
	/* post a few receives so there is work to flush */
	for (int k = 0; k < 4; k++) {
		struct ibv_sge sge = { (uintptr_t)g->buf, 64, g->mr[0]->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1 },
		*bad;

		if (g->qp[k]->srq)
			ibv_post_srq_recv(g->srq, &wr, &bad);
		else
			ibv_post_recv(g->qp[k], &wr, &bad);
	}
	/* move one QP to INIT and one to ERR */
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	if (ibv_modify_qp(g->qp[1], &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		ibv_modify_qp(g->qp[1], &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	a.qp_state = IBV_QPS_ERR;
	ibv_modify_qp(g->qp[2], &a, IBV_QP_STATE);
	return 0;
}

/* ordered teardown; returns number of failed destroy calls */
static int teardown(struct graph *g)
{
	int bad = 0;
	struct ibv_wc wc[16];

	for (int k = 0; k < 4; k++)
		if (g->qp[k])
			bad += !!ibv_destroy_qp(g->qp[k]);
	if (g->srq)
		bad += !!ibv_destroy_srq(g->srq);
	for (int k = 0; k < 2; k++)
		if (g->cq[k]) {
			while (ibv_poll_cq(g->cq[k], 16, wc) > 0)
				;
			bad += !!ibv_destroy_cq(g->cq[k]);
		}
	if (g->ch)
		bad += !!ibv_destroy_comp_channel(g->ch);
	for (int k = 0; k < 4; k++)
		if (g->mr[k])
			bad += !!ibv_dereg_mr(g->mr[k]);
	if (g->pd)
		bad += !!ibv_dealloc_pd(g->pd);
	if (g->ctx)
		bad += !!ibv_close_device(g->ctx);
	free(g->buf);
	return bad;
}

int main(int argc, char **argv)
{
	int cycles = 1000, kills = 20, c;
	uint64_t rs = 12345;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "d:n:k:S:")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'n':
			cycles = atoi(optarg);
			break;
		case 'k':
			kills = atoi(optarg);
			break;
		case 'S':
			rs = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: siw_churn -d DEV [-n cycles] [-k kills] [-S seed]\n");
			return 2;
		}
	}
	alarm(3000);
	struct ibv_context *probe = open_dev(dev);

	if (!probe)
		DIE("cannot open device %s", dev ? dev : "(first)");
	ibv_close_device(probe);

	/* phase 1: churn */
	int fails = 0, bad = 0, leaks = 0;
	double t0 = now_s();

	for (int i = 0; i < cycles; i++) {
		struct graph g;

		if (build(&g, &rs)) {
			if (fails++ < 5)
				printf("# cycle %d: build failed: %s\n", i, strerror(errno));
		}
		if (i % 10 == 9 && g.ctx) {
			/* close the device with every object still alive:
			 * the kernel must clean up on fd release
			 */
			ibv_close_device(g.ctx);
			free(g.buf);
			leaks++;
		} else {
			bad += teardown(&g);
		}
	}
	CHECK(fails == 0,
	      "churn: %d cycles of ctx/PD/4 MR/2 CQ/SRQ/4 QP (%d build failures) in %.1fs",
	      cycles, fails, now_s() - t0);
	CHECK(bad == 0, "churn: all destroy calls succeeded (%d failed)", bad);
	NOTE("%d cycles closed the device with live objects", leaks);

	/* phase 2: SIGKILL children holding objects */
	int ok_kills = 0;

	for (int k = 0; k < kills; k++) {
		int p[2];

		if (pipe(p))
			DIE("pipe");
		pid_t pid = fork();

		if (pid == 0) {
			close(p[0]);
			uint64_t crs = rs + (uint64_t)k;
			struct graph g;
			int r = build(&g, &crs);

			if (write(p[1], r ? "E" : "R", 1) < 0)
				_exit(3);
			if (k & 1) {
				/* mid-churn: keep building and tearing down */
				for (;;) {
					struct graph h;

					build(&h, &crs);
					teardown(&h);
				}
			}
			for (;;)
				pause();
		}
		close(p[1]);
		char ch = 0;

		if (read(p[0], &ch, 1) != 1)
			ch = '?';
		close(p[0]);
		struct timespec ts = { 0, (long)rnd_range(&rs, 0, 50) * 1000000L };

		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int st;

		waitpid(pid, &st, 0);
		if (ch == 'R' && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			ok_kills++;
		else
			printf("# kill %d: child said '%c', status 0x%x\n", k, ch, st);
	}
	CHECK(ok_kills == kills, "killed %d/%d children holding live objects", ok_kills, kills);
	/* the device must still be usable */
	struct graph g;
	int r = build(&g, &rs);

	CHECK(r == 0, "object graph can be built after the kills");
	CHECK(teardown(&g) == 0, "and torn down");
	printf("# %d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
