#!/usr/bin/env bash
# Regenerates results/ from studies/: `dimsum run` on every study (and the
# rail-only comparison, examples/rail_only.rs, from two of them), then the
# LIBRA reproduction table, the built-in collectives table, Swing against
# its baselines, the analytic against the schedule-backed optimum and the
# published training runs (validation/) against their prediction. Calls the
# CLI, and the library through that one example.
#
# `scripts/reproduce.sh --check` regenerates the same files into a temporary
# directory instead, compares each with its committed copy byte for byte and
# fails on any difference: a regenerated file that differs or is missing from
# the repository, or a file under results/ that nothing regenerates. CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  "") check= ;;
  --check) check=1 ;;
  *)
    echo "usage: scripts/reproduce.sh [--check]" >&2
    exit 2
    ;;
esac
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/dimsum

if [[ -z $check ]]; then
  for study in studies/*.toml; do
    "$bin" run "$study" --out results
  done
  cargo run --release --quiet --example rail_only -- results >/dev/null
  scripts/libra-reproduce.sh
  scripts/collectives.sh
  scripts/forest.sh
  scripts/all-to-all.sh
  scripts/swing.sh
  scripts/schedule-backed.sh
  scripts/validation.sh
  exit 0
fi

# --check. Everything scripts/reproduce.sh writes is regenerated, under $tmp
# with the repository's layout ($tmp/results/..., $tmp/studies/LIBRA-REPRODUCTION.md).
# It takes about two minutes of CPU, most of it single-threaded and over half
# of it in collectives.sh, which therefore runs alongside the rest.
tmp=$(mktemp -d)
collectives=
trap 'if [[ -n $collectives ]]; then kill $collectives 2>/dev/null || true; wait; fi; rm -rf "$tmp"' EXIT
start=$SECONDS
scripts/collectives.sh "$tmp" >/dev/null &
collectives=$!
scripts/forest.sh "$tmp" >/dev/null &
collectives="$collectives $!"
scripts/all-to-all.sh "$tmp" >/dev/null &
collectives="$collectives $!"
for study in studies/*.toml; do
  "$bin" run "$study" --out "$tmp/results" >/dev/null
done
cargo run --release --quiet --example rail_only -- "$tmp/results" >/dev/null
scripts/libra-reproduce.sh "$tmp" >/dev/null
scripts/swing.sh "$tmp" >/dev/null
scripts/schedule-backed.sh "$tmp" >/dev/null
scripts/validation.sh "$tmp" >/dev/null
for pid in $collectives; do
  wait "$pid" # its exit status: set -e stops here if it failed
done
collectives=

# Wall-clock fields, different on every run, are compared with the number
# masked; the rest of those files byte for byte: "solve_ms" in JSON (the
# schedule-backed fixed point's time in results/schedule-backed/json/*.json,
# written by `optimize --json`) and the last column, "solve (ms)", of the
# first table of results/schedule-backed/compare.md.
masked() { # FILE: its text with the wall-clock fields masked
  case $1 in
    *.json) sed -E 's/("solve_ms": ?)[-+0-9.eE]+/\1<wall-clock>/g' "$1" ;;
    */results/schedule-backed/compare.md | results/schedule-backed/compare.md)
      sed -E '/ chunk\(s\)\/NPU \|/s/\| [0-9]+ \|$/| <wall-clock> |/' "$1" ;;
    *) cat "$1" ;;
  esac
}
has_mask() {
  case $1 in
    *.json | results/schedule-backed/compare.md) return 0 ;;
    *) return 1 ;;
  esac
}

same=0 only_masked=0 differ=0
report() { # RELATIVE-PATH MESSAGE
  echo "DIFFERS: $1: $2"
  differ=$((differ + 1))
}
# Every file regenerated, and every committed file under results/ except
# results/collectives/synthesis-scaling.md, which is copied from
# `cargo bench --bench synth` (timings of this machine), and
# results/astra-sim/, which scripts/astra-agreement.sh writes from
# ASTRA-sim's binaries outside the repository; neither is regenerated.
files=$({
  (cd "$tmp" && find results studies -type f)
  find results -type f ! -path results/collectives/synthesis-scaling.md ! -path 'results/astra-sim/*'
} | LC_ALL=C sort -u)
while IFS= read -r f; do
  if [[ ! -e $tmp/$f ]]; then
    report "$f" "in the repository, but nothing regenerates it"
  elif [[ ! -e $f ]]; then
    report "$f" "regenerated, but not in the repository"
  elif cmp -s "$f" "$tmp/$f"; then
    same=$((same + 1))
  elif has_mask "$f" && cmp -s <(masked "$f") <(masked "$tmp/$f"); then
    same=$((same + 1))
    only_masked=$((only_masked + 1))
  elif grep -Iq . "$f" && grep -Iq . "$tmp/$f"; then
    report "$f" "text differs (first lines of the diff, committed -> regenerated):"
    diff -u --label "committed/$f" --label "regenerated/$f" <(masked "$f") <(masked "$tmp/$f") |
      head -n 20 | cut -c1-200 || true
  else
    report "$f" "binary file differs ($(wc -c <"$f") -> $(wc -c <"$tmp/$f") bytes)"
  fi
done <<<"$files"

echo "reproduce check: $same files identical, $differ differ" \
  "($only_masked identical only with their wall-clock solve times masked; $((SECONDS - start)) s)"
[[ $differ -eq 0 ]]
