#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine, for testing the farm scripts for real:
# munge, then slurmctld and slurmd as root, with a generated slurm.conf naming the local host
# (proctrack/linuxproc, task/none, select/cons_tres: no cgroups needed). Debian/Ubuntu, as
# root; installs slurm-wlm and munge when missing. `tools/farm/slurm-local.sh stop` stops it.
# Prints the partition once the node is idle; exits non-zero if it does not come up.
set -euo pipefail
STATE=${SLURM_LOCAL_DIR:-/tmp/canopy-slurm}

if [ "${1:-}" = stop ]; then
    for pid in "$STATE"/slurmd.pid "$STATE"/slurmctld.pid; do
        [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
    done
    exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "slurm-local: run as root" >&2; exit 1; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge
fi

host=$(hostname -s)
mkdir -p "$STATE"/ctld "$STATE"/spool "$STATE"/log /etc/slurm /run/munge /var/log/munge /var/lib/munge
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=canopy-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

[ -s /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || munged --force
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 1 60); do
    if sinfo -h -o '%t' 2>/dev/null | grep -qE '^idle'; then
        sinfo
        exit 0
    fi
    sleep 0.5
done
echo "slurm-local: the node did not come up; see $STATE/log" >&2
tail -5 "$STATE"/log/*.log >&2 || true
exit 1
