/* SPDX-License-Identifier: MIT */
/* What the trampolines (tramp.S) must preserve beyond the header's clobber
 * list: on a CPU with AVX-512, zmm16-31 and the mask registers. Decided
 * once, when the library is loaded, before any thread can enter it. */
#include "debug.h"

#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__)
/* 0: no AVX-512; 1: AVX512F (16-bit masks); 3: and AVX512BW (64-bit). Read
 * by tramp.S only. __builtin_cpu_supports also checks that the OS saves
 * the AVX-512 state (XCR0). */
WS_HIDDEN unsigned char ws__tramp_avx512;

__attribute__((constructor)) static void cpu_init(void) {
  __builtin_cpu_init();
  unsigned char v = 0;
  if (__builtin_cpu_supports("avx512f")) v = __builtin_cpu_supports("avx512bw") ? 3 : 1;
  ws__tramp_avx512 = v;
}
#else
typedef int ws_cpu_unused;
#endif
