#!/usr/bin/env bash
# Swing (both variants) against ring, bidirectional ring, recursive doubling
# (both variants), the multiport bucket algorithm and the hierarchical
# bidirectional ring (the bucket algorithm on one port pair)
# on 1D, 2D and 3D tori, all-reduce from 32 B to 128 MiB:
# results/swing/compare.csv, compare.md and speedup.svg/.png (under ROOT if given
# a directory ROOT: scripts/reproduce.sh --check). Only calls the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)/dimsum
# compare.md quotes the command line, --out included: run from ROOT so that
# it reads `--out results/swing` wherever the files go.
cd "${1:-.}"
"$bin" compare \
  --topologies ring:16,ring:64,ring:12,torus:8x8,torus:16x16,torus:4x16,torus:6x6,torus:5x5,torus:4x4x4,torus:8x8x8,torus:4x4x8,torus:6x6x6 \
  --algorithms swing,swing-latency \
  --baselines ring,bidirectional-ring,recursive-doubling,recursive-doubling-bw,bucket,hierarchical \
  --sizes 32B..128MiB \
  --link-gbps 50 --link-latency-us 0.5 \
  --out results/swing
