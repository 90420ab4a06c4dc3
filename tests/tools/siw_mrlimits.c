// SPDX-License-Identifier: GPL-2.0
/*
 * siw_mrlimits: memory registration limits.
 *
 *   siw_mrlimits memlock -d DEV -l LIMIT
 *       Run without CAP_IPC_LOCK, with RLIMIT_MEMLOCK = LIMIT bytes (a
 *       multiple of the page size; checked first). Registrations are
 *       accounted in pages against the limit (ib_umem): exactly LIMIT
 *       bytes register, one page more fails with ENOMEM, a failed attempt
 *       takes nothing from the budget and a deregistration gives its pages
 *       back.
 *
 *   siw_mrlimits big -a ADDR -p PORT -s SIZE [-w WINDOW]
 *       One MR of SIZE bytes (SIZE 0: the device's max_mr_size), used by
 *       RDMA Writes and Reads of a loopback RC pair (rdma_cm, ADDR:PORT)
 *       at its start, middle and end, as the remote buffer and as the
 *       local one; every byte is checked. Without -w the MR is anonymous
 *       memory (SIZE bytes really pinned), and at the end the whole MR
 *       is compared (written ranges hold their last pattern, the rest is
 *       zero). With -w the MR is one memfd of WINDOW bytes mapped over and
 *       over (each page pinned as often as it is mapped), which reaches
 *       max_mr_size with little memory; the whole window is poisoned
 *       before and compared after every operation. With SIZE 0 also:
 *       max_mr_size + 1 bytes fail with EINVAL.
 *
 * One line per check ("ok - ..." / "FAIL - ..."); exit 1 if any failed.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define MB (1024ull * 1024)
#define XLEN (MB + 13)		/* bytes per operation: not page aligned */
#define SMALL (4 * MB)		/* the small MR: source and sink */

static long page;

static const char *ename(int e)
{
	return e == ENOMEM ? "ENOMEM" : e == EINVAL ? "EINVAL" : e == EPERM ? "EPERM" :
	       e == EFAULT ? "EFAULT" : e ? strerror(e) : "no errno";
}

/* ------------------------------------------------------------- memlock */

static int cap_ipc_lock(void)
{
	char l[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(l, sizeof(l), f))
		if (sscanf(l, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return !!(eff & (1ull << 14));
}

static struct ibv_mr *try_reg(struct ibv_pd *pd, uint8_t *p, size_t len, int *err)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE);
	*err = mr ? 0 : errno;
	return mr;
}

/* a registration of len bytes at p must fail with ENOMEM */
static void want_enomem(struct ibv_pd *pd, uint8_t *p, size_t len, const char *what)
{
	int e;
	struct ibv_mr *mr = try_reg(pd, p, len, &e);

	if (mr) {
		FAIL("%s: %zu bytes registered beyond RLIMIT_MEMLOCK", what, len);
		ibv_dereg_mr(mr);
		return;
	}
	CHECK(e == ENOMEM, "%s: %zu bytes refused with %s (expected ENOMEM)", what, len, ename(e));
}

static struct ibv_mr *want_ok(struct ibv_pd *pd, uint8_t *p, size_t len, const char *what)
{
	int e;
	struct ibv_mr *mr = try_reg(pd, p, len, &e);

	CHECK(mr, "%s: %zu bytes registered%s%s", what, len, mr ? "" : ", failed: ",
	      mr ? "" : ename(e));
	return mr;
}

static int run_memlock(const char *dev, size_t limit)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur != limit)
		DIE("RLIMIT_MEMLOCK is %llu, expected %zu", (unsigned long long)rl.rlim_cur, limit);
	if (geteuid() == 0 || cap_ipc_lock() != 0)
		DIE("runs as uid %u with CAP_IPC_LOCK %d: the limit would not apply", geteuid(),
		    cap_ipc_lock());
	if (limit % page || limit < 4 * (size_t)page)
		DIE("limit %zu: not a multiple of 4 pages", limit);
	NOTE("uid %u, no CAP_IPC_LOCK, RLIMIT_MEMLOCK %zu bytes (%zu pages)", geteuid(), limit,
	     limit / page);

	struct ibv_context *ctx = open_dev(dev);

	if (!ctx)
		DIE("cannot open %s: %s", dev, strerror(errno));
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	if (!pd)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	uint8_t *buf = mmap(NULL, 4 * limit, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED)
		DIE("mmap: %s", strerror(errno));
	memset(buf, 0x5a, 4 * limit);

	want_enomem(pd, buf, 2 * limit, "twice the limit");
	for (int i = 0; i < 50; i++) {
		int e;
		struct ibv_mr *mr = try_reg(pd, buf, limit + page, &e);

		if (mr || e != ENOMEM) {
			FAIL("attempt %d of one page over the limit: %s", i,
			     mr ? "registered" : ename(e));
			if (mr)
				ibv_dereg_mr(mr);
			break;
		}
		if (i == 49)
			OK("50 attempts of one page over the limit: each refused with ENOMEM");
	}
	/* the failed attempts took nothing: exactly the limit still fits */
	struct ibv_mr *a = want_ok(pd, buf, limit, "exactly the limit, after the refusals");

	want_enomem(pd, buf + 2 * limit, page, "one more page while the limit is used");
	want_enomem(pd, buf + 2 * limit, 1, "one more byte while the limit is used");
	if (a)
		ibv_dereg_mr(a);
	/* the deregistration gave the pages back */
	struct ibv_mr *b = want_ok(pd, buf, page, "one page after the deregistration");
	struct ibv_mr *c = want_ok(pd, buf + 2 * limit, limit - page, "the rest of the limit");

	want_enomem(pd, buf + 3 * limit, page, "one page beyond, in a third MR");
	if (b)
		ibv_dereg_mr(b);
	if (c)
		ibv_dereg_mr(c);
	/* pages are counted, not bytes: LIMIT bytes that straddle one more page */
	want_enomem(pd, buf + 1, limit, "the limit's length at an unaligned address (one page more)");
	a = want_ok(pd, buf + 1, limit - page, "one page less at that address");
	if (a)
		ibv_dereg_mr(a);
	/* and the same twice in a row */
	a = want_ok(pd, buf, limit / 2, "half the limit");
	b = want_ok(pd, buf + limit, limit / 2, "the other half");
	want_enomem(pd, buf + 2 * limit, page, "a page beyond both halves");
	if (a)
		ibv_dereg_mr(a);
	if (b)
		ibv_dereg_mr(b);
	if (ibv_dealloc_pd(pd))
		FAIL("ibv_dealloc_pd: %s", strerror(errno));
	if (ibv_close_device(ctx))
		FAIL("ibv_close_device: %s", strerror(errno));
	printf("%s - memlock: %d failure(s)\n", t_failures ? "FAIL" : "ok", t_failures);
	return t_failures ? 1 : 0;
}

/* ----------------------------------------------------------------- big */

static struct lb_pair lp;
static struct ibv_mr *bmr, *smr;
static uint8_t *big, *small, *win, *ref;
static size_t bsize, wsize;	/* wsize 0: anonymous */
static uint8_t *smsg;		/* receive slot of the server QP */

/* the byte of the big MR at offset off, as the CPU sees it */
static uint8_t *at(size_t off)
{
	return big + off;
}

static int wait_cq(struct ibv_cq *cq, uint64_t wrid, const char *what)
{
	struct ibv_wc wc;

	if (poll_one(cq, &wc, 60) != 1) {
		FAIL("%s: no completion within 60 s", what);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wrid) {
		FAIL("%s: completion wr_id %llu status %s", what, (unsigned long long)wc.wr_id,
		     wc_status_name(wc.status));
		return -1;
	}
	return 0;
}

/* one RDMA op from the client QP; then a Send to the server QP, whose
 * receive completion means everything before it was placed
 */
static int rdma_op(enum ibv_wr_opcode op, uint8_t *laddr, uint32_t lkey, uint8_t *raddr,
		   uint32_t rkey, size_t len, const char *what)
{
	struct ibv_sge sg = { (uintptr_t)laddr, (uint32_t)len, lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_sge rsg = { (uintptr_t)smsg, 64, smr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &rsg, .num_sge = 1 }, *rbad;
	struct ibv_send_wr snd = { .wr_id = 2, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_recv(lp.srv->qp, &rwr, &rbad) || ibv_post_send(lp.cli->qp, &wr, &bad)) {
		FAIL("%s: post: %s", what, strerror(errno));
		return -1;
	}
	if (wait_cq(lp.cq_cli, 1, what))
		return -1;
	if (ibv_post_send(lp.cli->qp, &snd, &bad)) {
		FAIL("%s: post Send: %s", what, strerror(errno));
		return -1;
	}
	if (wait_cq(lp.cq_cli, 2, what) || wait_cq(lp.cq_srv, 3, what))
		return -1;
	return 0;
}

/* poison (alias mode: the whole window; anonymous: nothing, it is zero) */
static void poison(uint64_t key)
{
	if (wsize)
		pat_fill(win, key, 0, wsize);
}

/*
 * After an operation that put pattern key at MR offset off (len bytes):
 * alias mode: the window holds the pattern at off's residue, the poison
 * elsewhere; anonymous: the pattern, and zero a page either side.
 */
static int check_big(size_t off, size_t len, uint64_t key, uint64_t pkey, const char *what)
{
	size_t d;

	d = pat_check(at(off), key, 0, len);
	if (d != (size_t)-1) {
		FAIL("%s: MR byte at offset %zu is 0x%02x, expected 0x%02x", what, off + d,
		     at(off)[d], pat_byte(key, d));
		return -1;
	}
	if (wsize) {
		/* outside [r, r + len) of the window (wrapping): the poison */
		size_t r = off % wsize, e = (r + len) % wsize;
		size_t seg[2][2] = { { 0, 0 }, { 0, 0 } };

		pat_fill(ref, pkey, 0, wsize);
		if (r + len <= wsize) {
			seg[0][1] = r;
			seg[1][0] = r + len;
			seg[1][1] = wsize;
		} else {
			seg[0][0] = e;
			seg[0][1] = r;
		}
		for (int k = 0; k < 2; k++) {
			d = first_diff(win + seg[k][0], ref + seg[k][0], seg[k][1] - seg[k][0]);
			if (d != (size_t)-1) {
				d += seg[k][0];
				FAIL("%s: stray byte in the window at %zu (MR offsets = %zu mod %zu): 0x%02x",
				     what, d, d, wsize, win[d]);
				return -1;
			}
		}
		return 0;
	}
	size_t lo = off >= (size_t)page ? off - page : 0;
	size_t hi = off + len + page <= bsize ? off + len + page : bsize;

	for (size_t i = lo; i < hi; i++) {
		if (i >= off && i < off + len)
			continue;
		if (*at(i)) {
			FAIL("%s: byte at MR offset %zu next to the target changed: 0x%02x",
			     what, i,
			     *at(i));
			return -1;
		}
	}
	return 0;
}

static int at_position(size_t off, const char *name, int n)
{
	char what[128];
	uint64_t k1 = 0x1000 + n, k2 = 0x2000 + n, k3 = 0x3000 + n, pk = 0x9000 + n;
	size_t d;

	/* 1: RDMA Write into the big MR */
	snprintf(what, sizeof(what), "%s (offset %zu): RDMA Write into the MR", name, off);
	poison(pk);
	pat_fill(small, k1, 0, XLEN);
	if (rdma_op(IBV_WR_RDMA_WRITE, small, smr->lkey, (uint8_t *)bmr->addr + off, bmr->rkey,
		    XLEN, what) || check_big(off, XLEN, k1, pk, what))
		return -1;
	OK("%s: %llu bytes verified", what, (unsigned long long)XLEN);

	/* 2: RDMA Read from the big MR */
	snprintf(what, sizeof(what), "%s (offset %zu): RDMA Read from the MR", name, off);
	pat_fill(at(off), k2, 0, XLEN);
	memset(small, 0xa5, SMALL);
	if (rdma_op(IBV_WR_RDMA_READ, small, smr->lkey, (uint8_t *)bmr->addr + off, bmr->rkey,
		    XLEN, what))
		return -1;
	d = pat_check(small, k2, 0, XLEN);
	if (d != (size_t)-1) {
		FAIL("%s: byte %zu read 0x%02x, expected 0x%02x", what, d, small[d],
		     pat_byte(k2, d));
		return -1;
	}
	for (size_t i = XLEN; i < SMALL; i++)
		if (small[i] != 0xa5) {
			FAIL("%s: the sink changed past the Read's end, at %zu", what, i);
			return -1;
		}
	OK("%s: %llu bytes verified", what, (unsigned long long)XLEN);

	/* 3: the big MR as the local source of a Write */
	snprintf(what, sizeof(what), "%s (offset %zu): RDMA Write from the MR", name, off);
	memset(small, 0xa5, SMALL);
	if (rdma_op(IBV_WR_RDMA_WRITE, at(off), bmr->lkey, small + 7, smr->rkey, XLEN, what))
		return -1;
	d = pat_check(small + 7, k2, 0, XLEN);
	if (d != (size_t)-1 || small[6] != 0xa5 || small[7 + XLEN] != 0xa5) {
		FAIL("%s: the target differs (first bad byte %zd)", what, (ssize_t)d);
		return -1;
	}
	OK("%s: %llu bytes verified", what, (unsigned long long)XLEN);

	/* 4: the big MR as the local sink of a Read */
	snprintf(what, sizeof(what), "%s (offset %zu): RDMA Read into the MR", name, off);
	poison(pk);
	if (!wsize)
		memset(at(off), 0, XLEN);
	pat_fill(small, k3, 0, XLEN);
	if (rdma_op(IBV_WR_RDMA_READ, at(off), bmr->lkey, small, smr->rkey, XLEN, what) ||
	    check_big(off, XLEN, k3, pk, what))
		return -1;
	OK("%s: %llu bytes verified", what, (unsigned long long)XLEN);
	return 0;
}

static int run_big(const char *addr, int port, size_t size, size_t window)
{
	struct ibv_qp_init_attr cap = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_device_attr da;
	int e;

	if (lb_pair_create(&lp, addr, port, &cap, 30))
		DIE("loopback RC pair on %s:%d failed", addr, port);
	if (ibv_query_device(lp.ctx, &da))
		DIE("ibv_query_device");
	NOTE("device %s: max_mr_size %llu", ibv_get_device_name(lp.ctx->device),
	     (unsigned long long)da.max_mr_size);
	int at_max = !size;

	if (at_max)
		size = da.max_mr_size;
	if (size > da.max_mr_size)
		DIE("size %zu above max_mr_size %llu", size, (unsigned long long)da.max_mr_size);
	if (size < 3 * XLEN)
		DIE("size %zu too small", size);
	bsize = size;
	wsize = window;
	small = mmap(NULL, SMALL, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (small == MAP_FAILED)
		DIE("mmap: %s", strerror(errno));
	smr = ibv_reg_mr(lp.pd, small, SMALL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	smsg = small + SMALL - 4096;
	if (!smr)
		DIE("small MR: %s", strerror(errno));

	size_t span = (size + 1 + page - 1) & ~((size_t)page - 1); /* room for size + 1 */

	if (window) {
		if (window % page || window < 2 * XLEN)
			DIE("window %zu: a multiple of the page size, at least %llu", window,
			    2 * XLEN);
		int fd = memfd_create("siw_mrlimits", 0);

		if (fd < 0 || ftruncate(fd, (off_t)window))
			DIE("memfd: %s", strerror(errno));
		big = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			   -1, 0);
		if (big == MAP_FAILED)
			DIE("reserve %zu bytes of address space: %s", span, strerror(errno));
		for (size_t o = 0; o < span; o += window) {
			size_t l = span - o < window ? span - o : window;

			if (mmap(big + o, l, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
				 0) == MAP_FAILED)
				DIE("map the window at %zu: %s", o, strerror(errno));
		}
		win = big;
		ref = malloc(window);
		if (!ref)
			DIE("out of memory");
		NOTE("MR of %zu bytes: one %zu-byte memfd mapped %zu times", size, window,
		     (span + window - 1) / window);
	} else {
		big = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (big == MAP_FAILED)
			DIE("mmap %zu: %s", span, strerror(errno));
		NOTE("MR of %zu bytes of anonymous memory", size);
	}
	if (at_max) {
		struct ibv_mr *mr;

		errno = 0;
		mr = ibv_reg_mr(lp.pd, big, size + 1, IBV_ACCESS_LOCAL_WRITE);
		e = errno;
		if (mr) {
			FAIL("max_mr_size + 1 = %zu bytes registered", size + 1);
			ibv_dereg_mr(mr);
		} else {
			CHECK(e == EINVAL, "max_mr_size + 1 = %zu bytes refused with %s (expected EINVAL)",
			      size + 1, ename(e));
		}
	}
	double t0 = now_s();

	bmr = ibv_reg_mr(lp.pd, big, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	if (!bmr) {
		FAIL("registering %zu bytes: %s", size, ename(errno));
		return 1;
	}
	OK("%zu bytes (%.2f GiB) registered in %.1f s, rkey 0x%x", size,
	   size / (1024.0 * MB), now_s() - t0, bmr->rkey);

	size_t pos[3] = { 0, size / 2 - XLEN / 2 + 1, size - XLEN };
	static const char * const pname[3] = { "start", "middle", "end" };

	for (int i = 0; i < 3; i++)
		if (at_position(pos[i], pname[i], i))
			break;
	if (!wsize && !t_failures) {
		/* the whole MR: the last patterns where they were put, zero elsewhere */
		static const uint8_t zero[4096];
		size_t bad = (size_t)-1;

		for (size_t i = 0; i < size && bad == (size_t)-1; i += 4096) {
			size_t l = size - i < 4096 ? size - i : 4096;
			int hit = 0;

			for (int k = 0; k < 3; k++)
				hit |= i < pos[k] + XLEN && pos[k] < i + l;
			if (!hit) {
				if (memcmp(big + i, zero, l))
					bad = i + first_diff(big + i, zero, l);
				continue;
			}
			for (size_t j = 0; j < l; j++) {
				size_t o = i + j;
				int p = -1;

				for (int k = 0; k < 3; k++)
					if (o >= pos[k] && o < pos[k] + XLEN)
						p = k;
				uint8_t want = p < 0 ? 0 : pat_byte(0x3000 + p, o - pos[p]);

				if (big[o] != want) {
					bad = o;
					break;
				}
			}
		}
		if (bad != (size_t)-1)
			FAIL("whole MR: byte at offset %zu is 0x%02x", bad, big[bad]);
		else
			OK("whole MR of %zu bytes compared: the three targets hold their last pattern, every other byte is zero",
			   size);
	}
	if (ibv_dereg_mr(bmr))
		FAIL("deregistering the big MR: %s", strerror(errno));
	ibv_dereg_mr(smr);
	lb_pair_destroy(&lp);
	printf("%s - big MR: %d failure(s)\n", t_failures ? "FAIL" : "ok", t_failures);
	return t_failures ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: siw_mrlimits memlock -d DEV -l LIMIT\n"
		"       siw_mrlimits big -a ADDR -p PORT -s SIZE [-w WINDOW]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *addr = NULL;
	size_t limit = 0, size = (size_t)-1, window = 0;
	int port = 0, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	page = sysconf(_SC_PAGESIZE);
	if (argc < 2)
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "d:l:a:p:s:w:h")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'l':
			limit = strtoull(optarg, NULL, 0);
			break;
		case 's':
			size = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			window = strtoull(optarg, NULL, 0);
			break;
		default:
			if (!lb_opt(c, optarg, &addr, &port))
				usage();
		}
	}
	alarm(900);
	if (!strcmp(argv[1], "memlock") && dev && limit)
		return run_memlock(dev, limit);
	if (!strcmp(argv[1], "big") && addr && port && size != (size_t)-1)
		return run_big(addr, port, size, window);
	usage();
	return 2;
}
