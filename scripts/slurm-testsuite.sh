#!/usr/bin/env bash
# Runs a selection of SchedMD's own Slurm test suite (testsuite/python, the
# "ATF", in its auto-config mode) on a throwaway single-machine cluster,
# once under sched/backfill (or its outcome from an earlier run of the same
# release and selection, kept in the cache) and once under sched/fairmatch,
# with the same slurm.conf otherwise, and prints every test case whose
# outcome differs.
# It exits 1 when a case that passes under backfill does not pass under
# fairmatch.
#
#   scripts/slurm-testsuite.sh [options] [MODULE...]
#
#   --suite DIR       the suite's testsuite/python directory. Default: the
#                     one in the Slurm 24.11 source archive (the suite left
#                     the release archives in 25.11), unpacked under
#                     $FAIRMATCH_CACHE once. Nothing is fetched.
#   --series X.Y      the Slurm release to run (default 26.05): its daemons
#                     from scripts/slurm-install.sh, the plugin built for it.
#   --quick           only the modules marked quick in the selection
#   --only SCHED      run under one scheduler (backfill or fairmatch) only
#   --fresh-baseline  run backfill even when its outcome for this release,
#                     suite and selection is in the cache
#   --out DIR         where results, logs and the cluster live
#                     (default /tmp/fairmatch-testsuite)
#
# MODULEs are test files (test_146_1.py) or test ids; by default the
# selection in scripts/slurm-testsuite.modules. What the suite needs and
# this script provides: Slurm built with json-c (serializer/json, for the
# commands' --json), `expect`, a venv with pytest and the suite's Python
# modules (cached in $FAIRMATCH_CACHE/testsuite-venv), and, when run as
# root, a stand-in for sudo (the suite runs commands as other users with
# "sudo -u"), and MariaDB for the tests that need accounting (started on
# a loopback port for the run). It needs root for the daemons.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
cache=${FAIRMATCH_CACHE:-/var/cache/fairmatch}
out=/tmp/fairmatch-testsuite
series=26.05
suite="" quick=0 only="" fresh=0
modules=()
log() { echo "slurm-testsuite: $*" >&2; }
die() { log "$*"; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --suite) suite=${2:?--suite needs a directory}; shift 2 ;;
    --series) series=${2:?--series needs X.Y}; shift 2 ;;
    --quick) quick=1; shift ;;
    --fresh-baseline) fresh=1; shift ;;
    --only) only=${2:?--only needs backfill or fairmatch}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) modules+=("$1"); shift ;;
    esac
done
[ "$(id -u)" = 0 ] || die "needs root: it starts slurmctld and slurmd"
case $only in "" | backfill | fairmatch) ;; *) die "--only takes backfill or fairmatch" ;; esac

# The suite: a path given, or the 24.11 archive's, unpacked once.
if [ -z "$suite" ]; then
    tarballs=${FAIRMATCH_SLURM_TARBALLS:-}
    for d in /work/shared/slurm-src "$repo/../shared/slurm-src"; do
        [ -z "$tarballs" ] && [ -d "$d" ] && tarballs=$d
    done
    archive=$(ls "${tarballs:-/nonexistent}"/slurm-24.11.*.tar.xz 2>/dev/null | sort -V | tail -1)
    [ -n "$archive" ] || die "no suite: give --suite DIR, or set FAIRMATCH_SLURM_TARBALLS to a folder with slurm-24.11.*.tar.xz"
    suite=$cache/testsuite-$(basename "$archive" .tar.xz)/testsuite/python
    if [ ! -f "$suite/conftest.py" ]; then
        log "unpacking the suite from $archive"
        mkdir -p "$cache/testsuite-$(basename "$archive" .tar.xz)"
        tar -C "$cache/testsuite-$(basename "$archive" .tar.xz)" --strip-components=1 \
            -xJf "$archive" --wildcards '*/testsuite/python/*'
    fi
fi
suite=$(cd "$suite" && pwd)
[ -f "$suite/conftest.py" ] && [ -f "$suite/lib/atf.py" ] ||
    die "$suite is not the suite's testsuite/python directory (no conftest.py, lib/atf.py)"

selected=() backfill_only=()
while read -r module tag _; do
    case $module in '' | '#'*) continue ;; esac
    if [ "$module" = backfill-only ]; then
        backfill_only+=(--backfill-only "$tag")
        continue
    fi
    [ "$tag" = backfill-only ] && backfill_only+=(--backfill-only "${module%.py}")
    [ $quick = 1 ] && [ "$tag" != quick ] && continue
    selected+=("$module")
done <scripts/slurm-testsuite.modules
[ ${#modules[@]} -eq 0 ] && modules=("${selected[@]}")
paths=()
for m in "${modules[@]}"; do
    file=${m%%::*}
    [ -f "$suite/tests/$file" ] || { log "skipping $file: not in this suite"; continue; }
    paths+=("tests/$m")
done
[ ${#paths[@]} -gt 0 ] || die "no modules to run"

# What the suite needs on the machine.
command -v expect >/dev/null || {
    log "installing expect"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q expect >&2
}
venv=$cache/testsuite-venv
if ! "$venv/bin/python" -c "import pytest, pexpect, requests, jsondiff, jsonpatch, yaml" 2>/dev/null; then
    log "creating $venv (pytest and the suite's modules)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q pytest pexpect requests jsondiff jsonpatch pyyaml >&2
fi
prefix=$(scripts/slurm-install.sh "$series")
[ -f "$prefix/lib/slurm/serializer_json.so" ] ||
    die "$prefix has no serializer/json: Slurm must be built with json-c"
SLURM_SRC_DIR=$(scripts/slurm-src.sh "$series") scripts/build-plugin.sh "$series" >&2
plugin_dir=$repo/target/plugin/$series
[ -f "$plugin_dir/sched_fairmatch.so" ] || die "no plugin in $plugin_dir"

# The throwaway installation the suite drives: the release's programs,
# and configuration directories of its own.
rm -rf "$out/root" "$out/bin"
mkdir -p "$out/root" "$out/bin" "$out/results"
for d in bin sbin lib include share; do ln -s "$prefix/$d" "$out/root/$d"; done
# The stand-in for sudo: root may be anyone, and keeps the environment
# (SLURM_CONF, PATH) the suite runs in.
cat >"$out/bin/sudo" <<'EOF'
#!/bin/bash
user=root
while [ $# -gt 0 ]; do
    case $1 in
    -ln | -l) echo "    (ALL : ALL) NOPASSWD: ALL"; exit 0 ;;
    -u) user=$2; shift 2 ;;
    -u*) user=${1#-u}; shift ;;
    --preserve-env* | -E | -n | -H) shift ;;
    --) shift; break ;;
    *) break ;;
    esac
done
# A login shell would reset PATH to the host's Slurm commands.
[ "${1:-}" = /bin/bash ] && [ "${2:-}" = -lc ] && set -- /bin/bash -c "${@:3}"
[ "$user" = root ] && exec "$@"
exec runuser -u "$user" -- "$@"
EOF
chmod +x "$out/bin/sudo"

write_config() {
    local sched=$1 etc=$out/root/etc.orig
    rm -rf "$etc" "$out/root/etc" "$out/state" "$out/log" "$out/spool"
    mkdir -p "$etc" "$out/root/etc" "$out/state" "$out/log" "$out/spool"
    cat >"$etc/slurm.conf" <<EOF
ClusterName=testsuite
SlurmctldHost=localhost
SlurmctldPort=7817
AccountingStorageHost=localhost
AccountingStoragePort=7881
SlurmUser=root
SlurmdUser=root
SlurmctldPidFile=$out/spool/slurmctld.pid
SlurmdPidFile=$out/spool/slurmd.%n.pid
SlurmctldLogFile=$out/log/slurmctld.log
SlurmdLogFile=$out/log/slurmd.%n.log
SlurmdSpoolDir=$out/spool/slurmd.%n
StateSaveLocation=$out/state
TmpFS=$out/spool/tmp.%n
SchedulerType=sched/$sched
PluginDir=$prefix/lib/slurm:$plugin_dir
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldDebug=info
SlurmdDebug=info
MinJobAge=300
KillWait=2
InactiveLimit=0
# Nodes the suite adds take the next ports: 7819, 7820 and on.
NodeName=node0 NodeHostname=localhost Port=7818 CPUs=2 State=UNKNOWN
PartitionName=primary Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    # The suite starts slurmdbd itself where a test needs accounting.
    cat >"$etc/slurmdbd.conf" <<EOF
AuthType=auth/none
DbdHost=localhost
DbdPort=7881
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=7880
StorageUser=slurm
StoragePass=testsuite
StorageLoc=slurm_acct_db
PidFile=$out/spool/slurmdbd.pid
LogFile=$out/log/slurmdbd.log
EOF
    chmod 600 "$etc/slurmdbd.conf"
    cp -p "$etc"/* "$out/root/etc/"
    cat >"$out/testsuite.conf" <<EOF
SlurmSourceDir=$(dirname "$(dirname "$suite")")
SlurmBuildDir=$(dirname "$(dirname "$suite")")
SlurmInstallDir=$out/root
SlurmConfigDir=$out/root/etc
EOF
}

# MariaDB for the tests that need accounting, on a loopback port, started
# afresh for each scheduler: the suite backs up and restores its database
# around each module, but what a failed teardown leaves (an account, say)
# would otherwise fail the next scheduler's setups.
start_mariadb() {
    local db=$out/db
    pkill -f "mariadbd --user=root --datadir=$db/data" 2>/dev/null && sleep 1
    rm -rf "$db"
    mkdir -p "$db"
    mariadb-install-db --user=root --datadir="$db/data" --skip-test-db \
        >"$db/install.log" 2>&1 || die "mariadb-install-db failed; see $db/install.log"
    mariadbd --user=root --datadir="$db/data" --socket="$db/mysql.sock" \
        --port=7880 --bind-address=127.0.0.1 --pid-file="$db/mariadbd.pid" \
        --log-error="$db/error.log" --skip-log-bin --innodb-buffer-pool-size=32M \
        </dev/null >/dev/null 2>&1 &
    local sql=(mariadb --socket="$db/mysql.sock" -uroot)
    for _ in $(seq 150); do "${sql[@]}" -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
    "${sql[@]}" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'testsuite';
        GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';" >/dev/null ||
        die "MariaDB did not come up; see $db/error.log"
}
stop_mariadb() {
    local pid
    pid=$(cat "$out/db/mariadbd.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    return 0
}
command -v mariadbd >/dev/null || {
    log "installing MariaDB (accounting for the tests that need it)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server mariadb-client >&2
}
trap stop_mariadb EXIT

run_under() {
    local sched=$1
    stop_mariadb
    start_mariadb
    write_config "$sched"
    log "running ${#paths[@]} modules under sched/$sched (log: $out/results/$sched.log)"
    (cd "$suite" &&
        env PATH="$out/bin:$out/root/bin:$out/root/sbin:$PATH" \
            SLURM_CONF="$out/root/etc/slurm.conf" \
            SLURM_TESTSUITE_CONF="$out/testsuite.conf" \
            "$venv/bin/pytest" --auto-config -p no:cacheprovider --continue-on-collection-errors -o junit_family=xunit1 \
            --junitxml="$out/results/$sched.xml" -q -rN "${paths[@]}") \
        >"$out/results/$sched.log" 2>&1 || true
    # The suite stops what it started; this catches what a failed
    # teardown left, and nothing of any other cluster.
    pkill -f "$out/root/sbin/slurm" 2>/dev/null || true
    pkill -f "$out/spool/" 2>/dev/null || true
    tail -1 "$out/results/$sched.log" >&2
}

# Backfill's outcome depends on the release, the suite, the modules and
# this script's cluster, never on fairmatch: it is kept in the cache under
# a key of all four, and a later run compares with it instead of running
# backfill again (--fresh-baseline runs it anyway).
key=$( (echo "$series ${paths[*]}"; cat "$repo/scripts/slurm-testsuite.sh"; sha256sum "$prefix/sbin/slurmctld" \
    "$suite/conftest.py" "$suite/lib/atf.py") | sha256sum | cut -c1-16)
baseline=$cache/testsuite-baseline/$key.xml
scheds=(backfill fairmatch)
[ -n "$only" ] && scheds=("$only")
for sched in "${scheds[@]}"; do
    if [ "$sched" = backfill ] && [ -z "$only" ] && [ $fresh = 0 ] && [ -s "$baseline" ]; then
        log "backfill's outcome from the cache ($baseline)"
        cp "$baseline" "$out/results/backfill.xml"
        continue
    fi
    run_under "$sched"
    # Kept only when some case passed: a run whose cluster never came up
    # would excuse every case after it.
    if [ "$sched" = backfill ] && grep -q ' passed' <(tail -1 "$out/results/backfill.log"); then
        mkdir -p "$(dirname "$baseline")"
        cp "$out/results/backfill.xml" "$baseline.new" && mv -f "$baseline.new" "$baseline"
    fi
done
[ -n "$only" ] && exit 0
# The comparison's status is the script's; the trap stops MariaDB.
python3 "$repo/scripts/slurm-testsuite-diff.py" "${backfill_only[@]}" \
    "$out/results/backfill.xml" "$out/results/fairmatch.xml"
