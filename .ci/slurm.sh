#!/usr/bin/env bash
# Start or stop a private single-node Slurm cluster on 127.0.0.1 with two fake GPUs, each split
# into 4 shards (a quarter of a GPU per shard), and 8 CPUs whatever the machine has
# (config_overrides), so that jobs queue for GPUs, not for cores, in the Slurm launcher's tests.
#   .ci/slurm.sh start DIR   -> prints the path of slurm.conf (export SLURM_CONF=...)
#   .ci/slurm.sh stop DIR    -> cancels every job, then stops the daemons by their pid files
# Needs Debian's slurmctld slurmd slurm-client munge (22.05 or later: shards). Runs as root.
set -euo pipefail
action=${1:?start or stop}
B=${2:?state folder}
host=$(hostname -s)

case "$action" in
start)
  mkdir -p "$B"/{etc,state/ctld,state/d,run,log,gpu,munge/etc}
  # two free ports, so that this cluster never meets another one on the same machine
  read -r ctld_port d_port < <(python3 -c 'import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
  chmod 755 "$B" "$B/munge"; chmod 700 "$B/munge/etc"  # munged wants its socket path open
  [ -f "$B/munge/etc/munge.key" ] || mungekey -c -k "$B/munge/etc/munge.key"
  munged --key-file="$B/munge/etc/munge.key" --socket="$B/munge/munge.socket" \
    --pid-file="$B/munge/munged.pid" --log-file="$B/munge/munged.log" \
    --seed-file="$B/munge/munged.seed"
  # gres File= must name a device; links to /dev/null stand in for /dev/nvidia0 and 1
  ln -sf /dev/null "$B/gpu/gpu0"; ln -sf /dev/null "$B/gpu/gpu1"
  cat >"$B/etc/slurm.conf" <<CONF
ClusterName=tuner-ci
SlurmctldHost=localhost
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$B/munge/munge.socket
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
StateSaveLocation=$B/state/ctld
SlurmdSpoolDir=$B/state/d
SlurmctldPidFile=$B/run/slurmctld.pid
SlurmdPidFile=$B/run/slurmd.pid
SlurmctldLogFile=$B/log/slurmctld.log
SlurmdLogFile=$B/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerParameters=batch_sched_delay=0
KillWait=5
SlurmdParameters=config_overrides
GresTypes=gpu,shard
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$B/log/jobcomp.txt
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 Gres=gpu:2,shard:8 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  cat >"$B/etc/gres.conf" <<CONF
AutoDetect=off
NodeName=$host Name=gpu File=$B/gpu/gpu[0-1]
NodeName=$host Name=shard Count=8 File=$B/gpu/gpu[0-1]
CONF
  export SLURM_CONF=$B/etc/slurm.conf
  slurmctld
  slurmd
  for _ in $(seq 300); do
    [ "$(sinfo -h -n "$host" -o %T 2>/dev/null)" = idle ] && break
    sleep 0.1
  done
  [ "$(sinfo -h -n "$host" -o %T)" = idle ] || { cat "$B/log/"*.log >&2; exit 1; }
  echo "$SLURM_CONF"
  ;;
stop)
  export SLURM_CONF=$B/etc/slurm.conf
  if [ -f "$B/run/slurmctld.pid" ]; then  # slurmd's end does not end the jobs' processes
    scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  for pf in "$B/run/slurmd.pid" "$B/run/slurmctld.pid" "$B/munge/munged.pid"; do
    [ -f "$pf" ] || continue
    pid=$(cat "$pf")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  done
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
