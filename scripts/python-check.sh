#!/usr/bin/env bash
# The Python module's check, as CI runs it after `cargo test --release`:
# a virtual environment (target/py-venv), the module built as a wheel
# (target/wheels; the same PEP 517 build `pip install .` runs, in the same
# target/ as the CLI, so HiGHS is not compiled again) and installed, the
# example run, the pytest suite (which compares every call with the
# binary, target/release/dimsum or $DIMSUM_BIN). Prints each step's time
# and the wheel's size.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/py-venv
PY="$VENV/bin/python"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# Debian's python3 has no venv (nor pip) until python3-venv is installed.
if [ ! -x "$PY" ] || ! "$PY" -m pip --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv python3-pip
    rm -rf "$VENV"
    python3 -m venv "$VENV"
  fi
fi
# pip 21.3 and later build in the source tree (older ones copy it, target/ too).
if ! "$PY" -c 'import sys, pip; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (21, 3))'; then
  "$PY" -m pip install -q --upgrade "pip>=21.3"
fi

t=$(now)
rm -rf target/wheels
"$PY" -m pip wheel -v --no-deps -w target/wheels . >target/py-build.log 2>&1 || {
  tail -50 target/py-build.log
  exit 1
}
wheel=$(ls target/wheels/dimsum-*.whl)
"$PY" -m pip install -q --force-reinstall --no-deps "$wheel"
echo "python: dimsum built and installed in $(since "$t") ($(grep -c ' Compiling ' target/py-build.log || true) crates compiled; log: target/py-build.log)"
if grep -q 'Compiling highs-sys' target/py-build.log; then
  echo "python: warning: the wheel's build compiled HiGHS again (target/ not reused)"
fi
echo "python: wheel $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"

t=$(now)
"$PY" -m pip install -q pytest pandas matplotlib tqdm
echo "python: pytest, pandas, matplotlib, tqdm installed in $(since "$t")"

t=$(now)
"$PY" examples/frontier.py target/py-frontier.png
echo "python: examples/frontier.py ran in $(since "$t")"

t=$(now)
"$PY" -m pytest python/tests -q -p no:cacheprovider
echo "python: pytest ran in $(since "$t")"
