#!/usr/bin/env bash
# scripts/python_setup.sh: makes `import perfpred` work for Debian's /usr/bin/python3 from any
# folder, with no compiler and no pip: a perfpred.pth file naming this checkout's python/ folder
# goes into that interpreter's user site-packages (what `pip install --user -e` would do). The
# package finds build/libperfpred.so beside it (or $PERFPRED_LIB, or pkg-config perfpred).
# Called by scripts/demo.sh after the build; run it again if the checkout moves.
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
site="$("$py" -m site --user-site)"
mkdir -p "$site"
tmp="$(mktemp "$site/.perfpred.pth.XXXXXX")"
printf '%s\n' "$PWD/python" > "$tmp"
mv -f "$tmp" "$site/perfpred.pth"
echo "perfpred: $py imports perfpred from $PWD/python ($site/perfpred.pth)"
