// SPDX-License-Identifier: GPL-2.0
/*
 * siw_memhog: create verbs objects of one kind until the kernel refuses,
 * and say where the memory went (for the memory cgroup test).
 *   siw_memhog -d DEV -k cq|qp|mr [-b BUDGET_MIB] [-s MR_BUF_MIB] [-n MAX]
 *
 * Kinds: cq = CQs of 65536 entries (a 2 MiB ring each); qp = RC QPs with
 * 16384-WR send and receive queues (two rings, about 3.8 MiB); mr = MRs
 * of one S MiB buffer (default 16) registered again and again: the
 * buffer's pages are the process's (touched once, charged to its cgroup
 * once), each registration adds the MR's page array in the kernel
 * (8 bytes per page).
 *
 * Before it creates anything it notes the memory the whole system uses
 * (MemTotal - MemAvailable, /proc/meminfo) and its own cgroup's
 * memory.current (cgroup v2, found through /proc/self/cgroup); it stops
 * at the first failure, or when the system's use grew by BUDGET MiB
 * (default 256: a bound for kernels that do not charge the objects, where
 * nothing would stop it before the machine runs out), or after MAX
 * objects. Then it prints
 *   result kind=K created=N stop=errno|budget|max errno=E (TEXT)
 *          d_used_kib=U d_cg_kib=C outside_kib=U-C
 * (one line): U is what the system's use grew by, C what the cgroup was
 * charged, their difference the memory taken outside the cgroup. Then it
 * frees everything and prints "freed d_used_kib=... d_cg_kib=...".
 * Exit 0 when it got that far, 1 on a setup failure.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>
#include <sys/mman.h>

#define MIB (1024L * 1024)

static char cg_current[600];
static int cg_fd = -1, meminfo_fd = -1;

/*
 * The counters are read through descriptors opened at the start into a
 * static buffer: at the cgroup's limit a new allocation or a page fault
 * of this process would be charged and could wake the OOM killer.
 */
static char rdbuf[4096];

static const char *read_fd(int fd)
{
	ssize_t n = pread(fd, rdbuf, sizeof(rdbuf) - 1, 0);

	if (n < 0)
		return NULL;
	rdbuf[n] = 0;
	return rdbuf;
}

/* memory.current of this process's cgroup, in bytes; -1 if none */
static long cg_now(void)
{
	const char *t;

	if (cg_fd < 0)
		cg_fd = open(cg_current, O_RDONLY);
	t = cg_fd < 0 ? NULL : read_fd(cg_fd);
	return t ? strtol(t, NULL, 10) : -1;
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static long sys_used(void);

/*
 * The system's use once what was freed late (RCU callbacks, work items,
 * per-CPU page lists) has come back: the lowest reading, taken every 100
 * ms, until it is back at @base or has not gone down for 2 s (15 s at
 * most). A leak stays above @base however long this waits.
 */
static long settled_used(long base)
{
	long t0 = now_ms(), low = sys_used(), last = t0, t, u;

	while (low > base && (t = now_ms()) - last < 2000 && t - t0 < 15000) {
		usleep(100000);
		u = sys_used();
		if (u < low - 65536) {
			low = u;
			last = now_ms();
		}
	}
	NOTE("after freeing: settled in %ld ms", now_ms() - t0);
	return low;
}

/*
 * Wait until this cgroup's charge is back within 1 MiB of @base (15 s at
 * most): MRs are freed after an RCU grace period and a work item, and a
 * system-wide reading taken before that would still count them. The time
 * is logged: it tells a late free from memory that stays outside.
 */
static void cg_settle(long base)
{
	long t0 = now_ms(), c;

	if (base < 0)
		return;
	while ((c = cg_now()) > base + (1 << 20) && now_ms() - t0 < 15000)
		usleep(100000);
	NOTE("after freeing: cgroup back within 1 MiB of its baseline in %ld ms (%ld KiB above)",
	     now_ms() - t0, (c - base) / 1024);
}

/* MemTotal - MemAvailable, in bytes */
static long sys_used(void)
{
	const char *t, *a;
	long tot, avail;

	if (meminfo_fd < 0)
		meminfo_fd = open("/proc/meminfo", O_RDONLY);
	t = meminfo_fd < 0 ? NULL : read_fd(meminfo_fd);
	a = t ? strstr(t, "MemAvailable:") : NULL;
	if (!a || sscanf(t, "MemTotal: %ld kB", &tot) != 1 ||
	    sscanf(a, "MemAvailable: %ld kB", &avail) != 1)
		return -1;
	return (tot - avail) * 1024;
}

/* AnonHugePages of this process, in KiB (-1: unknown) */
static long thp_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[128];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

static int find_cgroup(void)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[512];
	int ok = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* cgroup v2: "0::/path" */
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(cg_current, sizeof(cg_current), "/sys/fs/cgroup%s/memory.current",
				 strcmp(line + 3, "/") ? line + 3 : "");
			ok = 1;
		}
	}
	fclose(f);
	return ok && cg_now() >= 0 ? 0 : -1;
}

static void usage(const char *p)
{
	fprintf(stderr, "usage: %s -d DEV -k cq|qp|mr [-b BUDGET_MIB] [-s MR_BUF_MIB] [-n MAX]\n",
		p);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *kind = NULL;
	long budget = 256 * MIB, bufsz = 16 * MIB, max = 100000;
	long used0, cg0, used1, cg1, used2, cg2;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq = NULL;
	void **obj;
	char *buf = NULL;
	long n = 0;
	int c, err = 0;
	const char *stop = "max";

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "d:k:b:s:n:")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'k':
			kind = optarg;
			break;
		case 'b':
			budget = atol(optarg) * MIB;
			break;
		case 's':
			bufsz = atol(optarg) * MIB;
			break;
		case 'n':
			max = atol(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (!dev || !kind || (strcmp(kind, "cq") && strcmp(kind, "qp") && strcmp(kind, "mr")) ||
	    max < 1 || budget < MIB || bufsz < MIB)
		usage(argv[0]);
	if (find_cgroup())
		DIE("no cgroup v2 memory.current for this process (/proc/self/cgroup)");
	/* every page this process needs later is touched now */
	obj = calloc(max, sizeof(*obj));
	if (!obj)
		DIE("calloc");
	memset(obj, 0, max * sizeof(*obj));
	ctx = open_dev(dev);
	if (!ctx)
		DIE("cannot open %s", dev);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	if (!strcmp(kind, "qp")) {
		scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!scq)
			DIE("ibv_create_cq: %s", strerror(errno));
	}
	if (!strcmp(kind, "mr")) {
		/* 2 MiB aligned and huge pages if the kernel gives them: few umem segments */
		buf = mmap(NULL, bufsz + 2 * MIB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			DIE("mmap %ld MiB: %s", bufsz / MIB, strerror(errno));
		buf = (char *)(((unsigned long)buf + 2 * MIB - 1) & ~(2 * MIB - 1));
		madvise(buf, bufsz, MADV_HUGEPAGE);
		memset(buf, 0x4d, bufsz);
		NOTE("MR buffer %ld MiB, of it in huge pages: %ld KiB", bufsz / MIB, thp_kib());
	}
	NOTE("memhog kind=%s dev=%s cgroup file %s", kind, dev, cg_current);
	/* what this process needs stays resident: no fault at the limit */
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		DIE("mlockall: %s", strerror(errno));
	setvbuf(stdout, NULL, _IOLBF, 0);
	usleep(200000);
	used0 = sys_used();
	cg0 = cg_now();
	NOTE("baseline used_kib=%ld cg_kib=%ld", used0 / 1024, cg0 / 1024);

	for (n = 0; n < max; n++) {
		void *o;

		if (!strcmp(kind, "cq")) {
			o = ibv_create_cq(ctx, 65536, NULL, NULL, 0);
		} else if (!strcmp(kind, "qp")) {
			struct ibv_qp_init_attr qa = {
				.send_cq = scq, .recv_cq = scq, .qp_type = IBV_QPT_RC,
				.cap = { .max_send_wr = 16384, .max_recv_wr = 16384,
					 .max_send_sge = 1, .max_recv_sge = 1 },
			};
			o = ibv_create_qp(pd, &qa);
		} else {
			o = ibv_reg_mr(pd, buf, bufsz, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		}
		if (!o) {
			err = errno;
			stop = "errno";
			break;
		}
		obj[n] = o;
		if (sys_used() - used0 > budget) {
			n++;
			stop = "budget";
			break;
		}
	}
	usleep(200000);
	used1 = sys_used();
	cg1 = cg_now();
	printf("result kind=%s created=%ld stop=%s errno=%d (%s) d_used_kib=%ld d_cg_kib=%ld outside_kib=%ld\n",
	       kind, n, stop, err, err ? strerror(err) : "none", (used1 - used0) / 1024,
	       (cg1 - cg0) / 1024, ((used1 - used0) - (cg1 - cg0)) / 1024);

	for (long i = 0; i < n; i++) {
		int rv;

		if (!strcmp(kind, "cq"))
			rv = ibv_destroy_cq(obj[i]);
		else if (!strcmp(kind, "qp"))
			rv = ibv_destroy_qp(obj[i]);
		else
			rv = ibv_dereg_mr(obj[i]);
		if (rv)
			DIE("destroying %s %ld of %ld: %s", kind, i, n, strerror(rv));
	}
	cg_settle(cg0);
	used2 = settled_used(used0);
	cg2 = cg_now();
	printf("freed d_used_kib=%ld d_cg_kib=%ld\n", (used2 - used0) / 1024, (cg2 - cg0) / 1024);
	if (scq)
		ibv_destroy_cq(scq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
