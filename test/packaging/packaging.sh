#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packaging: `meson install` puts the headers (wspool.h and the inline ABI
# it includes, wspool/inline.h), the shared and static libraries (with a
# soversion), the pkg-config file and the wspool-timeline command in place;
# a program builds and runs against the installed package through
# pkg-config, shared and static, C and C++ with the inline fast paths on,
# reading only the installed headers;
# wspool works as a meson subproject; and CMake's find_package(wspool)
# finds the installed package.
#   packaging.sh SOURCE_ROOT BUILD_ROOT SANITIZE CROSS LTO
# With LTO true, the subproject user is built with -Db_lto=true against the
# static library, so the library and the header's inline code are
# optimised together.
set -euo pipefail
src=$1 build=$2 sanitize=$3 cross=${4:-false} lto=${5:-false}
# A sanitizer build's library needs the sanitizer runtime in every program
# linked against it; the packaging check is about the plain build. A cross
# build's library cannot link with the host's cc.
[ "$sanitize" = none ] || exit 77
[ "$cross" = false ] || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/root" --no-rebuild >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; exit 1; }
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
root="$tmp/root$prefix"
pc=$(find "$root" -name wspool.pc | head -n 1)
[ -n "$pc" ] || { echo "no wspool.pc installed"; exit 1; }
[ -f "$root/include/wspool.h" ] || { echo "no header installed"; exit 1; }
for h in wspool.h wspool_typed.h wspool.hpp wspool/inline.h; do
  cmp -s "$src/include/$h" "$root/include/$h" || { echo "include/$h not installed"; exit 1; }
done
cmp -s "$src/LICENSE" "$root/share/licenses/wspool/LICENSE" || { echo "LICENSE not installed"; exit 1; }
# The trace picture tool (docs/profiling.md), an executable in bindir.
bindir=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="bindir"][0])')
case $bindir in /*) bindir="$tmp/root$bindir" ;; *) bindir="$root/$bindir" ;; esac
{ [ -x "$bindir/wspool-timeline" ] && cmp -s "$src/runtime/tools/wspool-timeline" "$bindir/wspool-timeline"; } ||
  { echo "wspool-timeline not installed as an executable in $bindir"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
ls "$libdir"/libwspool.so.1 "$libdir"/libwspool.so.1.* "$libdir"/libwspool.a >/dev/null ||
  { echo "libraries or soversion link missing in $libdir"; ls -l "$libdir"; exit 1; }

export PKG_CONFIG_PATH="$(dirname "$pc")"
cflags=$(pkg-config --define-variable=prefix="$root" --cflags wspool)
libs=$(pkg-config --define-variable=prefix="$root" --libs wspool)
# shellcheck disable=SC2086
cc -std=gnu11 -o "$tmp/hello" "$src/examples/hello.c" $cflags $libs
LD_LIBRARY_PATH="$libdir" "$tmp/hello" 20
# The program must have used the installed shared library.
# (ldd's output is captured first: with pipefail, grep -q exiting early would
# fail the pipeline through ldd's SIGPIPE.)
linked=$(LD_LIBRARY_PATH="$libdir" ldd "$tmp/hello")
grep -q "$libdir/libwspool.so.1" <<<"$linked" || { echo "not linked to the installed library"; exit 1; }

# A program that includes only <wspool.h>, optimised so that the inline
# fast paths (wspool/inline.h) are compiled into it, with the project's
# warnings as errors; its dependency list must name the installed headers
# and nothing of the source tree.
# shellcheck disable=SC2086
cc -std=gnu11 -O2 -Wall -Wextra -Wpedantic -Werror -MD -MF "$tmp/fib.d" -o "$tmp/fib" \
  "$src/examples/fib.c" $cflags $libs
grep -q "$root/include/wspool/inline.h" "$tmp/fib.d" ||
  { echo "fib.c did not read the installed wspool/inline.h"; cat "$tmp/fib.d"; exit 1; }
if grep -q "$src/include" "$tmp/fib.d"; then echo "fib.c read the source tree's headers"; exit 1; fi
LD_LIBRARY_PATH="$libdir" "$tmp/fib" 22 2 >/dev/null
# The same from C++, which reads the header's extern "C" blocks.
if command -v c++ >/dev/null; then
  cat >"$tmp/user.cpp" <<'CPP'
// SPDX-License-Identifier: MIT
#include <wspool.h>

static long fib(int n);
POOL_TASK(long, fib, int);
static long fib(int n) {
  if (n < 2) return n;
  fib_frame f;
  fib_spawn(&f, n - 1);
  long y = fib(n - 2);
  return fib_sync(&f) + y;
}
struct args { int n; long r; };
static void run(void *p) {
  args *a = static_cast<args *>(p);
  a->r = fib(a->n);
}
int main() {
  args a = {20, 0};
  pool_task_t t;
  if (pool_spawn(nullptr, &t, run, &a) != 0 || pool_sync(&t) != 0) return 1;
  return a.r == 6765 ? 0 : 1;
}
CPP
  # shellcheck disable=SC2086
  c++ -std=c++17 -O2 -Wall -Wextra -Wpedantic -Werror -MD -MF "$tmp/user.d" -o "$tmp/user-cpp" \
    "$tmp/user.cpp" $cflags $libs
  grep -q "$root/include/wspool/inline.h" "$tmp/user.d" ||
    { echo "user.cpp did not read the installed wspool/inline.h"; exit 1; }
  LD_LIBRARY_PATH="$libdir" "$tmp/user-cpp"
fi

# Static libwspool; its private requirements (hwloc, ...) linked as shared
# libraries, as Debian ships some of theirs (libudev) only shared.
private=$(pkg-config --print-requires-private wspool | awk '{print $1}' | tr '\n' ' ')
# shellcheck disable=SC2086
deps=$( [ -z "$private" ] || pkg-config --libs $private)
# shellcheck disable=SC2086
cc -std=gnu11 -o "$tmp/hello-static" "$src/examples/hello.c" $cflags \
  -L"$libdir" -Wl,-Bstatic -lwspool -Wl,-Bdynamic $deps -lpthread -ldl
"$tmp/hello-static" 20
linked=$(ldd "$tmp/hello-static")
if grep -q libwspool <<<"$linked"; then echo "static build still loads libwspool.so"; exit 1; fi

# As a meson subproject: dependency('wspool') falls back to it.
mkdir -p "$tmp/user/subprojects"
ln -s "$src" "$tmp/user/subprojects/wspool"
cp "$src/examples/hello.c" "$tmp/user/"
cp "$src/examples/fib.c" "$tmp/user/"
cat >"$tmp/user/meson.build" <<'MESON'
project('user', 'c', default_options: ['c_std=gnu11', 'warning_level=3', 'werror=true'])
wspool = dependency('wspool', fallback: ['wspool', 'wspool_dep'],
                    default_options: ['tests=false', 'examples=false', 'peers=disabled',
                                      'default_library=' + get_option('default_library')])
executable('hello', 'hello.c', dependencies: wspool)
executable('fib', 'fib.c', dependencies: wspool)
MESON
sub_opts=()
[ "$lto" = true ] && sub_opts=(-Db_lto=true -Ddefault_library=static -Dbuildtype=release)
meson setup "$tmp/user/build" "$tmp/user" --wrap-mode=forcefallback "${sub_opts[@]}" \
  >"$tmp/sub.log" 2>&1 || { cat "$tmp/sub.log"; exit 1; }
ninja -C "$tmp/user/build" >>"$tmp/sub.log" 2>&1 || { cat "$tmp/sub.log"; exit 1; }
"$tmp/user/build/hello" 20
"$tmp/user/build/fib" 22 >/dev/null
# CMake: find_package(wspool) from the installed package finds its
# imported targets, shared and static, for a C and a C++ program; a version
# the package is not compatible with is refused. (A meson project cannot be
# pulled into a CMake build with add_subdirectory or FetchContent, which
# expect a CMakeLists.txt: such a user builds and installs wspool first, or
# runs it through ExternalProject.)
if command -v cmake >/dev/null; then
  mkdir -p "$tmp/cm"
  cp "$src/examples/hello.c" "$src/test/packaging/header_user.cpp" "$tmp/cm/"
  cat >"$tmp/cm/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(user C CXX)
find_package(wspool 0.2 REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE wspool::wspool)
add_executable(cxx_user header_user.cpp)
set_target_properties(cxx_user PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_link_libraries(cxx_user PRIVATE wspool::wspool)
if(TARGET wspool::wspool_static)
  add_executable(hello_static hello.c)
  target_link_libraries(hello_static PRIVATE wspool::wspool_static)
endif()
CMAKE
  cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$root" >"$tmp/cm.log" 2>&1 &&
    cmake --build "$tmp/cm/b" >>"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; exit 1; }
  # Without LD_LIBRARY_PATH (meson's test environment sets one): the
  # imported target's path alone must find the installed library.
  env -u LD_LIBRARY_PATH "$tmp/cm/b/hello" 20
  env -u LD_LIBRARY_PATH "$tmp/cm/b/cxx_user"
  linked=$(env -u LD_LIBRARY_PATH ldd "$tmp/cm/b/hello")
  grep -q "$libdir/libwspool.so.1" <<<"$linked" ||
    { echo "the CMake user is not linked to the installed library"; echo "$linked"; exit 1; }
  if [ -f "$libdir/libwspool.a" ]; then
    [ -x "$tmp/cm/b/hello_static" ] || { echo "no wspool::wspool_static"; exit 1; }
    "$tmp/cm/b/hello_static" 20
    if ldd "$tmp/cm/b/hello_static" | grep -q libwspool; then
      echo "the CMake static user loads libwspool.so"; exit 1
    fi
  fi
  sed -i 's/find_package(wspool 0.2 REQUIRED)/find_package(wspool 9.0 REQUIRED)/' "$tmp/cm/CMakeLists.txt"
  if cmake -S "$tmp/cm" -B "$tmp/cm/b9" -DCMAKE_PREFIX_PATH="$root" >"$tmp/cm9.log" 2>&1; then
    echo "find_package(wspool 9.0) accepted version $(grep -o 'PACKAGE_VERSION "[^"]*"' \
      "$libdir/cmake/wspool/wspoolConfigVersion.cmake")"; exit 1
  fi
  echo "packaging: CMake find_package(wspool): shared, static, C and C++"
else
  echo "packaging: no cmake here: the CMake package is not checked"
fi
echo "packaging: install, pkg-config (shared, static; C and C++ users) and subproject all work"
