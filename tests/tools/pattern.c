// SPDX-License-Identifier: GPL-2.0
#include "pattern.h"
#include <endian.h>
#include <string.h>

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static inline uint64_t pat_word(uint64_t key, uint64_t k)
{
	return mix64(key * 0x9E3779B97F4A7C15ULL + (k >> 3) + 1);
}

uint8_t pat_byte(uint64_t key, uint64_t k)
{
	return (uint8_t)(pat_word(key, k) >> ((k & 7) * 8));
}

void pat_fill(uint8_t *dst, uint64_t key, uint64_t k0, size_t len)
{
	size_t i = 0;

	while (i < len && ((k0 + i) & 7))
		dst[i] = pat_byte(key, k0 + i), i++;
	for (; i + 8 <= len; i += 8) {
		/*
		 * Whole words for speed, stored little-endian: byte j of the
		 * word must be w >> 8j, as pat_byte() computes it, on a
		 * big-endian host too.
		 */
		uint64_t w = htole64(pat_word(key, k0 + i));

		memcpy(dst + i, &w, 8);
	}
	for (; i < len; i++)
		dst[i] = pat_byte(key, k0 + i);
}

size_t pat_check(const uint8_t *p, uint64_t key, uint64_t k0, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pat_byte(key, k0 + i))
			return i;
	return (size_t)-1;
}
