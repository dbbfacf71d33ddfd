/* SPDX-License-Identifier: MIT */
/* Trampolines for the calls out of the header's inline fast paths on
 * x86-64 (wspool.h, POOL__TRAMP): pool__spawn_tramp, pool__sync_tramp and
 * pool__take_tramp call pool__spawn_full, pool__sync_full and
 * pool__take_full with the caller's argument registers, and preserve every
 * general register but rax, which carries the result.
 *
 * The calling sequence, in the caller (POOL__TRAMP in wspool.h):
 *     lea -128(%rsp), %rsp                     step over the red zone
 *     call *pool__X_tramp@GOTPCREL(%rip)       no PLT stub: keeps r11
 *     lea 128(%rsp), %rsp
 * so on entry the return address is at 0(%rsp) and the caller's own stack
 * pointer is %rsp + 136. The unwind information says exactly that (CFA =
 * %rsp + 136, return address at CFA - 136): an unwinder reconstructs the
 * caller's true %rsp, and the caller's own unwind information, which knows
 * nothing of the 128 bytes, applies unchanged from there.
 *
 * The trampoline saves the eight caller-saved general registers besides rax
 * (rdi, rsi, rdx, rcx, r8-r11), aligns the stack to 16 bytes for
 * the C call (the caller's %rsp has no known alignment where the asm sits)
 * and restores them. Vector, x87 and flag registers are not saved: the asm
 * declares them clobbered, so the compiler saves what it needs itself. The
 * direction flag is clear at the asm, as at any call (ABI), and the library
 * keeps it so.
 *
 * Not marked for shadow stacks or IBT: the calls are direct and each ret
 * returns to its own call, so a shadow stack would hold, but the object
 * makes no such claim and so does not turn those features on. */
#include "internal.h"

#if defined(__x86_64__) && defined(__ELF__)

#define WS_TRAMP(name, target)                      \
  "  .text\n"                                       \
  "  .globl " name "\n"                             \
  "  .type " name ", @function\n"                   \
  "  .p2align 4\n" name ":\n"                       \
  "  .cfi_startproc\n"                              \
  "  .cfi_def_cfa_offset 136\n"                     \
  "  .cfi_offset %rip, -136\n"                      \
  "  push %rbp\n"                                   \
  "  .cfi_def_cfa_offset 144\n"                     \
  "  .cfi_offset %rbp, -144\n"                      \
  "  mov %rsp, %rbp\n"                              \
  "  .cfi_def_cfa_register %rbp\n"                  \
  "  push %rdi\n"                                   \
  "  push %rsi\n"                                   \
  "  push %rdx\n"                                   \
  "  push %rcx\n"                                   \
  "  push %r8\n"                                    \
  "  push %r9\n"                                    \
  "  push %r10\n"                                   \
  "  push %r11\n"                                   \
  "  and $-16, %rsp\n"                              \
  "  call " target "@PLT\n"                         \
  "  lea -64(%rbp), %rsp\n"                         \
  "  pop %r11\n"                                    \
  "  pop %r10\n"                                    \
  "  pop %r9\n"                                     \
  "  pop %r8\n"                                     \
  "  pop %rcx\n"                                    \
  "  pop %rdx\n"                                    \
  "  pop %rsi\n"                                    \
  "  pop %rdi\n"                                    \
  "  pop %rbp\n"                                    \
  "  .cfi_restore %rbp\n"                           \
  "  .cfi_def_cfa %rsp, 136\n"                      \
  "  ret\n"                                         \
  "  .cfi_endproc\n"                                \
  "  .size " name ", .-" name "\n"

__asm__(WS_TRAMP("pool__spawn_tramp", "pool__spawn_full")
        WS_TRAMP("pool__sync_tramp", "pool__sync_full")
        WS_TRAMP("pool__take_tramp", "pool__take_full"));

#else
/* No trampolines here: the header's inline paths call the library directly
 * on other targets. ISO C wants a translation unit to declare something. */
typedef int ws_tramp_unused;
#endif
