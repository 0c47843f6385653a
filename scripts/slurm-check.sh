#!/usr/bin/env bash
# The sharded sweep on a real Slurm: starts a single-node Slurm cluster on
# this machine (munged, slurmctld and slurmd, all configured and kept in a
# temporary directory), submits studies/gpt3-shapes.toml's sweeps with
# scripts/slurm-sweep.sh as a job array of 4 tasks plus the merge job, waits
# for them, and checks each merged CSV is byte for byte the unsharded
# sweep's. Prints `identical` when they are, else a diff summary (exit 1).
#
# Runs as root (it installs Debian's slurm-wlm and munge when missing and
# starts the daemons directly, without systemd: containers have none). The
# daemons it started are stopped on exit, failure or not, and the temporary
# directory removed (SLURM_CHECK_KEEP=1 keeps it); nothing else is written.
# SLURM_CHECK_TIMEOUT (seconds, default 1800) bounds the wait for the jobs.
# CI runs it after `cargo test --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
start=$SECONDS
me=slurm-check
study=studies/gpt3-shapes.toml
shards=4
timeout=${SLURM_CHECK_TIMEOUT:-1800}
# The daemons live in /usr/sbin, which a non-login shell may lack.
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

die() {
  echo "$me: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || die "must run as root (it installs packages and starts slurmd, which runs jobs as root)"

# dimsum: CI's `cargo test --release` has built it; this only checks.
if command -v cargo >/dev/null; then cargo build --release --quiet; fi
export DIMSUM=$repo/${CARGO_TARGET_DIR:-target}/release/dimsum
[[ -x $DIMSUM ]] || die "$DIMSUM not found: run cargo build --release"

# --- Install ----------------------------------------------------------------
# Only when something is missing; apt-get update only then. Installing
# munge on a systemd machine starts the system's munged (with its own key
# and socket): this check uses neither, so the two do not meet.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
  ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  t=$SECONDS
  echo "$me: installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  echo "$me: installed in $((SECONDS - t)) s"
fi

# --- Temporary directory and cleanup ----------------------------------------
# In /tmp, not $TMPDIR: munged wants every directory above its socket
# searchable by all (pam_tmpdir's /tmp/user/0 is not) and none writable by
# others: 0711 here, 0755 below. (Slurm runs the jobs' scripts from its
# spool directory in there: /tmp must not be mounted noexec.)
umask 022
tmp=$(mktemp -d /tmp/dimsum-slurm-check.XXXXXX)
chmod 711 "$tmp"
mkdir -p "$tmp"/{etc,munge,log,state,spool,out,full}
pids=() # the daemons, started in the foreground (-D / -F) in the background
jobs_ids=() full_pid=''

dump_logs() {
  local f
  for f in "$tmp"/log/* "$tmp"/out/logs/*; do
    [[ -s $f ]] || continue
    echo "--- $f (last 30 lines)" >&2
    tail -n 30 "$f" >&2
  done
}
cleanup() {
  local status=$? i pid
  trap - EXIT INT TERM
  if [[ -n $full_pid ]]; then
    kill "$full_pid" 2>/dev/null || true
    wait "$full_pid" 2>/dev/null || true
  fi
  # Jobs still queued or running (a failure or a timeout): cancel them
  # while slurmctld and slurmd are up, and give their steps a moment to end,
  # since slurmstepd outlives slurmd.
  if [[ ${#jobs_ids[@]} -gt 0 ]] && [[ -n $(squeue -h -j "$(
    IFS=,
    echo "${jobs_ids[*]}"
  )" 2>/dev/null) ]]; then
    scancel "${jobs_ids[@]}" 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
      [[ -z $(squeue -h -j "$(
        IFS=,
        echo "${jobs_ids[*]}"
      )" 2>/dev/null) ]] && break
      sleep 1
    done
  fi
  # slurmd, slurmctld, then munged (the other two authenticate through it).
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill "$pid" 2>/dev/null || continue
    for _ in {1..100}; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ $status -ne 0 ]]; then
    dump_logs
  fi
  if [[ -n ${SLURM_CHECK_KEEP:-} ]]; then
    echo "$me: kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
  echo "$me: $([[ $status -eq 0 ]] && echo passed || echo FAILED) in $((SECONDS - start)) s"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- munge --------------------------------------------------------------------
# A munged of our own: its own key, socket, log and seed in $tmp (a system
# munged, if any, is left alone; Slurm is pointed at ours by AuthInfo). In
# the foreground it logs to stderr, not to --log-file.
sock=$tmp/munge/munge.socket
if command -v mungekey >/dev/null; then
  mungekey --create --keyfile="$tmp/munge/munge.key"
else
  dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$tmp/munge/munge.key"
munged --foreground --socket="$sock" --key-file="$tmp/munge/munge.key" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" \
  --log-file="$tmp/munge/munged.log" >>"$tmp/log/munged.log" 2>&1 &
pids+=($!)
for ((i = 0; ; i++)); do
  if [[ -S $sock ]] && munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then break; fi
  kill -0 "${pids[-1]}" 2>/dev/null || die "munged exited at start (log below)"
  [[ $i -lt 100 ]] || die "munged did not answer within 10 s"
  sleep 0.1
done

# --- Slurm --------------------------------------------------------------------
# Two free ports from 6817 (Slurm's own) up, so that a Slurm already on
# this machine, or a previous run's daemons still closing, is not in the way.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for ((port = 6817; port < 6917; port += 2)); do
  if port_free "$port" && port_free $((port + 1)); then break; fi
done
[[ $port -lt 6917 ]] || die "no two free ports in 6817-6916"

# The node as slurmd sees it (CPUs, sockets, cores, threads, memory), renamed
# localhost: a node configured with more than it has would be drained.
node=$(slurmd -C 2>/dev/null | grep -m1 '^NodeName=' || true)
if [[ -n $node ]]; then
  node=$(sed -E 's/^NodeName=[^ ]+ +//; s/ *UpTime=.*//' <<<"$node")
else
  node="CPUs=$(nproc) RealMemory=$(free -m | awk '/^Mem:/ { print $2 }')"
fi
conf=$tmp/etc/slurm.conf
cat >"$conf" <<EOF
# Written by scripts/slurm-check.sh: one node, everything in $tmp.
ClusterName=dimsumcheck
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/state/slurmctld.pid
SlurmdPidFile=$tmp/spool/slurmd.pid
SlurmctldDebug=info
SlurmdDebug=info
# (No log files: run in the foreground, the daemons log to stderr, which
# goes to $tmp/log/. Errors there about PMIx (mpi/pmix plugins installed
# without libpmix, a Recommends) and about missing state files on a first
# start are harmless.)
# No cgroups: a container may not delegate them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
# Finished jobs stay known to scontrol for an hour (their exit codes are
# read from there: no accounting database).
MinJobAge=3600
InactiveLimit=0
SlurmdTimeout=300
KillWait=10
DependencyParameters=kill_invalid_depend
NodeName=localhost NodeAddr=127.0.0.1 $node State=UNKNOWN
PartitionName=check Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf # for slurmctld, slurmd, sbatch, squeue, scontrol

slurmctld -D -f "$conf" >>"$tmp/log/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$conf" >>"$tmp/log/slurmd.log" 2>&1 &
pids+=($!)
for ((i = 0; ; i++)); do
  state=$(sinfo -h -N -n localhost -o %t 2>/dev/null || true)
  [[ $state == idle ]] && break
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || die "a daemon exited at start (logs below)"
  done
  [[ $i -lt 60 ]] || die "the node is not idle after 60 s (state '${state:-unknown}'; logs below)"
  sleep 1
done
echo "$me: Slurm up (node localhost: $node; ports $port, $((port + 1)))"

# --- The sweep, sharded through Slurm -----------------------------------------
submitted=$(scripts/slurm-sweep.sh --out "$tmp/out" "$study" "$shards" --partition=check --time=60) ||
  die "slurm-sweep.sh failed"
echo "$submitted"
array_id=$(awk '/^sweep: job array / { print $4 }' <<<"$submitted")
merge_id=$(awk '/^merge: job / { print $3 }' <<<"$submitted")
[[ $array_id =~ ^[0-9]+$ && $merge_id =~ ^[0-9]+$ ]] || die "no job ids in slurm-sweep.sh's output"
jobs_ids=("$array_id" "$merge_id")

# The unsharded sweep, the reference, while the jobs run (in the
# background: a signal to this script then ends it at once).
t=$SECONDS
"$DIMSUM" sweep "$study" --out "$tmp/full" >"$tmp/log/unsharded.log" 2>&1 &
full_pid=$!
wait "$full_pid" || die "the unsharded sweep failed: $(tail -n 1 "$tmp/log/unsharded.log")"
full_pid=''
echo "$me: unsharded sweep done in $((SECONDS - t)) s"

deadline=$((SECONDS + timeout))
while [[ -n $(squeue -h -j "$array_id,$merge_id" -o %i) ]]; do
  [[ $SECONDS -lt $deadline ]] || {
    squeue -j "$array_id,$merge_id" >&2 || true
    die "the jobs did not finish within $timeout s (SLURM_CHECK_TIMEOUT)"
  }
  sleep 2
done

# Every task and the merge: COMPLETED with exit code 0 (scontrol still
# knows finished jobs for MinJobAge; there is no accounting for sacct).
states=$(scontrol -o show job "$array_id" && scontrol -o show job "$merge_id") ||
  die "scontrol no longer knows the jobs"
bad=0 done_tasks=0
while IFS= read -r line; do
  [[ -n $line ]] || continue
  id=$(grep -o 'JobId=[0-9]*' <<<"$line" | head -n 1)
  task=$(grep -oE 'ArrayTaskId=[0-9]+' <<<"$line" || true)
  state=$(grep -oE 'JobState=[A-Z_]+' <<<"$line" || true)
  code=$(grep -oE ' ExitCode=[0-9]+:[0-9]+' <<<"$line" || true)
  if [[ $state == JobState=COMPLETED && $code == " ExitCode=0:0" ]]; then
    [[ -z $task ]] || done_tasks=$((done_tasks + 1))
  else
    echo "$me: $id ${task:-(merge)}: $state$code" >&2
    bad=1
  fi
done <<<"$states"
[[ $bad -eq 0 ]] || die "a job failed (logs below)"
[[ $done_tasks -eq $shards ]] || die "$done_tasks of $shards array tasks completed"
echo "$me: $shards array tasks and the merge job completed, exit code 0"
for ((i = 0; i < shards; i++)); do
  [[ -s $tmp/out/logs/sweep-${array_id}_$i.out ]] || die "no log of task $i"
done
[[ -s $tmp/out/logs/merge-$merge_id.out ]] || die "no log of the merge job"

# --- Merged against unsharded -------------------------------------------------
# Byte for byte, nothing masked: the header is the same, every field of a
# row (its dimsum_version, study_hash, index and total included; no shard,
# host or time) is the same however the items are shared out, and `dimsum
# merge` writes the rows in index order, as the unsharded sweep does.
shopt -s nullglob
differ=0 compared=0
for f in "$tmp"/full/sweep-*.csv "$tmp"/out/sweep-*.csv; do
  b=$(basename "$f")
  [[ -e $tmp/full/$b ]] || die "$b: merged, but the unsharded sweep has no such sweep"
  [[ -e $tmp/out/$b ]] || die "$b: the unsharded sweep wrote it, the merge did not"
done
for f in "$tmp"/full/sweep-*.csv; do
  b=$(basename "$f")
  compared=$((compared + 1))
  if cmp -s "$f" "$tmp/out/$b"; then
    echo "$me: $b: $(($(wc -l <"$f") - 1)) rows, identical"
  else
    differ=$((differ + 1))
    echo "$me: $b differs: $(wc -l <"$f") lines unsharded, $(wc -l <"$tmp/out/$b") merged," \
      "$(diff "$f" "$tmp/out/$b" | grep -c '^[<>]' || true) lines differ; first ones (unsharded <, merged >):"
    diff "$f" "$tmp/out/$b" | head -n 10 | cut -c1-200 || true
  fi
done
[[ $compared -gt 0 ]] || die "the unsharded sweep wrote no CSV"
if [[ $differ -gt 0 ]]; then
  echo "$me: $differ of $compared merged CSVs differ from the unsharded sweep's"
  exit 1
fi
echo identical
