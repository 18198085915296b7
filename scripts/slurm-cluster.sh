#!/usr/bin/env bash
# Starts or stops a real Slurm cluster on this machine: one slurmctld and
# several slurmd nodes (CPU nodes c1.., GPU nodes g1.. with fake GPUs), all
# on loopback, with every file under DIR.
#
#   slurm-cluster.sh start DIR [options]   prints nothing; SLURM_CONF=DIR/slurm.conf
#   slurm-cluster.sh stop DIR             kills the daemons by pid
#   slurm-cluster.sh restart-ctld DIR [--sched TYPE] [--kill]
#                       stops slurmctld (SIGTERM, or SIGKILL: a crash),
#                       optionally switches its SchedulerType, and starts it
#                       again on the saved state (a slurmctld already dead
#                       is only started)
#   slurm-cluster.sh kill-node DIR NODE   SIGKILLs NODE's slurmd and its job
#                       steps (a node that dies)
#   slurm-cluster.sh start-node DIR NODE  starts NODE's slurmd again
#
# Options for start:
#   --sched TYPE        SchedulerType (default sched/fairmatch)
#   --plugin-dir D      directory holding sched_fairmatch.so (prepended to
#                       Debian's plugin directory); when it holds
#                       spank_fairmatch.so too, DIR/plugstack.conf loads it,
#                       so sbatch, salloc and srun take --fm-runtime
#   --cpu-nodes N --cpus C     CPU nodes and CPUs per CPU node (2, 4)
#   --gpu-nodes N --gpus G     GPU nodes and GPUs per GPU node (2, 2)
#   --gpu-node-cpus C          CPUs per GPU node (default: G)
#   --gpu-types T1,T2,...      GPU node gi has GPUs of type T((i-1) mod n)
#                              (Gres=gpu:T:G, gres.conf Type=T) and the
#                              feature T; default untyped. A type A+B gives
#                              the node G/2 GPUs of each (MIG profiles, or
#                              two kinds of card), the first the rest.
#   --multiple-files           each fake GPU is two files, named with
#                              gres.conf's MultipleFiles= (as a MIG slice
#                              is its GPU's device and its capability)
#   --shards S                 each GPU of a GPU node has S shards
#                              (Gres=...,shard:S*G, gres.conf Name=shard
#                              Count=S*G, spread evenly over the GPUs)
#   --sched-params P    SchedulerParameters (default empty)
#   --fairmatch-conf F  copied to DIR/fairmatch.conf
#   --licenses L        Licenses= (e.g. lic:1), cluster-local licenses
#   --memory MB         every node has MB of memory, and Slurm allocates
#                       memory (CR_Core_Memory, 10 MB per CPU by default)
#   --slurmd-timeout S  SlurmdTimeout (default 30): a dead node is DOWN
#                       after about S seconds
#   --cred-expire S     AuthInfo=cred_expire=S: a requeued job waits S
#                       seconds before it may start again (Slurm: 120)
#   --conf-line L       appends L (Key=Value) to slurm.conf; repeatable
#   --accounting        real accounting: MariaDB (Debian's mariadbd, on a
#                       data dir under DIR and a loopback port) and
#                       slurmdbd, started before slurmctld; limits and QOS
#                       enforced; the cluster registered with sacctmgr
#
# CPU node ci has the feature "cpui", so tests can use --constraint.
#
# FAIRMATCH_SLURM_PREFIX=/opt/slurm-26.05.3 runs the daemons and commands
# installed there (bin, sbin, lib/slurm) instead of Debian's.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${FAIRMATCH_SLURM_PREFIX:-}" ]; then
    export PATH="$FAIRMATCH_SLURM_PREFIX/sbin:$FAIRMATCH_SLURM_PREFIX/bin:$PATH"
fi
cmd=${1:?usage: slurm-cluster.sh start|stop DIR [options]}
dir=${2:?usage: slurm-cluster.sh start|stop DIR [options]}
shift 2

stop() {
    local pids=()
    for f in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid "$dir"/slurmdbd.pid "$dir"/mariadbd.pid; do
        [ -f "$f" ] && pids+=("$(cat "$f")")
    done
    [ ${#pids[@]} -eq 0 ] && return 0
    kill "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 50); do
        local alive=0
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        sleep 0.1
    done
    kill -9 "${pids[@]}" 2>/dev/null || true
    # This cluster's job steps and job scripts: slurmstepd outlives its
    # slurmd and keeps retrying a controller that is gone, and a job's
    # children outlive both. All of them carry this cluster's SLURM_CONF.
    for p in $(pgrep -x 'slurmstepd|bash|sleep|sh' || true); do
        [ "$p" = $$ ] && continue
        if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SLURM_CONF=$dir/slurm.conf"; then
            kill -9 "$p" 2>/dev/null || true
        fi
    done
    rm -f "$dir"/slurmd-*.pid "$dir"/slurmctld.pid "$dir"/slurmdbd.pid "$dir"/mariadbd.pid
}

if [ "$cmd" = stop ]; then
    stop
    exit 0
fi
# The job scripts (and their sleeps) running on node $1 of this cluster.
node_jobs() {
    local d p
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        [ "$p" = $$ ] && continue
        local env
        env=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" || true)
        if grep -qxF "SLURMD_NODENAME=$1" <<<"$env" &&
            grep -qxF "SLURM_CONF=$dir/slurm.conf" <<<"$env"; then
            echo "$p"
        fi
    done
}
if [ "$cmd" = kill-node ]; then
    node=${1:?usage: slurm-cluster.sh kill-node DIR NODE}
    kill -9 "$(cat "$dir/slurmd-$node.pid")" 2>/dev/null || true
    rm -f "$dir/slurmd-$node.pid"
    # A dead machine takes its jobs with it: kill each job script's
    # slurmstepd (its parent) and the script.
    for p in $(node_jobs "$node"); do
        parent=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null || true)
        if [ -n "$parent" ] && [ "$(cat "/proc/$parent/comm" 2>/dev/null)" = slurmstepd ]; then
            kill -9 "$parent" 2>/dev/null || true
        fi
        kill -9 "$p" 2>/dev/null || true
    done
    exit 0
fi
if [ "$cmd" = start-node ]; then
    node=${1:?usage: slurm-cluster.sh start-node DIR NODE}
    SLURM_CONF=$dir/slurm.conf slurmd -f "$dir/slurm.conf" -N "$node"
    exit 0
fi
if [ "$cmd" = restart-ctld ]; then
    signal=TERM
    while [ $# -gt 0 ]; do
        case $1 in
            --sched) sed -i "s|^SchedulerType=.*|SchedulerType=$2|" "$dir/slurm.conf"; shift ;;
            --kill) signal=KILL ;;
            *) echo "unknown option $1" >&2; exit 2 ;;
        esac
        shift
    done
    pid=$(cat "$dir/slurmctld.pid")
    kill -s "$signal" "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    slurmctld -f "$dir/slurm.conf"
    export SLURM_CONF=$dir/slurm.conf
    for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q 'is UP' && exit 0; sleep 0.1; done
    echo "slurmctld in $dir did not come back; see $dir/slurmctld.log" >&2
    exit 1
fi
[ "$cmd" = start ] || { echo "usage: slurm-cluster.sh start|stop DIR [options]" >&2; exit 2; }

sched=sched/fairmatch plugin_dir="" cpu_nodes=2 cpus=4 gpu_nodes=2 gpus=2 gpu_node_cpus=""
sched_params="" fairmatch_conf="" licenses="" memory="" accounting=""
slurmd_timeout="" cred_expire="" conf_lines=() gpu_types="" multiple_files="" shards=""
while [ $# -gt 0 ]; do
    case $1 in
        --sched) sched=$2 ;;
        --plugin-dir) plugin_dir=$2 ;;
        --cpu-nodes) cpu_nodes=$2 ;;
        --cpus) cpus=$2 ;;
        --gpu-nodes) gpu_nodes=$2 ;;
        --gpus) gpus=$2 ;;
        --gpu-node-cpus) gpu_node_cpus=$2 ;;
        --gpu-types) gpu_types=$2 ;;
        --shards) shards=$2 ;;
        --sched-params) sched_params=$2 ;;
        --fairmatch-conf) fairmatch_conf=$2 ;;
        --licenses) licenses=$2 ;;
        --memory) memory=$2 ;;
        --slurmd-timeout) slurmd_timeout=$2 ;;
        --cred-expire) cred_expire=$2 ;;
        --conf-line) conf_lines+=("$2") ;;
        --accounting) accounting=1; shift; continue ;;
        --multiple-files) multiple_files=1; shift; continue ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
gpu_node_cpus=${gpu_node_cpus:-$gpus}

mkdir -p "$dir/state" "$dir/dev"
dir=$(cd "$dir" && pwd)

# MariaDB and slurmdbd for --accounting, on ports of this cluster's block.
start_accounting() {
    local db=$dir/db db_port=$((ctld_port + 90)) dbd_port=$((ctld_port + 91))
    mkdir -p "$db"
    mariadb-install-db --user=root --datadir="$db/data" --skip-test-db \
        >"$db/install.log" 2>&1 || { cat "$db/install.log" >&2; exit 1; }
    mariadbd --user=root --datadir="$db/data" --socket="$db/mysql.sock" \
        --port="$db_port" --bind-address=127.0.0.1 --pid-file="$dir/mariadbd.pid" \
        --log-error="$db/error.log" --skip-log-bin --innodb-buffer-pool-size=32M \
        </dev/null >/dev/null 2>&1 &
    local sql=(mariadb --socket="$db/mysql.sock" -uroot)
    for _ in $(seq 150); do "${sql[@]}" -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
    "${sql[@]}" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'fairmatch';
        GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';" ||
        { echo "MariaDB did not come up; see $db/error.log" >&2; exit 1; }
    cat >"$dir/slurmdbd.conf" <<CONF
AuthType=auth/none
DbdHost=localhost
DbdPort=$dbd_port
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=fairmatch
StorageLoc=slurm_acct_db
LogFile=$dir/slurmdbd.log
PidFile=$dir/slurmdbd.pid
DebugLevel=info
CONF
    chmod 600 "$dir/slurmdbd.conf"
    sed -i -e "s|^AccountingStorageType=.*|AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\nAccountingStoragePort=$dbd_port\nAccountingStorageEnforce=associations,limits,qos,safe\nAccountingStorageTRES=gres/gpu|" \
        "$dir/slurm.conf"
    SLURM_CONF=$dir/slurm.conf slurmdbd
    for _ in $(seq 150); do
        SLURM_CONF=$dir/slurm.conf sacctmgr -i -n show cluster >/dev/null 2>&1 && break
        sleep 0.2
    done
    SLURM_CONF=$dir/slurm.conf sacctmgr -i add cluster fairmatch >/dev/null ||
        { echo "slurmdbd did not come up; see $dir/slurmdbd.log" >&2; exit 1; }
}
debian_plugins=/usr/lib/x86_64-linux-gnu/slurm-wlm
[ -n "${FAIRMATCH_SLURM_PREFIX:-}" ] && debian_plugins=$FAIRMATCH_SLURM_PREFIX/lib/slurm
plugins=$debian_plugins
[ -n "$plugin_dir" ] && plugins="$(cd "$plugin_dir" && pwd):$debian_plugins"

# A port block of our own: the controller, then one port per node.
# Below the kernel's ephemeral range (32768 up), so no client connection of
# another test holds one of these ports; and none of them listening yet.
port_busy() { grep -qi ":$(printf '%04X' "$1") " /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
while :; do
    base=$((10000 + RANDOM % 20000))
    busy=0
    for p in $(seq "$base" $((base + 100))); do port_busy "$p" && { busy=1; break; }; done
    [ $busy = 0 ] && break
done
ctld_port=$base
nodes="" gres="" cpu_list="" gpu_list="" port=$((base + 1))
for i in $(seq "$cpu_nodes"); do
    nodes+="NodeName=c$i NodeHostname=localhost Port=$port CPUs=$cpus Features=cpu$i State=UNKNOWN"$'\n'
    cpu_list+="${cpu_list:+,}c$i"
    port=$((port + 1))
done
IFS=, read -r -a types <<< "$gpu_types"
for i in $(seq "$gpu_nodes"); do
    type="" features=""
    if [ ${#types[@]} -gt 0 ]; then
        type=${types[$(( (i - 1) % ${#types[@]} ))]}
        features=" Features=$type"
    fi
    # One type, or several joined by '+': the node's GPUs split evenly.
    IFS=+ read -r -a parts <<< "$type"
    [ ${#parts[@]} -gt 0 ] || parts=("")
    node_gres="" k=0
    for p in $(seq 0 $((${#parts[@]} - 1))); do
        t=${parts[$p]}
        count=$((gpus / ${#parts[@]}))
        [ "$p" = 0 ] && count=$((count + gpus % ${#parts[@]}))
        [ "$count" -gt 0 ] || continue
        node_gres+="${node_gres:+,}gpu:${t:+$t:}$count"
        for _ in $(seq "$count"); do
            : > "$dir/dev/gpu-g$i-$k"
            files="File=$dir/dev/gpu-g$i-$k"
            if [ -n "$multiple_files" ]; then
                : > "$dir/dev/cap-g$i-$k"
                files="MultipleFiles=$dir/dev/gpu-g$i-$k,$dir/dev/cap-g$i-$k"
            fi
            gres+="NodeName=g$i Name=gpu${t:+ Type=$t} $files"$'\n'
            k=$((k + 1))
        done
    done
    if [ -n "$shards" ]; then
        node_gres+=",shard:$((shards * gpus))"
        gres+="NodeName=g$i Name=shard Count=$((shards * gpus))"$'\n'
    fi
    [ -n "$type" ] && features=" Features=${type//+/,}"
    nodes+="NodeName=g$i NodeHostname=localhost Port=$port CPUs=$gpu_node_cpus Gres=$node_gres$features State=UNKNOWN"$'\n'
    gpu_list+="${gpu_list:+,}g$i"
    port=$((port + 1))
done
nodes+="PartitionName=cpu Nodes=$cpu_list Default=YES MaxTime=INFINITE State=UP"$'\n'
nodes+="PartitionName=gpu Nodes=$gpu_list MaxTime=INFINITE State=UP"

render() {
    awk -v dir="$dir" -v port="$ctld_port" -v sched="$sched" -v plugins="$plugins" \
        -v params="$sched_params" -v nodes="$nodes" -v gres="$gres" '
        { gsub(/@DIR@/, dir); gsub(/@CTLD_PORT@/, port); gsub(/@SCHED@/, sched);
          gsub(/@PLUGIN_DIR@/, plugins); gsub(/@SCHED_PARAMS@/, params) }
        /@NODES@/ { print nodes; next }
        /@GRES@/ { printf "%s", gres; next }
        { print }' "$1"
}
render "$here/slurm-conf/slurm.conf" > "$dir/slurm.conf"
[ -n "$licenses" ] && echo "Licenses=$licenses" >> "$dir/slurm.conf"
if [ -n "$memory" ]; then
    sed -i -e "s/^\(NodeName=.*\) State=UNKNOWN/\1 RealMemory=$memory State=UNKNOWN/" \
        -e 's/^SelectTypeParameters=.*/SelectTypeParameters=CR_Core_Memory/' "$dir/slurm.conf"
    echo "DefMemPerCPU=10" >> "$dir/slurm.conf"
fi
[ -n "$slurmd_timeout" ] && sed -i "s/^SlurmdTimeout=.*/SlurmdTimeout=$slurmd_timeout/" "$dir/slurm.conf"
[ -n "$cred_expire" ] && echo "AuthInfo=cred_expire=$cred_expire" >> "$dir/slurm.conf"
if [ -n "$plugin_dir" ] && [ -f "$plugin_dir/spank_fairmatch.so" ]; then
    echo "optional $(cd "$plugin_dir" && pwd)/spank_fairmatch.so" > "$dir/plugstack.conf"
    echo "PlugStackConfig=$dir/plugstack.conf" >> "$dir/slurm.conf"
fi
for line in "${conf_lines[@]}"; do echo "$line" >> "$dir/slurm.conf"; done
[ -z "$sched_params" ] && sed -i '/^SchedulerParameters=$/d' "$dir/slurm.conf"
[ -n "$shards" ] && sed -i 's/^GresTypes=gpu$/GresTypes=gpu,shard/' "$dir/slurm.conf"
render "$here/slurm-conf/gres.conf" > "$dir/gres.conf"
if [ -n "$accounting" ]; then
    start_accounting
fi
if [ -n "$fairmatch_conf" ]; then cp "$fairmatch_conf" "$dir/fairmatch.conf"; fi
export SLURM_CONF=$dir/slurm.conf

slurmctld -f "$dir/slurm.conf" -i
for n in $(echo "$cpu_list,$gpu_list" | tr , ' '); do
    mkdir -p "$dir/spool-$n"
    slurmd -f "$dir/slurm.conf" -N "$n"
done

# Ready when every node is idle.
total=$((cpu_nodes + gpu_nodes))
for _ in $(seq 150); do
    idle=$( (sinfo -h -N -o '%N %t' 2>/dev/null || true) | awk '$2 == "idle"' | sort -u | wc -l)
    [ "$idle" -ge "$total" ] && exit 0
    # A controller that died at start-up (a plugin it cannot load, say).
    if [ -f "$dir/slurmctld.pid" ] && ! kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
        break
    fi
    sleep 0.2
done
echo "cluster in $dir did not come up; see $dir/slurmctld.log" >&2
sinfo -N >&2 || true
tail -20 "$dir/slurmctld.log" >&2 || true
stop
exit 1
