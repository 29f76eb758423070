#!/usr/bin/env bash
# Kavach's main job, end to end, on real builds: an incident recorded on a
# Redis build with a planted bug (GETRANGE with a large negative start
# trips an assertion), then candidate fixes graded against it.
#
# Builds come from Debian's Redis source package with the patches under
# internal/redisbuild/testdata (scripts/redis-build.sh; cached under
# ~/.cache/kavach, the first run takes a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
KAVACH=${KAVACH:-bin/kavach}
patches=internal/redisbuild/testdata
work=$(mktemp -d)
rec=""
trap '[ -n "$rec" ] && kill $rec 2>/dev/null; rm -rf "$work"' EXIT

echo "== building Redis from source: the old build (planted bug) and three candidate fixes" >&2
old=$(scripts/redis-build.sh $patches/getrange-crash.patch)
fixed=$(scripts/redis-build.sh)
narrow=$(scripts/redis-build.sh $patches/getrange-crash.patch $patches/fix-narrow.patch)
strlen=$(scripts/redis-build.sh $patches/strlen-off-by-one.patch)

echo "== kavach record: the incident, through the recording proxy in front of the old build" >&2
"$KAVACH" record --protocol resp --out "$work/incident.kavach" --ready-file "$work/addr" -- "$old" &
rec=$!
for _ in $(seq 100); do [ -s "$work/addr" ] && break; sleep 0.1; done
port=$(cut -d: -f2 "$work/addr")
cli() { redis-cli -p "$port" "$@"; }
cli SET greeting "hello world" >/dev/null
cli APPEND greeting "!" >/dev/null
cli STRLEN greeting >/dev/null
cli GETRANGE greeting 0 4 >/dev/null
cli GETRANGE greeting -100 -1 >/dev/null 2>&1 || true   # the incident: the server dies
wait $rec || true
rec=""

echo >&2
echo "== kavach show: the fixture" >&2
"$KAVACH" show "$work/incident.kavach"

grade() { # grade NAME BUILD
	echo
	echo "== kavach diff OLD <$1> incident.kavach"
	local start=$SECONDS status=0
	"$KAVACH" diff "$old" "$2" "$work/incident.kavach" --out "$work/$1.json" || status=$?
	echo "(exit status $status, $((SECONDS - start)) s)"
}
grade "correct fix" "$fixed"
grade "narrow fix: only the recorded input" "$narrow"
grade "breaks STRLEN, a step before the failure" "$strlen"
grade "the old build unchanged" "$old"
