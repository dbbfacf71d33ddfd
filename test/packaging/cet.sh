#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CET: in a build with -fcf-protection (the compiler defines __CET__), every
# object of the library carries the GNU property note for IBT and shadow
# stacks, the assembly trampolines included, and each trampoline starts with
# endbr64 (it is reached by an indirect call). One object without the note
# makes the linker drop the marking for the whole library. The final .so is
# not checked: Debian's own crt objects carry no note.
#   cet.sh STATIC_LIBRARY CET_DEFINE
set -euo pipefail
lib=$1 cet=${2:-}
if [ -z "$cet" ]; then
  echo "cet: skipped (the build does not ask for -fcf-protection)"
  exit 77
fi
command -v readelf >/dev/null || { echo "cet: skipped (no readelf)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
ar x "$lib"
want="IBT, SHSTK"
[ "$cet" = 1 ] && want="IBT"
[ "$cet" = 2 ] && want="SHSTK"
bad=0
for o in *.o; do
  # (captured first: with pipefail, grep -q stopping early would fail the
  # pipeline through readelf's SIGPIPE)
  notes=$(readelf -n "$o")
  if ! grep -q "x86 feature: $want" <<<"$notes"; then
    echo "cet: $o lacks the property note ($want)"
    bad=1
  fi
done
if [ $((cet & 1)) = 1 ]; then
  for t in pool__spawn_tramp pool__sync_tramp pool__take_tramp; do
    dis=$(objdump -d --no-show-raw-insn tramp.S.o)
    first=$(awk -v t="<$t>:" '$2 == t { getline; print $2; exit }' <<<"$dis")
    [ "$first" = endbr64 ] || { echo "cet: $t starts with '$first', not endbr64"; bad=1; }
  done
fi
[ "$bad" = 0 ] || exit 1
echo "cet: every object of $(basename "$lib") is marked $want; the trampolines start with endbr64"
