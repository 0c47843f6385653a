#!/usr/bin/env bash
# Published training runs against dimsum's prediction: for every
# validation/*.toml, results/validation/NAME.md, NAME.json and
# NAME-throughput.svg/.png (under ROOT if given a directory ROOT:
# scripts/reproduce.sh --check). Only calls the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/dimsum
"$bin" validate validation/*.toml --out "${1:-.}/results/validation"
