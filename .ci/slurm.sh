#!/usr/bin/env bash
# A single-node Slurm for CI: Debian 12's slurm-wlm 22.05 with munge, slurmctld and slurmd on
# this host, job completions (state, exit code) in a job-completion log that `sacct --completion`
# reads (no accounting database), configuration and state under $REV88_SLURM_DIR.
#
#   source .ci/slurm.sh; slurm_start     # installs what is missing, starts the daemons, waits
#   slurm_stop                           # stops what slurm_start started, by pid
#
# Clients find the configuration through SLURM_CONF, which slurm_start exports.
REV88_SLURM_DIR=${REV88_SLURM_DIR:-/tmp/rev88-slurm}
SLURM_PIDS=()

slurm_start() {
    local need=() host cpus
    command -v slurmctld >/dev/null 2>&1 || need+=(slurm-wlm)
    command -v munged >/dev/null 2>&1 || need+=(munge)
    if [ "${#need[@]}" -gt 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    fi
    host=$(hostname -s)
    cpus=$(nproc)
    mkdir -p "$REV88_SLURM_DIR"/{ctld,d,log}
    cat >"$REV88_SLURM_DIR/slurm.conf" <<EOF
ClusterName=rev88ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$REV88_SLURM_DIR/ctld
SlurmdSpoolDir=$REV88_SLURM_DIR/d
SlurmctldPidFile=$REV88_SLURM_DIR/slurmctld.pid
SlurmdPidFile=$REV88_SLURM_DIR/slurmd.pid
SlurmctldLogFile=$REV88_SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$REV88_SLURM_DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MinJobAge=3600
JobCompType=jobcomp/filetxt
JobCompLoc=$REV88_SLURM_DIR/log/jobcomp.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$REV88_SLURM_DIR/slurm.conf"
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || /usr/sbin/create-munge-key -f; }
        mkdir -p /run/munge && chown munge:munge /run/munge
        # The pid file goes where the munge user may write (/run/munge), not into the root-owned state dir.
        local munge_pid=/run/munge/rev88-munged.pid
        rm -f "$munge_pid"
        runuser -u munge -- /usr/sbin/munged --pid-file="$munge_pid" \
            || /usr/sbin/munged --force --pid-file="$munge_pid"
        for _ in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && [ -s "$munge_pid" ] && break; sleep 0.1; done
        [ -s "$munge_pid" ] || { echo "munged did not start (no $munge_pid)" >&2; return 1; }
        SLURM_PIDS+=("$(cat "$munge_pid")")
    fi
    /usr/sbin/slurmctld -f "$SLURM_CONF"
    for _ in $(seq 1 50); do [ -s "$REV88_SLURM_DIR/slurmctld.pid" ] && break; sleep 0.1; done
    SLURM_PIDS+=("$(cat "$REV88_SLURM_DIR/slurmctld.pid")")
    /usr/sbin/slurmd -f "$SLURM_CONF"
    for _ in $(seq 1 50); do [ -s "$REV88_SLURM_DIR/slurmd.pid" ] && break; sleep 0.1; done
    SLURM_PIDS+=("$(cat "$REV88_SLURM_DIR/slurmd.pid")")
    for _ in $(seq 1 60); do
        sinfo --noheader --states=idle 2>/dev/null | grep -q idle && { sinfo; return 0; }
        sleep 0.5
    done
    tail -20 "$REV88_SLURM_DIR/log/slurmctld.log" "$REV88_SLURM_DIR/log/slurmd.log" >&2
    echo "slurm: the node did not become idle within 30 s" >&2
    return 1
}

slurm_stop() {
    local pid
    for pid in "${SLURM_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    SLURM_PIDS=()
}
