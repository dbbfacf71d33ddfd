#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packaging: `meson install` puts the header, the shared and static
# libraries (with a soversion) and the pkg-config file in place; a program
# builds and runs against the installed package through pkg-config, shared
# and static; and wspool works as a meson subproject.
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
cmp -s "$src/LICENSE" "$root/share/licenses/wspool/LICENSE" || { echo "LICENSE not installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
ls "$libdir"/libwspool.so.0 "$libdir"/libwspool.so.0.* "$libdir"/libwspool.a >/dev/null ||
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
grep -q "$libdir/libwspool.so.0" <<<"$linked" || { echo "not linked to the installed library"; exit 1; }

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
echo "packaging: install, pkg-config (shared, static) and subproject all work"
