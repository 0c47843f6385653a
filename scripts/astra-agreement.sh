#!/usr/bin/env bash
# ASTRA-sim agreement: dimsum's exports (`dimsum export astra-sim`) run in
# ASTRA-sim 2.0's analytical backends, beside dimsum's own figure for the
# same design: one-collective studies (rings, a fully-connected group, a
# switch, a group over part of a dimension, two dimensions pipelined) and
# LIBRA's GPT-3 on its 4D fabric (4,096 ranks, about five minutes).
# Writes results/astra-sim/agreement.md (under ROOT if given a directory
# ROOT). Not part of `cargo test` or `scripts/reproduce.sh --check`: the
# binaries live outside the repository (ASTRA_SIM_BIN, default
# ../shared/tools/astra-sim/bin; they need Debian's libprotobuf32).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
cargo build --release --quiet
bin=$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)/dimsum
astra=${ASTRA_SIM_BIN:-$repo/../shared/tools/astra-sim/bin}
for b in AstraSim_Analytical_Congestion_Unaware AstraSim_Analytical_Congestion_Aware; do
  [[ -x $astra/$b ]] || { echo "error: $astra/$b not found (set ASTRA_SIM_BIN)" >&2; exit 2; }
done
out=${1:-.}/results/astra-sim
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One-collective study: NAME BLOCKS NPUS GBPS TYPE BYTES GROUP LATENCIES_NS [REDUCTION_GBPS]
study() {
  local name=$1 blocks npus lats
  IFS=, read -ra blocks <<<"$2"
  IFS=, read -ra npus <<<"$3"
  IFS=, read -ra lats <<<"$8"
  {
    printf 'name = "%s"\ntime_model = "pipelined"\nbw = [%s]\nreduction_memory = %s\n' "$name" "$4" "${9:-false}"
    for i in "${!blocks[@]}"; do
      printf '[[fabric.dims]]\nname = "d%s"\nblock = "%s"\nnpus = %s\nlatency_ns = %s\ntier = "t"\n' \
        "$i" "${blocks[$i]}" "${npus[$i]}" "${lats[$i]}"
    done
    printf '[cost.tiers.t]\nlink_usd_per_gbps = 1.0\n[workload]\n[[workload.layers]]\nname = "l0"\n'
    printf 'forward = { compute_ns = 0 }\ninput_grad = { compute_ns = 0 }\n'
    printf 'weight_grad = { compute_ns = 0, collective = "%s", bytes = %s, group = [%s] }\n' "$5" "$6" "$7"
  } >"$tmp/$name.toml"
  echo "$tmp/$name.toml"
}

# Runs one case: NAME STUDY-FILE; appends "name<TAB>study<TAB>backend<TAB>wall ns<TAB>comm ns".
run() {
  local name=$1 file=$2 dir=$tmp/$1 backend
  "$bin" export astra-sim "$file" --out "$dir" >/dev/null
  "$bin" eval --json "$file" >"$dir/dimsum.json"
  # One dimension: the congestion-aware backend (it takes one only);
  # more: the congestion-unaware one.
  if [[ $(grep -c '^topology: \[ [A-Za-z]* \]' "$dir/network.yml") == 1 ]]; then
    backend=AstraSim_Analytical_Congestion_Aware
  else
    backend=AstraSim_Analytical_Congestion_Unaware
  fi
  (cd "$dir" && "$astra/$backend" --workload-configuration=workload --system-configuration=system.json \
    --network-configuration=network.yml --remote-memory-configuration=memory.json \
    --comm-group-configuration=comm_groups.json >astra.log 2>&1)
  local wall comm
  wall=$(grep -oP 'sys\[\d+\], Wall time: \K\d+' "$dir/astra.log" | sort -n | tail -1)
  comm=$(grep -oP 'sys\[\d+\], Comm time: \K\d+' "$dir/astra.log" | sort -n | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$dir" "${backend#AstraSim_Analytical_}" "$wall" "$comm" >>"$tmp/runs.tsv"
  echo "$name: ASTRA-sim $wall ns" >&2
}

: >"$tmp/runs.tsv"
run ar-ring4 "$(study ar-ring4 ring 4 200 all-reduce 805306368 4 500)"
run ag-ring4 "$(study ag-ring4 ring 4 200 all-gather 50331648 4 500)"
run rs-ring4 "$(study rs-ring4 ring 4 200 reduce-scatter 805306368 4 500)"
run ar-ring4-memory "$(study ar-ring4-memory ring 4 200 all-reduce 805306368 4 500 1600)"
run ar-ring4-switch8-memory "$(study ar-ring4-switch8-memory ring,switch 4,8 200,100 all-reduce 805306368 4,8 500,1000 1600)"
run ar-fc8 "$(study ar-fc8 fully-connected 8 700 all-reduce 805306368 8 500)"
run ar-switch32 "$(study ar-switch32 switch 32 100 all-reduce 805306368 32 500)"
run ar-ring4-switch8 "$(study ar-ring4-switch8 ring,switch 4,8 200,100 all-reduce 805306368 4,8 500,1000)"
run ar-ring4-fc8-g44 "$(study ar-ring4-fc8-g44 ring,fully-connected 4,8 200,700 all-reduce 805306368 4,4 500,500)"
run ag-ring4-fc8-g44 "$(study ag-ring4-fc8-g44 ring,fully-connected 4,8 200,700 all-gather 50331648 4,4 500,500)"
run gpt3-4d "$repo/studies/gpt3-4d.toml"

python3 - "$tmp/runs.tsv" "$out/agreement.md" "$(git -C "$repo" rev-parse --short HEAD)" <<'PY'
import json, sys

runs, dest, commit = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [line.rstrip("\n").split("\t") for line in open(runs)]


def network(d):
    """(blocks, npus, per-link GB/s as exported, latency ns) from network.yml."""
    vals = {}
    for line in open(f"{d}/network.yml"):
        line = line.split("#")[0].strip()
        if ":" in line:
            k, v = line.split(":", 1)
            vals[k.strip()] = [x.strip() for x in v.strip().strip("[]").split(",")]
    gib = 2**30 / 1e9
    return (vals["topology"], [int(x) for x in vals["npus_count"]],
            [float(x) * gib for x in vals["bandwidth"]], [float(x) for x in vals["latency"]])


def flat_ring(d, c):
    """ASTRA-sim's time for a collective on a communicator group: one ring
    over the group's sorted ranks, each hop charged on the lowest dimension
    its two ranks differ in (MultiDimTopology), at that dimension's exported
    per-link bandwidth; the slowest hop sets the pace. ns."""
    blocks, npus, gbps, lat = network(d)
    group = c["group"]
    p = 1
    for g in group:
        p *= g if g > 1 else 1
    def coords(r):
        out = []
        for n in npus:
            out.append(r % n)
            r //= n
        return out
    # Rank 0's group (LIBRA's placement: aligned blocks from 0).
    members = [[]]
    for dim, g in enumerate(group):
        span = range(g) if g > 1 else range(1)
        members = [m + [x] for m in members for x in span]
    strides = [1]
    for n in npus[:-1]:
        strides.append(strides[-1] * n)
    ranks = sorted(sum(x * st for x, st in zip(m, strides)) for m in members)
    slow, hop_lat = float("inf"), 0.0
    for a, b in zip(ranks, ranks[1:] + ranks[:1]):
        ca, cb = coords(a), coords(b)
        dim = next(i for i in range(len(npus)) if ca[i] != cb[i])
        slow = min(slow, gbps[dim])
        hop_lat = max(hop_lat, lat[dim] * (2 if blocks[dim] == "Switch" else 1))
    s = c["bytes"]
    kind = c["type"]
    if kind == "all-reduce":
        return 2 * (p - 1) / p * s / slow + 2 * (p - 1) * hop_lat
    if kind == "reduce-scatter":
        return (p - 1) / p * s / slow + (p - 1) * hop_lat
    if kind == "all-gather":
        return (p - 1) * s / slow + (p - 1) * hop_lat
    return float("nan")


def cause(name, d, ev, astra_ms, dimsum_ms):
    blocks, npus, gbps, lat = network(d)
    sysj = json.load(open(f"{d}/system.json"))
    splits = sysj["preferred-dataset-splits"]
    ratio = astra_ms / dimsum_ms
    partial = [c for c in ev["per_collective"]
               if any(1 < g < n for g, n in zip(c["group"], npus))]
    if partial and name != "gpt3-4d":
        c = partial[0]
        est = flat_ring(d, c) / 1e6
        size = 1
        for g in c["group"]:
            size *= max(g, 1)
        return (f"a group over part of a dimension runs in ASTRA-sim as one ring over its "
                f"{size} sorted ranks, every hop "
                f"charged on the lowest dimension its ranks differ in: {est:.3f} ms by that rule "
                f"(plus {splits} splits' step latencies), where dimsum times each dimension's own "
                f"algorithm and takes the slowest ({dimsum_ms:.3f} ms)")
    if blocks == ["Switch"] and ev["per_collective"][0]["type"] == "all-reduce":
        p = npus[0]
        return (f"ASTRA-sim's direct all-reduce on a switch moves the whole buffer twice, "
                f"2 S / B, where the bound and dimsum move 2 (p-1)/p S: x{p}/{p-1} = {p/(p-1):.4f}")
    if name == "gpt3-4d":
        extra = 0.0
        for c in partial:
            extra += flat_ring(d, c) / 1e6 - c["time_ms"]
        comm_d = ev["comm_time_ms"]
        return (f"{len(partial)} of {len(ev['per_collective'])} collectives are over part of a "
                f"dimension (tensor-parallel [4, 4] of the fully-connected 8, data-parallel "
                f"[2, 4, 32] of it): ASTRA-sim runs each as one ring over the group's sorted "
                f"ranks at the slowest hop's link (the data-parallel ring's hops across the "
                f"fully-connected dimension get one link, B/7), {extra:.1f} ms more than dimsum's "
                f"per-dimension times by that rule, against {astra_ms - dimsum_ms:.1f} ms "
                f"measured; the rest: {splits} splits' step latencies and LIBRA's whole-dimension "
                f"bandwidth, which this study keeps (dimsum's exposed comm {comm_d:.1f} ms)")
    return f"{splits} dataset splits: each chunk pays its steps' latencies and endpoint delays"


lines = [
    "# ASTRA-sim agreement",
    "",
    f"`scripts/astra-agreement.sh` at dimsum {commit}: each design exported with "
    "`dimsum export astra-sim` and run in ASTRA-sim 2.0's analytical backend (astra-sim "
    "518bd51; congestion-aware on one-dimension networks, congestion-unaware otherwise), "
    "beside `dimsum eval --json` on the same study. Times in ms; ASTRA-sim's is the "
    "slowest rank's wall time. The one-collective studies run a single collective with "
    "no compute (pipelined time model); gpt3-4d is LIBRA's GPT-3 on its 4D fabric at its "
    "`bw` (4,096 ranks).",
    "",
    "How the export describes dimsum's fabric: a ring dimension's links at the NPU's B "
    "(ASTRA-sim's native ring sends one way round); 16 dataset splits on fabrics of more "
    "than one dimension (pipelined, as dimsum's `libra` / `pipelined` models take the "
    "slowest dimension), 1 on one dimension; `local-mem-bw` the study's memory bandwidth "
    "for reductions (the `-memory` cases: 1600 GB/s, three passes per reduced byte in both "
    "dimsum and ASTRA-sim), else 10^9 GB/s where the study's reductions are free "
    "(`reduction_memory = false`, LIBRA's assumption, which gpt3-4d keeps); communicator "
    "groups (`comm_groups.json`) for collectives over part of a dimension.",
    "",
    "| case | backend | dimsum (ms) | ASTRA-sim (ms) | ratio | cause of a difference above 2% |",
    "|---|---|---|---|---|---|",
]
for name, d, backend, wall, comm in rows:
    ev = json.load(open(f"{d}/dimsum.json"))
    dm = ev["iteration_time_ms"]
    am = int(wall) / 1e6
    r = am / dm
    why = cause(name, d, ev, am, dm) if abs(r - 1) > 0.02 else ""
    lines.append(f"| {name} | {backend} | {dm:.3f} | {am:.3f} | {r:.4f} | {why} |")
    if name == "gpt3-4d":
        cd, ca = ev["comm_time_ms"], int(comm) / 1e6
        lines.append(f"| gpt3-4d, exposed communication | {backend} | {cd:.3f} | {ca:.3f} | {ca / cd:.4f} | as above |")
lines += [
    "",
    "Before this export (ring links at B/2 per direction, one dataset split, `local-mem-bw` "
    "1600, `involved_dim` for partial groups), the same cases gave: all-reduce on Ring(4) "
    "2.23x, all-gather on Ring(4) 2.00x, the [4, 4] group 2.53x (all-reduce) and 4.58x "
    "(all-gather), GPT-3's communication 2.74x (124.2 ms against 45.3 ms).",
    "",
    "Left: ASTRA-sim's communicator groups are single rings over the group's ranks, not "
    "dimsum's per-dimension algorithms; exporting dimsum's own schedules as ASTRA-sim custom "
    "collectives (`all-reduce-implementation-custom`, one Chakra ET per rank) would run "
    "them as dimsum does.",
    "",
]
open(dest, "w").write("\n".join(lines))
PY
echo "wrote $out/agreement.md"
