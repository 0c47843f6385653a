#!/usr/bin/env bash
# Regenerates results/ from studies/: `dimsum run` on every study, then the
# LIBRA reproduction table and the built-in collectives table. Only calls
# the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
for study in studies/*.toml; do
  target/release/dimsum run "$study" --out results
done
scripts/libra-reproduce.sh
scripts/collectives.sh
scripts/swing.sh
