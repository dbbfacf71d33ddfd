/* SPDX-License-Identifier: MIT */
/* Trampolines for the calls out of the header's inline fast paths on
 * x86-64 (wspool/inline.h, POOL__TRAMP): pool__spawn_tramp, pool__sync_tramp and
 * pool__take_tramp call pool__spawn_full, pool__sync_full and
 * pool__take_full with the caller's argument registers, and preserve every
 * general register but rax, which carries the result.
 *
 * The calling sequence, in the caller (POOL__TRAMP in wspool/inline.h):
 *     lea -128(%rsp), %rsp                     step over the red zone
 *     call *pool__X_tramp@GOTPCREL(%rip)       through the GOT, not a PLT
 *     lea 128(%rsp), %rsp                      stub, which may clobber r11
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
 * An assembly file rather than top-level asm in C: link-time optimisation
 * does not see symbols defined in top-level asm, so a static libwspool.a
 * built with -flto lost them.
 *
 * AVX-512: the header's clobber list names xmm0-15, x87 and flags, but not
 * zmm16-31 or k0-7: a translation unit built without AVX-512 cannot name
 * them, yet its inline spawn may be inlined into a target("avx512f")
 * function that keeps values there, while the library's slow path (malloc,
 * memcpy) may use them. So on a CPU with AVX-512 (ws__tramp_avx512, set at
 * load time in cpu.c) the trampoline saves and restores them itself: about
 * 1 KiB of stores, paid only on the library's slow path and only on such
 * machines.
 *
 * Control-flow enforcement (CET): the call into a trampoline is indirect
 * (through the GOT), so each starts with endbr64 when the build asks for
 * indirect-branch tracking (-fcf-protection, which defines __CET__); each
 * ret returns to its own call, so shadow stacks hold. The object then
 * carries the same GNU property note the compiler puts on C objects, so
 * the library as a whole keeps its IBT/SHSTK marking; without the note the
 * linker would clear the marking for the whole library. */
#if defined(__x86_64__) && defined(__ELF__)

#if defined(__CET__) && (__CET__ & 1)
#define WS_ENDBR endbr64
#else
#define WS_ENDBR
#endif

/* zmm16-31 and k0-7 into the 1088 bytes below %rsp (64-byte aligned),
 * and back. \kmov is kmovq with AVX512BW (64-bit masks), kmovw without. */
  .macro ws_avx512_regs op, kmov, load
  .irp r, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
  .if \load
  vmovdqu64 (\r - 16) * 64(%rsp), %zmm\r
  .else
  vmovdqu64 %zmm\r, (\r - 16) * 64(%rsp)
  .endif
  .endr
  .irp k, 0, 1, 2, 3, 4, 5, 6, 7
  .if \load
  \kmov 1024 + \k * 8(%rsp), %k\k
  .else
  \kmov %k\k, 1024 + \k * 8(%rsp)
  .endif
  .endr
  .endm

/* Saves (load 0) or restores (load 1) the AVX-512 state when the CPU has
 * it: ws__tramp_avx512 is 0 without AVX-512F, 1 with it, 3 with AVX512BW
 * too. Flags and rax are free here (the asm clobbers flags; rax carries
 * no argument and is the result, kept in r11 around the restore). */
  .macro ws_avx512 load
  .if \load
  mov %rax, %r11
  .endif
  movzbl ws__tramp_avx512(%rip), %eax
  test $1, %eax
  jz 3f
  test $2, %eax
  jz 1f
  ws_avx512_regs vmovdqu64, kmovq, \load
  jmp 2f
1:
  ws_avx512_regs vmovdqu64, kmovw, \load
2:
3:
  .if \load
  mov %r11, %rax
  .endif
  .endm

  .macro ws_tramp name, target
  .globl \name
  .type \name, @function
  .p2align 4
\name:
  .cfi_startproc
  WS_ENDBR
  .cfi_def_cfa_offset 136
  .cfi_offset %rip, -136
  push %rbp
  .cfi_def_cfa_offset 144
  .cfi_offset %rbp, -144
  mov %rsp, %rbp
  .cfi_def_cfa_register %rbp
  push %rdi
  push %rsi
  push %rdx
  push %rcx
  push %r8
  push %r9
  push %r10
  push %r11
  and $-64, %rsp
  sub $1088, %rsp               /* the AVX-512 save area; keeps 64-byte alignment */
  ws_avx512 0
  call \target@PLT
  ws_avx512 1
  lea -64(%rbp), %rsp
  pop %r11
  pop %r10
  pop %r9
  pop %r8
  pop %rcx
  pop %rdx
  pop %rsi
  pop %rdi
  pop %rbp
  .cfi_restore %rbp
  .cfi_def_cfa %rsp, 136
  ret
  .cfi_endproc
  .size \name, .-\name
  .endm

  .text
  ws_tramp pool__spawn_tramp, pool__spawn_full
  ws_tramp pool__sync_tramp, pool__sync_full
  ws_tramp pool__take_tramp, pool__take_full

#if defined(__CET__)
/* NT_GNU_PROPERTY_TYPE_0 with GNU_PROPERTY_X86_FEATURE_1_AND: the CET
 * features this object is compatible with (bit 0 IBT, bit 1 SHSTK), the
 * ones the compiler was asked for. */
  .section .note.gnu.property, "a"
  .p2align 3
  .long 4                 /* name size */
  .long 16                /* descriptor size */
  .long 5                 /* NT_GNU_PROPERTY_TYPE_0 */
  .asciz "GNU"
  .long 0xc0000002        /* GNU_PROPERTY_X86_FEATURE_1_AND */
  .long 4                 /* data size */
  .long __CET__           /* 1 IBT, 2 SHSTK */
  .p2align 3
#endif

#endif /* __x86_64__ && __ELF__ */

/* No executable stack. */
#if defined(__ELF__)
  .section .note.GNU-stack, "", @progbits
#endif
