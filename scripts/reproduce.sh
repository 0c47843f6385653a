#!/usr/bin/env bash
# Regenerates results/ from studies/: `dimsum run` on every study, then the
# LIBRA reproduction table, the built-in collectives table, Swing against
# its baselines and the analytic against the schedule-backed optimum. Only calls
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
scripts/schedule-backed.sh
