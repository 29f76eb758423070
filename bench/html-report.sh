#!/usr/bin/env bash
# The HTML report of a large fixture: how big the page is and how long a
# browser takes to open it, against a baseline page opened the same way in
# the same run (Chromium's own start-up is most of any one opening).
#
#   bench/html-report.sh                 # 100,000 steps, 5 openings of each page
#   STEPS=2000000 REPS=3 bench/html-report.sh
#
# Needs Go and chromium (scripts/deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-100000}
REPS=${REPS:-5}
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "html-report: chromium is not installed (scripts/deps.sh installs it)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/kavach" ./cmd/kavach
go build -o "$work/htmlbig" ./bench/htmlbig
"$work/htmlbig" -steps "$STEPS" -out "$work/big.json"

ms() { echo $(($(date +%s%N) / 1000000)); }

t0=$(ms)
"$work/kavach" report "$work/big.json" --html "$work/big.html" >/dev/null
t1=$(ms)
printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>baseline</title></head><body><h1 id="verdict">baseline</h1></body></html>\n' >"$work/baseline.html"

# open PAGE: milliseconds for headless Chromium to load PAGE, lay it out
# and print its DOM (the page's load event included), nothing fetched.
open_page() {
	local start end
	start=$(ms)
	"$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
		--disable-component-update --user-data-dir="$work/profile" '--host-resolver-rules=MAP * ~NOTFOUND' \
		--dump-dom "file://$1" >"$work/dom.html" 2>/dev/null
	end=$(ms)
	grep -q 'id="verdict"' "$work/dom.html" || { echo "html-report: $1 did not load" >&2; exit 1; }
	echo $((end - start))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

open_page "$work/baseline.html" >/dev/null # a first start warms the profile
base=() page=()
for _ in $(seq "$REPS"); do
	base+=("$(open_page "$work/baseline.html")")
	page+=("$(open_page "$work/big.html")")
done
mb=$(printf '%s' "${base[@]/%/$'\n'}" | median)
mp=$(printf '%s' "${page[@]/%/$'\n'}" | median)
size=$(stat -c %s "$work/big.html")
json=$(stat -c %s "$work/big.json")
marks=$(grep -c '<rect class="m ' "$work/big.html" || true)

echo "html-report: a fixture of $STEPS steps ($(awk -v b="$json" 'BEGIN{printf "%.1f MB", b/1048576}') of report JSON)"
printf '  page size:          %d bytes (%.2f MB; target < 5 MB), %d timeline marks\n' "$size" "$(awk -v b="$size" 'BEGIN{print b/1048576}')" "$marks"
printf '  kavach report:      %d ms to read the report and write the page\n' $((t1 - t0))
printf '  open in Chromium:   %d ms median of %d (baseline page: %d ms; the page itself: %d ms; target < 2 s)\n' "$mp" "$REPS" "$mb" $((mp - mb))
echo "  runs (baseline / page, ms): ${base[*]} / ${page[*]}"
