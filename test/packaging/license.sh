#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The license check: LICENSE exists, meson.build declares the same license,
# and every source, build and script file carries an SPDX line near its top.
#   license.sh SOURCE_ROOT
set -euo pipefail
src=$1
cd "$src"
[ -f LICENSE ] || { echo "no LICENSE file"; exit 1; }
head -n 1 LICENSE | grep -q '^MIT License$' || { echo "LICENSE is not the MIT license"; exit 1; }
grep -q "license: 'MIT'" meson.build || { echo "meson.build does not declare license: 'MIT'"; exit 1; }
missing=0
while IFS= read -r -d '' f; do
  if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
    echo "no SPDX line: $f"
    missing=$((missing + 1))
  fi
done < <(find runtime include examples test bench .ci meson.build meson_options.txt \
  -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.sh' -o -name '*.py' -o -name '*.S' \
  -o -name meson.build -o -name meson_options.txt -o -path '.ci/*' \) -print0)
[ "$missing" -eq 0 ] || { echo "$missing file(s) without an SPDX line"; exit 1; }
echo "license: LICENSE, meson.build and every source file agree (MIT)"
