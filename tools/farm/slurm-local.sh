#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine, for testing the farm scripts for real:
# munge, then slurmctld and slurmd as root, with a generated slurm.conf naming the local host
# (proctrack/linuxproc, task/none, select/cons_tres: no cgroups needed). Debian/Ubuntu, as
# root or through sudo; installs slurm-wlm and munge when missing. `tools/farm/slurm-local.sh
# stop` stops it.
# Prints the partition once the node is idle; exits non-zero if it does not come up.
set -euo pipefail
STATE=${SLURM_LOCAL_DIR:-/tmp/canopy-slurm}

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ "${1:-}" = stop ]; then
    # Stopped once the daemons have exited (a daemon still saving its state is not yet gone).
    for pid in "$STATE"/slurmd.pid "$STATE"/slurmctld.pid; do
        [ -f "$pid" ] || continue
        daemon=$(cat "$pid")
        $SUDO kill "$daemon" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$daemon" 2>/dev/null || break
            sleep 0.1
        done
    done
    exit 0
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge
fi

host=$(hostname -s)
$SUDO mkdir -p "$STATE"/ctld "$STATE"/spool "$STATE"/log /etc/slurm /run/munge /var/log/munge /var/lib/munge
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
$SUDO tee /etc/slurm/slurm.conf >/dev/null <<CONF
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

$SUDO test -s /etc/munge/munge.key ||
    $SUDO dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
$SUDO chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || $SUDO munged --force
# A controller that answers is running; one that does not (absent, or stopping) is started.
scontrol ping 2>/dev/null | grep -q UP || $SUDO slurmctld
pgrep -x slurmd >/dev/null || $SUDO slurmd
for _ in $(seq 1 60); do
    if timeout 5 sinfo -h -o '%t' 2>/dev/null | grep -qE '^idle'; then
        sinfo
        exit 0
    fi
    sleep 0.5
done
echo "slurm-local: the node did not come up; see $STATE/log" >&2
$SUDO tail -5 "$STATE"/log/*.log >&2 || true
exit 1
