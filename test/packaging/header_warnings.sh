#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The public headers compile without a warning in users' code: a C file
# (header_user.c: wspool.h, its inline fast paths and typed tasks) as C99,
# C11 and C17, and a C++ file (header_user.cpp: wspool.hpp) as C++17 and
# C++20, each at -O0 and -O2 (the inline paths exist only with
# optimisation), with gcc, clang, g++ and clang++ where installed, under
#   -Wall -Wextra -Wpedantic -Wstrict-aliasing=1 -Wdeclaration-after-statement
#   (C only) -Wshadow -Wconversion -Wcast-qual -Werror
# Arguments: the source root. Exit 77 when no compiler is found.
set -u
src=$1
flags="-Wall -Wextra -Wpedantic -Wstrict-aliasing=1 -Wshadow -Wconversion -Wcast-qual -Werror"
fails=0 ran=0
compile() { # compiler std opt file extra
  local out
  if ! out=$("$1" "-std=$2" "$3" $flags $5 -I"$src/include" -c "$4" -o /dev/null 2>&1); then
    echo "FAIL: $1 -std=$2 $3 $(basename "$4")"
    echo "$out" | head -20
    fails=$((fails + 1))
  fi
  ran=$((ran + 1))
}
for cc in gcc clang; do
  command -v "$cc" >/dev/null || { echo "no $cc: skipped"; continue; }
  for std in c99 c11 c17; do
    for opt in -O0 -O2; do
      compile "$cc" "$std" "$opt" "$src/test/packaging/header_user.c" -Wdeclaration-after-statement
    done
  done
done
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || { echo "no $cxx: skipped"; continue; }
  for std in c++17 c++20; do
    for opt in -O0 -O2; do
      compile "$cxx" "$std" "$opt" "$src/test/packaging/header_user.cpp" ""
    done
  done
done
[ "$ran" -gt 0 ] || { echo "no compiler found"; exit 77; }
echo "$ran compilations, $fails with a warning or error"
[ "$fails" -eq 0 ]
