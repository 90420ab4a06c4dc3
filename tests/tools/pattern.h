/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data-check pattern of the test tools: byte k of the stream of a
 * message key is byte (k & 7) of a 64-bit word, counted from the least
 * significant end, so the bytes are the same on every architecture. No
 * verbs dependency: tests/tools/siw_pattest.c checks it on its own,
 * natively and cross-built for a big-endian host.
 */
#ifndef SIW_TOOLS_PATTERN_H
#define SIW_TOOLS_PATTERN_H

#include <stdint.h>
#include <stddef.h>

/* Pattern byte for stream offset k of message key 'key'. */
uint8_t pat_byte(uint64_t key, uint64_t k);
/* dst[i] = pat_byte(key, k0 + i) for i < len */
void pat_fill(uint8_t *dst, uint64_t key, uint64_t k0, size_t len);
/* returns index of first mismatch or (size_t)-1 */
size_t pat_check(const uint8_t *p, uint64_t key, uint64_t k0, size_t len);

#endif
