#!/bin/sh
# SPDX-License-Identifier: MIT
# Compile the C++ layer's test with clang++ and run it against the built
# library: the header must be warning-free under clang too.
#   clang.sh CLANGXX SOURCE INCLUDE_DIR TEST_DIR LIBWSPOOL_SO
set -eu
cxx=$1 src=$2 inc=$3 testdir=$4 lib=$5
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$cxx" -std=c++17 -O2 -Wall -Wextra -Wpedantic -Werror -pthread -I"$inc" -I"$testdir" "$src" \
  "$lib" -Wl,-rpath,"$(dirname "$lib")" -o "$out/test_cpp_clang"
"$out/test_cpp_clang"
