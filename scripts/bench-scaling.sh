#!/usr/bin/env bash
# Prints the solver's scaling table for docs/performance.md: one cold exact
# decision (`fairmatch bench solver`) per size, on the seeded random
# instances, each in its own process (so its peak RSS is its own), with the
# shortest-first sort of the same jobs timed beside it as the baseline.
#
#   scripts/bench-scaling.sh [--timeout S] [--flavors F] [--solver fast|classes]
#                            [--jobs "N ..."] [--machines "M ..."]
#
# A size that runs past the timeout (default 30 s) is shown as "> S s".
# Takes up to (sizes x timeout); about 10 minutes with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

timeout_s=30
flavors=2
solver=fast
jobs_list="100 1000 2000 5000 10000 20000"
machines_list="1 10 16 100 1000 2000"
while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) timeout_s=$2; shift 2 ;;
        --flavors) flavors=$2; shift 2 ;;
        --solver) solver=$2; shift 2 ;;
        --jobs) jobs_list=$2; shift 2 ;;
        --machines) machines_list=$2; shift 2 ;;
        *) echo "usage: $0 [--timeout S] [--flavors F] [--solver fast|classes] [--jobs \"N ...\"] [--machines \"M ...\"]" >&2; exit 2 ;;
    esac
done

cargo build --release --locked --quiet
bin=target/release/fairmatch

printf '| jobs \\ machines |'
for m in $machines_list; do printf ' %s |' "$m"; done
printf '\n|---|'
for _ in $machines_list; do printf -- '---|'; done
printf '\n'
for n in $jobs_list; do
    printf '| %s |' "$n"
    for m in $machines_list; do
        f=$flavors
        [ "$m" -lt "$f" ] && f=$m
        if out=$(timeout "$timeout_s" "$bin" bench solver --jobs "$n" --machines "$m" \
            --flavors "$f" --solver "$solver" --json 2>/dev/null); then
            python3 -c '
import json, sys
r = json.loads(sys.argv[1])
note = " (fell back)" if r.get("fell_back") else ""
print(" %.4f s, %.0f MB, %.0fx%s |" % (r["seconds"], r["peak_rss_mb"] or 0, r["ratio"], note), end="")
' "$out"
        else
            printf ' > %s s |' "$timeout_s"
        fi
    done
    printf '\n'
done
echo
echo "Each cell: solve time, peak RSS of the process, and the time over the shortest-first sort"
echo "of the same jobs. $flavors flavors (one per machine where there are fewer machines); solver $solver."
