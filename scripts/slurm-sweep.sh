#!/usr/bin/env bash
# A study's sweeps on a Slurm cluster: a job array of SHARDS tasks (task i
# runs `dimsum sweep STUDY --shard i/SHARDS`), then a merge job that starts
# once every task has succeeded and joins each sweep's shards with
# `dimsum merge`. Extra arguments go to both sbatch calls. See --help.
set -euo pipefail

me=scripts/slurm-sweep.sh
usage() {
  cat <<EOF
usage: $me [--out DIR] [--name NAME] STUDY SHARDS [sbatch options...]

Submits STUDY's sweeps (or only the sweep NAME) to Slurm as a job array of
SHARDS tasks, task i running \`dimsum sweep STUDY --shard i/SHARDS\`, and a
merge job (--dependency=afterok on the array, --kill-on-invalid-dep=yes:
cancelled if a task fails) that runs \`dimsum merge\` for each sweep.
Options after SHARDS go to sbatch unchanged, for both jobs (e.g.
--partition=cpu --time=1:00:00 --account=proj --cpus-per-task=8).

Output, under DIR (default: slurm-results/STEM, STEM being the study
file's name without .toml; relative to the current directory):
  DIR/sweep-NAME.csv     each sweep's merged CSV, as \`dimsum sweep\` writes it
  DIR/shards/            the shards (sweep-NAME.shard-i-of-SHARDS.csv)
  DIR/logs/              sweep-JOBID_i.out per task, merge-JOBID.out
DIR must be on a file system every node sees. Submitting again into the
same DIR resumes: finished shards are read back, not solved again.

The dimsum binary: \$DIMSUM, else \`dimsum\` on PATH, else this repository's
target/release/dimsum. Each task runs RAYON_NUM_THREADS threads, by default
the CPUs Slurm gave it (SLURM_CPUS_PER_TASK, else SLURM_CPUS_ON_NODE).

Prints the job ids and the merged CSVs' paths. Exit status 2 on bad
arguments, 1 if dimsum or sbatch is missing or sbatch refuses a job.
EOF
}
die() { # STATUS MESSAGE
  echo "$me: $2" >&2
  exit "$1"
}

out='' name=''
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --out | --name)
      [[ $# -ge 2 && -n $2 ]] || die 2 "$1 needs a value (see --help)"
      if [[ $1 == --out ]]; then out=$2; else name=$2; fi
      shift 2
      ;;
    --out=*) out=${1#--out=} && shift ;;
    --name=*) name=${1#--name=} && shift ;;
    --) shift && break ;;
    -*) die 2 "unknown option $1 (sbatch options go after STUDY SHARDS; see --help)" ;;
    *) break ;;
  esac
done
[[ $# -ge 2 ]] || die 2 "expected STUDY SHARDS [sbatch options...] (see --help)"
study=$1 shards=$2
shift 2
[[ -f $study ]] || die 2 "study $study: no such file"
[[ $shards =~ ^[1-9][0-9]*$ ]] || die 2 "SHARDS must be a positive integer, not '$shards'"
[[ -z $name || $name =~ ^[A-Za-z0-9._-]+$ ]] || die 2 "--name '$name': not a sweep name"
stem=$(basename "$study" .toml)

# The binary, as an absolute path: the jobs run it from wherever Slurm
# starts them.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${DIMSUM:-} ]]; then
  bin=$(command -v "$DIMSUM") || die 1 "DIMSUM=$DIMSUM: not an executable"
elif bin=$(command -v dimsum); then
  :
elif [[ -x $repo/target/release/dimsum ]]; then
  bin=$repo/target/release/dimsum
else
  die 1 "no dimsum binary: set DIMSUM, put dimsum on PATH, or run cargo build --release"
fi
bin=$(readlink -f "$bin")
command -v sbatch >/dev/null || die 1 "sbatch not found: is this a Slurm login node?"

out=${out:-slurm-results/$stem}
mkdir -p "$out/shards" "$out/logs"
out=$(cd "$out" && pwd)
study=$(readlink -f "$study")

# The jobs' scripts, given to sbatch on stdin, with every path quoted.
q() { printf '%q' "$1"; }
name_arg=
[[ -z $name ]] || name_arg="--name $(q "$name")"
sweep_job=$(
  cat <<EOF
#!/usr/bin/env bash
set -euo pipefail
threads=\${RAYON_NUM_THREADS:-\${SLURM_CPUS_PER_TASK:-\${SLURM_CPUS_ON_NODE:-}}}
[[ -z \$threads ]] || export RAYON_NUM_THREADS=\$threads
exec $(q "$bin") sweep $(q "$study") $name_arg --shard "\$SLURM_ARRAY_TASK_ID/$shards" --out $(q "$out/shards")
EOF
)
# The merge job finds the sweeps' names from the shards' files (a study may
# have several [[sweep]] tables), then hands dimsum merge every expected
# shard: a missing one is an error, not a smaller CSV. One shard
# (--shard 0/1) is written without the .shard-i-of-N suffix.
merge_job=$(
  cat <<EOF
#!/usr/bin/env bash
set -euo pipefail
cd $(q "$out/shards")
n=$shards name=$(q "$name")
file() { if [[ \$n -eq 1 ]]; then echo "sweep-\$1.csv"; else echo "sweep-\$1.shard-\$2-of-\$n.csv"; fi; }
names=()
if [[ -n \$name ]]; then
  names=("\$name")
else
  shopt -s nullglob
  for f in sweep-*.csv; do
    s=\${f#sweep-}
    if [[ \$n -eq 1 ]]; then
      [[ \$s != *.shard-* ]] || continue
      s=\${s%.csv}
    else
      [[ \$s == *".shard-0-of-\$n.csv" ]] || continue
      s=\${s%".shard-0-of-\$n.csv"}
    fi
    names+=("\$s")
  done
fi
[[ \${#names[@]} -gt 0 ]] || { echo "no shards of \$n in \$PWD" >&2; exit 1; }
for s in "\${names[@]}"; do
  shard_files=()
  for ((i = 0; i < n; i++)); do shard_files+=("\$(file "\$s" "\$i")"); done
  $(q "$bin") merge $(q "$out")/"sweep-\$s.csv" "\${shard_files[@]}"
done
EOF
)

# --parsable prints "JOBID" or "JOBID;CLUSTER".
array_id=$(sbatch --parsable --array="0-$((shards - 1))" --job-name="dimsum-$stem" \
  --output="$out/logs/sweep-%A_%a.out" "$@" <<<"$sweep_job") ||
  die 1 "sbatch refused the sweep's job array"
array_id=${array_id%%;*}
if ! merge_id=$(sbatch --parsable --dependency="afterok:$array_id" --kill-on-invalid-dep=yes \
  --job-name="dimsum-$stem-merge" --output="$out/logs/merge-%j.out" "$@" <<<"$merge_job"); then
  scancel "$array_id" || true
  die 1 "sbatch refused the merge job (job array $array_id cancelled)"
fi
merge_id=${merge_id%%;*}

echo "sweep: job array $array_id ($shards tasks, ${array_id}_0 .. ${array_id}_$((shards - 1)))"
echo "merge: job $merge_id (after every task of $array_id succeeds)"
echo "shards: $out/shards/"
echo "logs: $out/logs/"
# The sweeps' names, read from the study's [[sweep]] tables (only to
# print them: the merge job goes by the shards it finds).
names=$name
if [[ -z $names ]]; then
  names=$(awk '/^[[:space:]]*\[/ { in_sweep = /^[[:space:]]*\[\[[[:space:]]*sweep[[:space:]]*\]\]/; next }
    in_sweep && match($0, /^[[:space:]]*name[[:space:]]*=[[:space:]]*"[^"]*"/) {
      v = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", v); sub(/"$/, "", v); print v; in_sweep = 0 }' "$study")
fi
if [[ -n $names ]]; then
  for s in $names; do echo "merged CSV: $out/sweep-$s.csv"; done
else
  echo "merged CSVs: $out/sweep-NAME.csv for each [[sweep]] of $stem"
fi
