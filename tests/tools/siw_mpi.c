// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw_mpi: an MPI job whose every byte is checked, for the consumer tests
 * (tests/cases/datapath/mpi.sh): rank 0 and every other rank ping-pong
 * messages of 1 byte to 4 MiB (each filled from its size, round and
 * sender, compared on arrival and on return), then all ranks run
 * Allreduce, Alltoall and Bcast with known answers. Rank 0 prints the
 * ping-pong's half round trip and bandwidth by size with the last rank
 * (on another host when the ranks fill hosts in order), then one "ok -"
 * summary; any mismatch prints "FAIL -" and aborts the job.
 *
 * usage: siw_mpi [rounds]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSG (4u << 20)
#define NSIZES 12 /* 1 B, 4 B, ... 4 MiB */

static int rank, nranks;

static void die(const char *what, size_t at)
{
	fprintf(stderr, "FAIL - rank %d: %s (at %zu)\n", rank, what, at);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* byte i of the message of @size from @from in @round */
static uint8_t pat(size_t i, size_t size, int from, int round)
{
	return (uint8_t)(i * 131 + size * 7 + from * 29 + round * 17 + (i >> 11));
}

static void fill(uint8_t *b, size_t size, int from, int round)
{
	for (size_t i = 0; i < size; i++)
		b[i] = pat(i, size, from, round);
}

static void check(const uint8_t *b, size_t size, int from, int round)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != pat(i, size, from, round))
			die("ping-pong payload differs", i);
}

/*
 * rank 0 against @peer: one message each way per size and round; @secs
 * (rank 0) gets the round trips' time per size, filling and checking
 * outside the timed part on both sides
 */
static unsigned long long pingpong(uint8_t *sb, uint8_t *rb, int peer,
				   int rounds, double *secs)
{
	unsigned long long bytes = 0;
	double t;

	for (int r = 0; r < rounds; r++) {
		int k = 0;

		for (size_t size = 1; size <= MAX_MSG; size *= 4, k++) {
			if (rank == 0) {
				fill(sb, size, 0, r);
				t = MPI_Wtime();
				MPI_Send(sb, size, MPI_BYTE, peer, r, MPI_COMM_WORLD);
				MPI_Recv(rb, size, MPI_BYTE, peer, r, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				secs[k] += MPI_Wtime() - t;
				check(rb, size, peer, r);
			} else {
				/* the answer is ready before the message comes */
				fill(sb, size, rank, r);
				MPI_Recv(rb, size, MPI_BYTE, 0, r, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(sb, size, MPI_BYTE, 0, r, MPI_COMM_WORLD);
				check(rb, size, 0, r);
			}
			bytes += 2 * size;
		}
	}
	return bytes;
}

static void collectives(void)
{
	long long mine = rank + 1, sum = 0, want = (long long)nranks * (nranks + 1) / 2;
	int *out = calloc(nranks, sizeof(int)), *in = calloc(nranks, sizeof(int));
	uint8_t *bc = malloc(1 << 20);

	if (!out || !in || !bc)
		die("out of memory", 0);
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (sum != want)
		die("Allreduce sum wrong", (size_t)sum);
	for (int i = 0; i < nranks; i++)
		out[i] = rank * 1000 + i;
	MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < nranks; i++)
		if (in[i] != i * 1000 + rank)
			die("Alltoall element wrong", i);
	if (rank == 0)
		fill(bc, 1 << 20, 0, 99);
	MPI_Bcast(bc, 1 << 20, MPI_BYTE, 0, MPI_COMM_WORLD);
	check(bc, 1 << 20, 0, 99);
	free(out);
	free(in);
	free(bc);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	unsigned long long bytes = 0;
	double secs[NSIZES];
	uint8_t *sb, *rb;

	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2 || rounds < 1)
		die("needs 2 or more ranks and 1 or more rounds", nranks);
	sb = malloc(MAX_MSG);
	rb = malloc(MAX_MSG);
	if (!sb || !rb)
		die("out of memory", 0);
	for (int peer = 1; peer < nranks; peer++) {
		memset(secs, 0, sizeof(secs));
		if (rank == 0 || rank == peer)
			bytes += pingpong(sb, rb, peer, rounds, secs);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	/* secs: the last peer's, the one on the farthest host */
	for (int k = 0; rank == 0 && k < NSIZES; k++) {
		double half = secs[k] / rounds / 2;
		size_t size = (size_t)1 << (2 * k);

		printf("# pingpong 0<->%d: %8zu B %10.1f us %9.2f MB/s\n",
		       nranks - 1, size, half * 1e6, size / half / 1e6);
	}
	collectives();
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("ok - siw_mpi: %d ranks, %d rounds of ping-pong 1 B..4 MiB with rank 0 (%llu bytes checked there), Allreduce, Alltoall, Bcast checked\n",
		       nranks, rounds, bytes);
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
