# Networks shared by scripts/forest.sh and scripts/all-to-all.sh, written
# into a directory: `source scripts/networks.sh; write_networks DIR`.

write_networks() { # DIR: dgx-4x8.edges, dgx-4x8.yml, random-1.edges, random-2.edges
  local tmp=$1
  # A DGX-like fabric: 4 nodes of 8 GPUs, each node on its NVSwitch at 450
  # GB/s per GPU per direction, GPU i of every node on rail switch i at 50
  # GB/s (one 400 Gb/s NIC per GPU); 0.5 us per link.
  python3 - "$tmp/dgx-4x8.edges" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for node in range(4):
        for g in range(8):
            f.write(f"{node * 8 + g} <-> s{node} 450 0.5us\n")
            f.write(f"{node * 8 + g} <-> s{4 + g} 50 0.5us\n")
PY
  # The same fabric as ASTRA-sim describes it (a product network: Switch(8) x
  # Switch(4); ASTRA-sim's GB is 2^30 B, so 450 and 50 GB/s are written as
  # 450e9 / 2^30 and 50e9 / 2^30).
  cat >"$tmp/dgx-4x8.yml" <<'YML'
topology: [ Switch, Switch ]
npus_count: [ 8, 4 ]
bandwidth: [ 419.0951585769653, 46.566128730773926 ]
latency: [ 500.0, 500.0 ]
YML
  # Random strongly connected networks of 12 NPUs (fixed seeds): a two-way
  # ring at 25-100 GB/s plus 12 one-way links at 10-100 GB/s.
  for seed in 1 2; do
    python3 - "$tmp/random-$seed.edges" "$seed" <<'PY'
import random, sys
rng = random.Random(int(sys.argv[2]))
n = 12
with open(sys.argv[1], "w") as f:
    for v in range(n):
        f.write(f"{v} -> {(v + 1) % n} {rng.randint(25, 100)} 0.5us\n")
        f.write(f"{(v + 1) % n} -> {v} {rng.randint(25, 100)} 0.5us\n")
    for _ in range(12):
        a, b = rng.sample(range(n), 2)
        f.write(f"{a} -> {b} {rng.randint(10, 100)} 0.5us\n")
PY
  done
}
