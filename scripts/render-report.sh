#!/usr/bin/env bash
# Render a posfuse HTML report in headless Chromium and check that it is self-contained.
#
#   scripts/render-report.sh REPORT.html [SCREENSHOT.png [WIDTHxHEIGHT]]
#
# Checks (exit 1 on failure, 2 on usage, 77 when chromium is missing):
#  1. the HTML references nothing outside itself (no http(s):// or //host src/href/url()/@import);
#  2. loaded with every host name unresolvable (--host-resolver-rules) and a network log,
#     the page makes no http(s) request;
#  3. no JavaScript error or console.error (an inline probe, injected into a temporary copy
#     only, records them into the DOM, which --dump-dom prints; Chromium's console log on
#     stderr is checked too);
#  4. the plots are present: error CDF, trajectory, error-over-time, NEES and the metric table.
# With SCREENSHOT, also writes a PNG of the original report (default 1200x2400).
set -euo pipefail
report=${1:?usage: render-report.sh REPORT.html [SCREENSHOT.png [WxH]]}
shot=${2:-}
size=${3:-1200,2400}
size=${size/x/,}
[ -f "$report" ] || { echo "no such report: $report" >&2; exit 2; }
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chrome" ] || { echo "chromium not found: skipped" >&2; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abs=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
fail=0

# 1. Static check for external references.
if grep -Eio '(src|href|xlink:href|action|poster|data)[[:space:]]*=[[:space:]]*["'"'"']?[[:space:]]*(https?:)?//[^"'"'"' >]*|url\([[:space:]]*["'"'"']?(https?:)?//[^)]*|@import[^;]*' "$report" > "$tmp/ext.txt"; then
    echo "FAIL external references in $report:" >&2; sed 's/^/  /' "$tmp/ext.txt" >&2; fail=1
fi

# 3. Probe copy: error recorder injected right after <head>.
probe='<script>(function(){var E=[];window.addEventListener("error",function(e){E.push("error: "+(e.message||e.type)+" "+(e.filename||(e.target&&(e.target.src||e.target.href))||""))},true);var c=console.error;console.error=function(){E.push("console.error: "+Array.prototype.join.call(arguments," "));return c.apply(console,arguments)};window.addEventListener("load",function(){var p=document.createElement("pre");p.id="posfuse-probe";p.textContent="PROBE errors="+E.length+" ["+E.join(" | ")+"] plots="+document.querySelectorAll("svg.plot").length;document.body.appendChild(p)})})();</script>'
python3 - "$abs" "$tmp/probe.html" "$probe" <<'PY'
import sys
src, dst, probe = sys.argv[1], sys.argv[2], sys.argv[3]
html = open(src, encoding="utf-8").read()
i = html.lower().find("<head>")
html = html[:i + 6] + probe + html[i + 6:] if i >= 0 else probe + html
open(dst, "w", encoding="utf-8").write(html)
PY

flags=(--headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check --disable-extensions
       --disable-background-networking --disable-sync --disable-component-update --metrics-recording-only
       "--host-resolver-rules=MAP * ~NOTFOUND" "--user-data-dir=$tmp/profile")
# 2 + 3. Load with a network log; dump the DOM after load.
timeout 120 "$chrome" "${flags[@]}" --enable-logging=stderr --v=0 "--log-net-log=$tmp/net.json" \
    --virtual-time-budget=5000 --dump-dom "file://$tmp/probe.html" > "$tmp/dom.html" 2> "$tmp/chrome.log" || true
if ! grep -q 'PROBE errors=' "$tmp/dom.html"; then
    echo "FAIL the page did not finish loading (no probe output)" >&2; tail -5 "$tmp/chrome.log" >&2; fail=1
else
    line=$(grep -o 'PROBE errors=[0-9]* \[[^]]*\] plots=[0-9]*' "$tmp/dom.html" | head -1)
    echo "$line"
    case "$line" in "PROBE errors=0 "*) ;; *) echo "FAIL JavaScript/console errors: $line" >&2; fail=1 ;; esac
fi
if grep -E 'CONSOLE.*(Uncaught|Error|error)' "$tmp/chrome.log" >&2; then echo "FAIL console errors in Chromium log" >&2; fail=1; fi
if [ -f "$tmp/net.json" ]; then
    # Page-initiated requests are URL_REQUEST_START_JOB events whose initiator is the page
    # ("null" or file://); Chromium's own background traffic (updater, time, accounts) has
    # initiator "not an origin" and is ignored. Only file: and data: URLs are allowed.
    python3 - "$tmp/net.json" > "$tmp/req.txt" <<'PY'
import json, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
try:
    d = json.loads(text)
except ValueError:  # log cut short: close the events array
    d = json.loads(text.rstrip().rstrip(",") + "]}")
start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
for e in d.get("events", []):
    p = e.get("params", {})
    if e.get("type") == start and "url" in p and p.get("initiator") != "not an origin":
        u = p.get("url", "")
        if not (u.startswith("file:") or u.startswith("data:")):
            print(u)
PY
    if [ -s "$tmp/req.txt" ]; then
        echo "FAIL network requests:" >&2; sed 's/^/  /' "$tmp/req.txt" >&2; fail=1
    else
        echo "network requests: 0"
    fi
else
    echo "FAIL no network log written" >&2; fail=1
fi
# 4. Plots present.
for sel in 'class="plot"[^>]*id="t0-cdf"|id="t0-cdf"' 'id="t0-traj"' 'id="t0-err-' 'id="t0-nees-' 'class="metrics"'; do
    if ! grep -Eq "$sel" "$tmp/dom.html"; then echo "FAIL missing plot: $sel" >&2; fail=1; fi
done
[ $fail -eq 0 ] && echo "plots present: cdf, trajectory, error, nees, metrics"

if [ -n "$shot" ]; then
    timeout 120 "$chrome" "${flags[@]}" --hide-scrollbars --virtual-time-budget=3000 "--window-size=$size" \
        "--screenshot=$(cd "$(dirname "$shot")" && pwd)/$(basename "$shot")" "file://$abs" > /dev/null 2>&1 || true
    [ -s "$shot" ] && echo "screenshot: $shot" || { echo "FAIL no screenshot written" >&2; fail=1; }
fi
[ $fail -eq 0 ] && echo "OK $report" || exit 1
