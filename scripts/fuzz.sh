#!/usr/bin/env bash
# Fuzzes every reader dimsum has: `scripts/fuzz.sh [SECONDS] [TARGET...]`
# runs each target of fuzz/ (cargo-fuzz, libFuzzer; the nightly toolchain,
# outside the default build) for SECONDS (default 600) in turn, seeded from
# studies/, catalog/, tests/data and ../shared, and writes a line per
# target (executions, coverage, crashes) to fuzz/summary.md. A crash input
# lands in fuzz/artifacts/TARGET/; copy it under tests/data/fuzz/TARGET/,
# where tests/hardening.rs replays every file in the normal test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
all=(study_toml catalog_toml libra_text network_yml edge_list schedule_json chakra_et msccl_xml cli_values)
if [[ $# -gt 1 ]]; then
  shift
  targets=("$@")
else
  targets=("${all[@]}")
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
shared=../shared

# Seeds (libra_text and cli_values take a first byte that picks the reader).
corpus=fuzz/corpus
seed() {
  local t=$1
  shift
  mkdir -p "$corpus/$t"
  for f in "$@"; do
    [[ -f $f ]] && cp "$f" "$corpus/$t/$(echo "$f" | tr '/' '_')"
  done
  return 0
}
prefixed() {
  local t=$1 byte=$2
  shift 2
  mkdir -p "$corpus/$t"
  for f in "$@"; do
    [[ -f $f ]] && { printf "\\x$byte"; cat "$f"; } >"$corpus/$t/$byte-$(echo "$f" | tr '/' '_')"
  done
  return 0
}
seed study_toml studies/*.toml
seed catalog_toml catalog/*.toml
prefixed libra_text 00 tests/data/libra/workload/*
prefixed libra_text 01 tests/data/libra/communicator/*
prefixed libra_text 02 tests/data/libra/network/*
prefixed libra_text 03 tests/data/libra/cost_model/*
seed network_yml tests/data/astra-sim/*.yml "$shared"/interop-samples/astra-sim/network/*
mkdir -p "$corpus/edge_list"
printf '0 <-> 1 50 500\n1 <-> 2 50GiB/s 0.5us dim=x\n2 -> 0 25 1ns\n# comment\n' >"$corpus/edge_list/ring3"
printf '0 <-> s0 100 100\n1 <-> s0 100 100\n2 <-> s0 100 100 dim=sw\n' >"$corpus/edge_list/switch3"
mkdir -p "$corpus/schedule_json"
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/dimsum
for spec in "ring:8 ring" "torus:2x2 tacos" "fc:4 direct" "switch:4 halving-doubling"; do
  set -- $spec
  "$bin" collective --topology "$1" --algorithm "$2" --size 1MB \
    --schedule-out "$corpus/schedule_json/${1//:/_}-$2.json" >/dev/null
done
seed chakra_et tests/data/astra-sim/*/*.et "$shared"/interop-samples/astra-sim/*/*.et
seed msccl_xml tests/data/astra-sim/*/*.xml "$shared"/interop-samples/astra-sim/*/*.xml
mkdir -p "$corpus/cli_values"
i=0
for v in 64MiB 1KiB..16KiB 50GiB/s 0.5us torus:4x4 3/8 tp,pp,dp tacos; do
  printf "\\x0$i%s" "$v" >"$corpus/cli_values/$i"
  i=$((i + 1))
done

summary=fuzz/summary.md
mkdir -p fuzz/rows
for t in "${targets[@]}"; do
  log=fuzz/rows/$t.log
  rm -rf "fuzz/artifacts/$t"
  # -rss_limit_mb: a reader that allocates past 4 GiB is a finding too.
  cargo +nightly fuzz run "$t" "$corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 \
    -timeout=20 -print_final_stats=1 >"$log" 2>&1 || true
  runs=$(grep -aoP 'stat::number_of_executed_units:\s*\K\d+' "$log" | tail -1)
  cov=$(grep -aoP 'cov: \K\d+' "$log" | tail -1)
  ft=$(grep -aoP 'ft: \K\d+' "$log" | tail -1)
  n=$(find "$corpus/$t" -type f | wc -l)
  # crash-, oom-, timeout- and leak- inputs are findings; slow-unit- ones
  # (over 10 s under the sanitizer) are listed apart.
  crashes=$(find "fuzz/artifacts/$t" -type f ! -name 'slow-unit-*' 2>/dev/null | wc -l)
  slow=$(find "fuzz/artifacts/$t" -type f -name 'slow-unit-*' 2>/dev/null | wc -l)
  echo "| $t | $secs | ${runs:-?} | ${cov:-?} | ${ft:-?} | $n | $crashes | $slow |" >"fuzz/rows/$t.row"
  echo "$t: ${runs:-?} executions, cov ${cov:-?}, $crashes crashes, $slow slow inputs" >&2
done
# The summary of every target run so far (runs of a few targets each, in
# parallel, add up).
{
  echo "# Fuzzing"
  echo
  echo "\`scripts/fuzz.sh\` at dimsum $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d), one core per target; crashes are inputs left in fuzz/artifacts/ (each fixed and kept in tests/data/fuzz/)."
  echo
  echo "| target | seconds | executions | coverage (edges) | features | corpus | crashes | slow inputs |"
  echo "|---|---|---|---|---|---|---|---|"
  cat fuzz/rows/*.row
} >"$summary"
echo "wrote $summary"
