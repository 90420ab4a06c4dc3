// SPDX-License-Identifier: GPL-2.0
/*
 * siw_pattest: the data-check pattern (pattern.c) is the same bytes on
 * every architecture. Run natively and, cross-built static for s390x
 * (big-endian), under qemu-user: make -C tests/tools check-pattern.
 *
 *  - pat_fill() writes byte i as pat_byte(key, k0 + i) for every start
 *    alignment and length, nothing outside [0, len);
 *  - pat_check() accepts that and finds a flipped byte where it is;
 *  - a digest of a fill equals the one amd64 gives, so a pattern whose
 *    pat_byte() and pat_fill() agree in host order still fails on the
 *    other byte order.
 */
#include "pattern.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf(ok ? "ok - " : "FAIL - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

#define GUARD 16
#define BIG 4109
static uint8_t buf[GUARD + BIG + GUARD];

/* fill [GUARD, GUARD + len) after poisoning all of buf; first bad index */
static long fill_and_compare(uint64_t key, uint64_t k0, size_t len)
{
	memset(buf, 0xa5, sizeof(buf));
	pat_fill(buf + GUARD, key, k0, len);
	for (size_t i = 0; i < sizeof(buf); i++) {
		int in = i >= GUARD && i < GUARD + len;
		uint8_t want = in ? pat_byte(key, k0 + i - GUARD) : 0xa5;

		if (buf[i] != want)
			return (long)i - GUARD;
	}
	return -1000000;
}

/* FNV-1a over bytes: a digest with no byte order of its own */
static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

int main(void)
{
	const uint16_t one = 1;
	long bad = -1000000, where = 0;
	uint64_t kbad = 0;
	size_t lbad = 0;

	printf("# host byte order: %s-endian\n",
	       *(const uint8_t *)&one ? "little" : "big");
	for (uint64_t k0 = 0; k0 < 17 && bad == -1000000; k0++)
		for (size_t len = 0; len <= BIG && bad == -1000000;
		     len += len < 48 ? 1 : BIG - 48) {
			bad = fill_and_compare(0xC0FFEEull ^ len, k0, len);
			kbad = k0;
			lbad = len;
		}
	if (bad != -1000000)
		printf("# first mismatch: k0 %llu len %zu at byte %ld\n",
		       (unsigned long long)kbad, lbad, bad);
	check(bad == -1000000,
	      "pat_fill == pat_byte byte by byte, guards untouched, k0 0..16, len 0..48 and %d",
	      BIG);

	pat_fill(buf, 77, 0, BIG);
	check(pat_check(buf, 77, 0, BIG) == (size_t)-1,
	      "pat_check accepts pat_fill's bytes (key 77, %d B)", BIG);
	for (size_t d = 0; d < BIG; d += 1021) {
		buf[d] ^= 0x10;
		if (pat_check(buf, 77, 0, BIG) != d)
			where = (long)d + 1;
		buf[d] ^= 0x10;
	}
	if (where)
		printf("# pat_check missed the flipped byte %ld\n", where - 1);
	check(!where, "pat_check finds a flipped byte where it is");

	/*
	 * The same bytes on every host: the digest as on amd64, where the
	 * word's bytes are in memory order.
	 */
	pat_fill(buf, 0x5151, 3, 1000);
	printf("# pat_fill(key 0x5151, k0 3) bytes 5..12:");
	for (int i = 5; i < 13; i++)
		printf(" %02x", buf[i]);
	printf("\n");
	check(fnv1a(buf, 1000) == 0xef063db1c7730bbaULL,
	      "digest of pat_fill(key 0x5151, k0 3, 1000 B) 0x%016llx, want 0xef063db1c7730bba",
	      (unsigned long long)fnv1a(buf, 1000));
	return failures ? 1 : 0;
}
