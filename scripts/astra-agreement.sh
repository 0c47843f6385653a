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

# Runs one case: NAME STUDY-FILE [BACKEND]; appends "name<TAB>dir<TAB>backend<TAB>wall ns<TAB>comm ns<TAB>gpu ns".
run() {
  local name=$1 file=$2 dir=$tmp/$1 backend=${3:-}
  "$bin" export astra-sim "$file" --out "$dir" >/dev/null
  "$bin" eval --json "$file" >"$dir/dimsum.json"
  # One dimension: the congestion-aware backend (it takes one only);
  # more: the congestion-unaware one.
  if [[ -z $backend ]]; then
    if [[ $(grep -oP '^topology: \[\K[^]]*' "$dir/network.yml" | tr ',' '\n' | wc -l) == 1 ]]; then
      backend=AstraSim_Analytical_Congestion_Aware
    else
      backend=AstraSim_Analytical_Congestion_Unaware
    fi
  fi
  (cd "$dir" && "$astra/$backend" --workload-configuration=workload --system-configuration=system.json \
    --network-configuration=network.yml --remote-memory-configuration=memory.json \
    --comm-group-configuration=comm_groups.json >astra.log 2>&1)
  local wall comm gpu
  wall=$(grep -oP 'sys\[\d+\], Wall time: \K\d+' "$dir/astra.log" | sort -n | tail -1)
  comm=$(grep -oP 'sys\[\d+\], Comm time: \K\d+' "$dir/astra.log" | sort -n | tail -1)
  gpu=$(grep -oP 'sys\[\d+\], GPU time: \K\d+' "$dir/astra.log" | sort -n | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$dir" "${backend#AstraSim_Analytical_}" "$wall" "$comm" "$gpu" >>"$tmp/runs.tsv"
  echo "$name: ASTRA-sim $wall ns" >&2
}

: >"$tmp/runs.tsv"
run ar-ring4 "$(study ar-ring4 ring 4 200 all-reduce 805306368 4 500)"
run ag-ring4 "$(study ag-ring4 ring 4 200 all-gather 50331648 4 500)"
run rs-ring4 "$(study rs-ring4 ring 4 200 reduce-scatter 805306368 4 500)"
run ar-ring4-memory "$(study ar-ring4-memory ring 4 200 all-reduce 805306368 4 500 1600)"
run ar-ring4-switch8-memory "$(study ar-ring4-switch8-memory ring,switch 4,8 200,100 all-reduce 805306368 4,8 500,1000 1600)"
run ar-fc8 "$(study ar-fc8 fully-connected 8 700 all-reduce 805306368 8 500)"
run ag-fc8 "$(study ag-fc8 fully-connected 8 700 all-gather 50331648 8 500)"
run ar-switch32 "$(study ar-switch32 switch 32 100 all-reduce 805306368 32 500)"
run rs-switch32 "$(study rs-switch32 switch 32 100 reduce-scatter 805306368 32 500)"
run ar-ring4-switch8 "$(study ar-ring4-switch8 ring,switch 4,8 200,100 all-reduce 805306368 4,8 500,1000)"
run ar-ring4-fc8-g44 "$(study ar-ring4-fc8-g44 ring,fully-connected 4,8 200,700 all-reduce 805306368 4,4 500,500)"
run ag-ring4-fc8-g44 "$(study ag-ring4-fc8-g44 ring,fully-connected 4,8 200,700 all-gather 50331648 4,4 500,500)"
run rs-ring4-fc8-g44 "$(study rs-ring4-fc8-g44 ring,fully-connected 4,8 200,700 reduce-scatter 805306368 4,4 500,500)"
run ar-ring4-fc8-g-2 "$(study ar-ring4-fc8-g-2 ring,fully-connected 4,8 200,700 all-reduce 805306368 -1,2 500,500)"
ring8=$(study ar-ring8-g4 ring 8 200 all-reduce 805306368 4 500)
run ar-ring8-g4 "$ring8"
run ar-ring8-g4-unaware "$ring8" AstraSim_Analytical_Congestion_Unaware
# GPT-3 as exported (the fabric's links), beside dimsum under the links
# model; the same ASTRA-sim run is set beside LIBRA's whole-dimension
# figure below (the export does not depend on the study's model).
sed 's/^group_bandwidth = "whole-dimension"/group_bandwidth = "links"/' "$repo/studies/gpt3-4d.toml" >"$tmp/gpt3-4d-links.toml"
run gpt3-4d "$tmp/gpt3-4d-links.toml"
"$bin" eval --json "$repo/studies/gpt3-4d.toml" >"$tmp/gpt3-4d/whole.json"

python3 - "$tmp/runs.tsv" "$out/agreement.md" "$(git -C "$repo" rev-parse --short HEAD)" <<'PY'
import json, sys
from collections import OrderedDict

runs, dest, commit = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [line.rstrip("\n").split("\t") for line in open(runs)]


def network(d):
    """(blocks, npus, per-link GB/s as exported (10^9 B/s), latency ns) from network.yml."""
    vals = {}
    for line in open(f"{d}/network.yml"):
        line = line.split("#")[0].strip()
        if ":" in line:
            k, v = line.split(":", 1)
            vals[k.strip()] = [x.strip() for x in v.strip().strip("[]").split(",")]
    gib = 2**30 / 1e9
    return (vals["topology"], [int(x) for x in vals["npus_count"]],
            [float(x) * gib for x in vals["bandwidth"]], [float(x) for x in vals["latency"]])


def size(group):
    p = 1
    for g in group:
        p *= max(g, 1)
    return p


def line_cause(d, ev, runs_by_name, name):
    """A group on part of a ring: dimsum's line against ASTRA-sim's
    communicator-group ring, in both backends."""
    c = ev["per_collective"][0]
    p, s = size(c["group"]), c["bytes"]
    blocks, npus, gbps, lat = network(d)
    flat = 2 * (p - 1) / p * s / gbps[0] / 1e6
    aware = runs_by_name.get(name.replace("-unaware", ""))
    unaware = runs_by_name.get(name + "-unaware", runs_by_name.get(name))
    return (f"{p} contiguous NPUs of a ring form a line (no wrap-around link): dimsum moves 2 S / B "
            f"over its end NPU's one link ({c['time_ms']:.3f} ms). ASTRA-sim has no line block: a "
            f"communicator group runs one ring over the group's ranks, so the closing hop "
            f"{p - 1} -> 0 exists in it. Congestion-unaware: that hop is free and one way at the "
            f"exported B, 2 (p-1)/p S / B = {flat:.3f} ms ({unaware:.3f} ms measured); "
            f"congestion-aware: the closing hop is routed back over the ring's links and shares "
            f"them ({aware:.3f} ms). Neither is the fabric; dimsum's time is the line's cut")


def gpt3_terms(d, ev_links, ev_whole, astra_wall, astra_comm, astra_gpu):
    """Term by term: LIBRA's whole-dimension figure -> dimsum's links
    figure -> ASTRA-sim (compute rounding, communication)."""
    groups = OrderedDict()
    for cl, cw in zip(ev_links["per_collective"], ev_whole["per_collective"]):
        key = (cl["type"], cl["bytes"], tuple(cl["group"]))
        n, dl, dw = groups.get(key, (0, 0.0, 0.0))
        groups[key] = (n + 1, dl + cl["time_ms"], dw + cw["time_ms"])
    out = []
    total = 0.0
    for (kind, b, g), (n, dl, dw) in groups.items():
        if abs(dl - dw) < 1e-9:
            continue
        total += dl - dw
        out.append(f"{n} x {kind} of {b / 2**20:.0f} MiB over {list(g)}: {dw:.3f} -> {dl:.3f} ms "
                   f"(+{dl - dw:.3f})")
    comp = astra_gpu / 1e6 - ev_links["compute_time_ms"]
    comm = astra_comm / 1e6 - ev_links["comm_time_ms"]
    return (total, out, comp, comm)


lines = [
    "# ASTRA-sim agreement",
    "",
    f"`scripts/astra-agreement.sh` at dimsum {commit}: each design exported with "
    "`dimsum export astra-sim` and run in ASTRA-sim 2.0's analytical backend (astra-sim "
    "518bd51; congestion-aware on one-dimension networks, congestion-unaware otherwise), "
    "beside `dimsum eval --json` on the same study. Times in ms; ASTRA-sim's is the "
    "slowest rank's wall time. The one-collective studies run a single collective with "
    "no compute (pipelined time model, dimsum's default `group_bandwidth = \"links\"`); "
    "gpt3-4d is LIBRA's GPT-3 on its 4D fabric at its `bw` (4,096 ranks).",
    "",
    "How the export describes dimsum's fabric: a ring dimension's links at the NPU's B "
    "(ASTRA-sim's native ring sends one way round); 16 dataset splits on fabrics of more "
    "than one dimension (pipelined, as dimsum's `libra` / `pipelined` models take the "
    "slowest dimension), 1 on one dimension; `local-mem-bw` the study's memory bandwidth "
    "for reductions (the `-memory` cases: 1600 GB/s, three passes per reduced byte in both "
    "dimsum and ASTRA-sim), else 10^9 GB/s where the study's reductions are free "
    "(`reduction_memory = false`, LIBRA's assumption, which gpt3-4d keeps); a "
    "fully-connected or switch dimension that groups cover in part written as one "
    "sub-dimension per group size at the dimension's per-link bandwidth (the `-g44` and "
    "`-g-2` cases: FullyConnected(8) as 4 x 2 and 2 x 4; GPT-3's package dimension as "
    "4 x 2, tensor parallelism on the 4, data parallelism on the 2), so each group runs "
    "on its own links; communicator groups (`comm_groups.json`) only for groups over "
    "part of a ring.",
    "",
    "| case | backend | dimsum (ms) | ASTRA-sim (ms) | ratio | cause of a difference above 2% |",
    "|---|---|---|---|---|---|",
]
by_name = {r[0]: int(r[3]) / 1e6 for r in rows}
notes = []
for name, d, backend, wall, comm, gpu in rows:
    ev = json.load(open(f"{d}/dimsum.json"))
    dm = ev["iteration_time_ms"]
    am = int(wall) / 1e6
    r = am / dm
    why = ""
    blocks, npus, _, _ = network(d)
    if abs(r - 1) > 0.02:
        if name.startswith("ar-ring8-g4"):
            why = line_cause(d, ev, by_name, name)
        elif blocks == ["Switch"]:
            p = npus[0]
            kind = ev["per_collective"][0]["type"]
            moved = {"all-reduce": ("2 S", "2 (p-1)/p S"), "reduce-scatter": ("S", "(p-1)/p S"),
                     "all-gather": ("p S", "(p-1) S")}[kind]
            why = (f"ASTRA-sim's direct {kind} on a switch takes {moved[0]} / B, as if the NPU's "
                   f"own share crossed its port too, where the bound and dimsum move {moved[1]}: "
                   f"x{p}/{p-1} = {p/(p-1):.4f}")
        else:
            why = "not explained"
    lines.append(f"| {name} | {backend} | {dm:.3f} | {am:.3f} | {r:.4f} | {why} |")
    if name == "gpt3-4d":
        cd, ca = ev["comm_time_ms"], int(comm) / 1e6
        lines.append(f"| gpt3-4d, exposed communication | {backend} | {cd:.3f} | {ca:.3f} | {ca / cd:.4f} | |")
        whole = json.load(open(f"{d}/whole.json"))
        wm = whole["iteration_time_ms"]
        total, terms, comp, commd = gpt3_terms(d, ev, whole, int(wall), int(comm), int(gpu))
        lines.append(f"| gpt3-4d, LIBRA's whole-dimension model | {backend} | {wm:.3f} | {am:.3f} | "
                     f"{am / wm:.4f} | term by term below |")
        notes += [
            "",
            "## GPT-3, term by term",
            "",
            f"The study keeps LIBRA's `group_bandwidth = \"whole-dimension\"`: every group gets "
            f"all of a dimension's bandwidth, so tensor parallelism on 4 of the fully-connected 8 "
            f"moves at B, where its own links carry 3/7 of B (and data parallelism on 2 of it, "
            f"1/7). ASTRA-sim simulates the links. From LIBRA's {wm:.3f} ms to ASTRA-sim's "
            f"{am:.3f} ms (+{am - wm:.3f} ms):",
            "",
            f"- the groups' own links, dimsum's `links` model ({dm:.3f} ms, +{total:.3f} ms), by collective:",
        ]
        notes += [f"  - {t}" for t in terms]
        notes += [
            f"- compute: ASTRA-sim's trace holds each phase's compute in whole microseconds, "
            f"rounded up: +{comp:.3f} ms ({int(gpu) / 1e6:.3f} against {ev['compute_time_ms']:.3f});",
            f"- communication beyond dimsum's `links` figure: +{commd:.3f} ms "
            f"({ca:.3f} against {cd:.3f}): each collective's 16 dataset splits pass its other "
            f"dimensions too (a pipeline's fill and drain, about 1/16 of their time) and each "
            f"chunk step pays ASTRA-sim's 10 ns endpoint delay.",
            "",
            f"Sum: {wm:.3f} + {total:.3f} + {comp:.3f} + {commd:.3f} = "
            f"{wm + total + comp + commd:.3f} ms; ASTRA-sim {am:.3f} ms.",
        ]
lines += notes
lines += [
    "",
    "## Before",
    "",
    "Before this export (ring links at B/2 per direction, one dataset split, `local-mem-bw` "
    "1600, `involved_dim` for partial groups), the same cases gave: all-reduce on Ring(4) "
    "2.23x, all-gather on Ring(4) 2.00x, the [4, 4] group 2.53x (all-reduce) and 4.58x "
    "(all-gather), GPT-3's communication 2.74x (124.2 ms against 45.3 ms). With "
    "communicator groups for the [4, 4] group (one ring over its 16 ranks) in place of "
    "sub-dimensions: 1.29x, and GPT-3's iteration 764.2 ms.",
    "",
    "## Left",
    "",
    "- A group on part of a ring (a line) has no ASTRA-sim block (`ar-ring8-g4`). ASTRA-sim's "
    "per-node custom collectives (`per-node-custom-implementation`, one Chakra ET per group "
    "position) could carry dimsum's line schedule, but the congestion-unaware backend "
    "would run its two directions each at the exported B, and the congestion-aware one "
    "takes one dimension only.",
    "- Switches under the congestion-unaware backend (any network of more than one "
    "dimension) have no contention: a direct collective's p - 1 messages overlap freely. "
    "The cases above keep switch dimensions off the critical path there or use the "
    "congestion-aware backend.",
    "",
]
open(dest, "w").write("\n".join(lines))
PY
echo "wrote $out/agreement.md"
