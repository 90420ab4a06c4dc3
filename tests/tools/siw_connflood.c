// SPDX-License-Identifier: GPL-2.0
/*
 * siw_connflood: many half-open connections to an iWARP listener: plain
 * TCP connections that never send an MPA request.
 *   siw_connflood -c ADDR:PORT -n N [-r PER_SEC] [-p PARALLEL]
 *                 [-T CONNECT_TIMEOUT] [-t MAX_SECS] [-w STOPFILE]
 * Opens N TCP connections to ADDR:PORT, PER_SEC a second at most
 * (default: as fast as it can), at most PARALLEL (default 32)
 * connecting at a time (a connect not done in CONNECT_TIMEOUT seconds,
 * default 3, is given up), sends nothing, and keeps every established
 * one open until STOPFILE exists or MAX_SECS (default 120) have passed
 * since the start; then closes them all. It notices the peer closing a
 * connection (reset or FIN). Bounded in count and time, it stops by
 * itself. The file descriptor limit is raised to fit N.
 *
 * Output: "# flood done ..." once all N were attempted, a "# t=..."
 * progress line every second, and at the end one line
 *   result attempted=A established=E refused=R timeout=T reset=X fin=F
 *          open_max=M open_end=O
 * (established: connects that completed; refused: connects that failed;
 * timeout: given up; reset/fin: established ones the peer closed;
 * open_max/open_end: established and not closed by the peer, at most /
 * at the end). Exit 0.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>

enum cstate { C_NONE, C_CONNECTING, C_OPEN, C_DONE };

struct conn {
	int fd;
	enum cstate st;
	double t0;
};

static int nconn, parallel = 32;
static double ctmo = 3, tmax = 120, rate;
static const char *stopfile;

static int stop_now(double t_start)
{
	return now_s() - t_start >= tmax || (stopfile && !access(stopfile, F_OK));
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	const char *target = NULL;
	struct conn *c;
	struct pollfd *pfd;
	int *idx;
	struct rlimit rl;
	int next = 0, connecting = 0, open_now = 0, open_max = 0;
	int n_est = 0, n_ref = 0, n_tmo = 0, n_rst = 0, n_fin = 0, done_said = 0, o;
	double t_start, last_note = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((o = getopt(argc, argv, "c:n:r:p:T:t:w:")) != -1) {
		switch (o) {
		case 'c':
			target = optarg;
			break;
		case 'n':
			nconn = atoi(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'p':
			parallel = atoi(optarg);
			break;
		case 'T':
			ctmo = atof(optarg);
			break;
		case 't':
			tmax = atof(optarg);
			break;
		case 'w':
			stopfile = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s -c ADDR:PORT -n N [-r PER_SEC] [-p PARALLEL] [-T CONNECT_TIMEOUT] [-t MAX_SECS] [-w STOPFILE]\n",
				argv[0]);
			return 2;
		}
	}
	if (!target || nconn < 1 || parallel < 1 || tmax <= 0)
		DIE("-c ADDR:PORT and -n N (> 0) are required");
	parse_addr_port(target, &sa);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)nconn + 64) {
		rl.rlim_cur = nconn + 64;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			DIE("cannot raise the fd limit to %d: %s", nconn + 64, strerror(errno));
	}
	c = calloc(nconn, sizeof(*c));
	pfd = calloc(nconn, sizeof(*pfd));
	idx = calloc(nconn, sizeof(*idx));
	if (!c || !pfd || !idx)
		DIE("calloc");
	t_start = now_s();

	while (!stop_now(t_start)) {
		int np = 0, r;
		double t = now_s();

		/* start connects up to the parallel bound */
		while (next < nconn && connecting < parallel &&
		       (rate <= 0 || next < (t - t_start) * rate)) {
			struct conn *k = &c[next++];

			k->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
			if (k->fd < 0)
				DIE("socket: %s (connection %d)", strerror(errno), next);
			k->t0 = now_s();
			r = connect(k->fd, (struct sockaddr *)&sa, sizeof(sa));
			if (!r) {
				k->st = C_OPEN;
				n_est++;
				open_now++;
			} else if (errno == EINPROGRESS) {
				k->st = C_CONNECTING;
				connecting++;
			} else {
				close(k->fd);
				k->st = C_DONE;
				n_ref++;
			}
		}
		if (next == nconn && !connecting && !done_said) {
			NOTE("flood done: %d attempted, %d established, %d refused, %d timed out, %d open now",
			     nconn, n_est, n_ref, n_tmo, open_now);
			done_said = 1;
		}
		for (int i = 0; i < next; i++) {
			if (c[i].st == C_CONNECTING) {
				if (t - c[i].t0 > ctmo) {
					close(c[i].fd);
					c[i].st = C_DONE;
					connecting--;
					n_tmo++;
					continue;
				}
				pfd[np].fd = c[i].fd;
				pfd[np].events = POLLOUT;
			} else if (c[i].st == C_OPEN) {
				pfd[np].fd = c[i].fd;
				pfd[np].events = POLLIN | POLLRDHUP;
			} else {
				continue;
			}
			pfd[np].revents = 0;
			idx[np++] = i;
		}
		r = poll(pfd, np, 100);
		if (r < 0 && errno != EINTR)
			DIE("poll: %s", strerror(errno));
		for (int j = 0; r > 0 && j < np; j++) {
			struct conn *k = &c[idx[j]];
			int err = 0;
			socklen_t el = sizeof(err);
			char b[64];
			ssize_t got;

			if (!pfd[j].revents)
				continue;
			if (k->st == C_CONNECTING) {
				getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &el);
				connecting--;
				if (err) {
					close(k->fd);
					k->st = C_DONE;
					n_ref++;
				} else {
					k->st = C_OPEN;
					n_est++;
					open_now++;
				}
				continue;
			}
			/* established: anything readable is the peer closing (or talking) */
			got = recv(k->fd, b, sizeof(b), MSG_DONTWAIT);
			if (got > 0)
				continue; /* a peer that talks first: not expected, keep it */
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got < 0)
				n_rst++;
			else
				n_fin++;
			close(k->fd);
			k->st = C_DONE;
			open_now--;
		}
		if (open_now > open_max)
			open_max = open_now;
		if (now_s() - last_note >= 1) {
			last_note = now_s();
			NOTE("t=%.1f attempted=%d established=%d refused=%d timeout=%d reset=%d fin=%d open=%d",
			     last_note - t_start, next, n_est, n_ref, n_tmo, n_rst, n_fin,
			     open_now);
		}
	}
	for (int i = 0; i < next; i++)
		if (c[i].st == C_OPEN || c[i].st == C_CONNECTING)
			close(c[i].fd);
	printf("result attempted=%d established=%d refused=%d timeout=%d reset=%d fin=%d open_max=%d open_end=%d\n",
	       next, n_est, n_ref, n_tmo, n_rst, n_fin, open_max, open_now);
	return 0;
}
