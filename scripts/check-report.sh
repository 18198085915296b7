#!/usr/bin/env bash
# Opens the HTML report of `fairmatch compare --report` in a real headless
# browser (Debian's Chromium, installed if missing) and checks that it
# renders: its tables, its charts (inline SVG with drawn text), a painted
# page, and no script error in the browser's console. It first checks a
# broken page the same way and expects that check to fail, so the checks
# can fail.
#
#   scripts/check-report.sh            the bundled workload's report
#   scripts/check-report.sh DIR        the report already in DIR
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v chromium >/dev/null; then
    as_root apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends chromium >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

browser() {
    timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --enable-logging=stderr --v=0 --virtual-time-budget=5000 "$@"
}

# check PAGE: 0 when it renders whole, else 1 with the reasons.
check() {
    local page=$1 out=$work/check
    rm -rf "$out"
    mkdir -p "$out"
    browser --dump-dom "file://$page" >"$out/dom.html" 2>"$out/console.log" || true
    browser --screenshot="$out/page.png" --window-size=1000,3000 "file://$page" \
        >/dev/null 2>>"$out/console.log" || true
    local tables svgs drawn size bad=0
    tables=$(grep -o '<table' "$out/dom.html" | wc -l)
    svgs=$(grep -o '<svg' "$out/dom.html" | wc -l)
    drawn=$(grep -o '<text' "$out/dom.html" | wc -l)
    size=$(stat -c %s "$out/page.png" 2>/dev/null || echo 0)
    echo "  $tables tables, $svgs charts, $drawn text elements, a ${size}-byte screenshot"
    [ "$tables" -ge 3 ] || { echo "  fewer than 3 tables"; bad=1; }
    [ "$svgs" -ge 5 ] || { echo "  fewer than 5 charts"; bad=1; }
    [ "$drawn" -ge 100 ] || { echo "  the charts hold almost no text"; bad=1; }
    [ "$size" -ge 50000 ] || { echo "  the screenshot is blank or missing"; bad=1; }
    if grep -E 'Uncaught|CONSOLE.*[Ee]rror' "$out/console.log"; then
        echo "  script errors in the console"
        bad=1
    fi
    return $bad
}

echo "a broken page (must fail):"
printf '<!DOCTYPE html><html><body><table></table><svg></svg>\n<script>undefined_call();</script></body></html>\n' \
    >"$work/broken.html"
if check "$work/broken.html"; then
    echo "error: the checks passed a broken page" >&2
    exit 1
fi

if [ $# -ge 1 ]; then
    report=$1
else
    report=$work/report
    cargo run --locked -q -- compare --report "$report" >/dev/null
fi
echo "the report ($report/index.html):"
check "$report/index.html"
echo "the report renders"
