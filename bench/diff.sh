#!/usr/bin/env bash
# The diff's benchmark (docs/design.md §11: "diff: variants replayed in parallel
# (-j), each on its own build process; wall time close to (replays × one
# replay) / cores"). On the GETRANGE incident (internal/redisbuild
# testdata): the old build asserts on GETRANGE with a start before the
# string, the new one is pristine Redis (the correct fix). The incident is
# recorded with `kavach record` in front of the old build, then
#
#   kavach diff OLD NEW FIXTURE --variants V -j 1
#   kavach diff OLD NEW FIXTURE --variants V -j 2
#
# are timed (wall clock of the process), interleaved, REPS times each, and
# the medians are reported: both walls, the speed-up (-j 1 over -j 2,
# target close to 2 on 2 cores), the replays one diff runs (3 old + 1 new
# + for each variant 1 old, and 1 new if the variant was kept, from the
# report's evidence.variants) and the wall time per replay at -j 1. Every
# run must say `fixed` (exit 0); the script exits 1 if one does not.
#
# Environment:
#   VARIANTS  --variants (default 64)
#   REPS      repetitions of each -j (default 3)
#   JOBS      the parallel -j to set against -j 1 (default 2)
#   BUILD_ARGS  extra arguments for the old build when recording, which every replay
#             then uses too (default none; e.g. "--crash-memcheck-enabled no")
#   KEEP=1    keep the temporary directory (fixture, reports, outputs) and print it
set -euo pipefail

VARIANTS=${VARIANTS:-64}
REPS=${REPS:-3}
JOBS=${JOBS:-2}
KEEP=${KEEP:-0}
read -r -a BUILD_ARGS <<<"${BUILD_ARGS:-}"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KAVACH=$ROOT/bin/kavach

for cmd in go redis-cli python3; do
	command -v "$cmd" >/dev/null || {
		echo "diff.sh: $cmd not found (apt-get install -y redis-tools python3; Go 1.26)" >&2
		exit 1
	}
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-bench-diff.XXXXXX")
KPID=""   # the running kavach record, if any
DPID=""   # the running kavach diff, if any

cleanup() {
	local rc=$?
	set +e
	[ "$rc" != 0 ] && echo "diff.sh: stopping on status $rc" >&2
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		kill -INT "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then
		kill -INT "$KPID" 2>/dev/null
		wait "$KPID" 2>/dev/null
	fi
	if [ "$KEEP" = 1 ]; then
		echo "diff.sh: kept $TMP (fixture: $TMP/incident.kavach, reports: $TMP/report-*.json)" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
on_signal() {
	echo "diff.sh: interrupted" >&2
	exit 130
}
# bash 5.2 can fail to run a trap that interrupts a command substitution
# inside a double-quoted string (it exits 2, cleanup still runs): the
# measuring loop assigns command substitutions to variables first.
trap on_signal INT TERM

log() { echo "diff.sh: $*" >&2; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# ---- build

log "building bin/kavach; the old build (getrange-crash.patch) and the new one (pristine)"
go build -o "$KAVACH" ./cmd/kavach
OLD=$(scripts/redis-build.sh internal/redisbuild/testdata/getrange-crash.patch)
NEW=$(scripts/redis-build.sh)

# ---- record the incident on the old build

FX=$TMP/incident.kavach
log "recording the incident in front of the old build"
"$KAVACH" record --protocol resp --out "$FX" --ready-file "$TMP/addr" -- "$OLD" ${BUILD_ARGS[@]+"${BUILD_ARGS[@]}"} 2>"$TMP/record.log" &
KPID=$!
addr=""
for _ in $(seq 200); do
	[ -s "$TMP/addr" ] && addr=$(cat "$TMP/addr")
	[[ $addr =~ ^[0-9.]+:[0-9]+$ ]] && break
	kill -0 "$KPID" 2>/dev/null || { log "kavach record died:"; cat "$TMP/record.log" >&2; exit 1; }
	sleep 0.05
done
[[ $addr =~ ^[0-9.]+:[0-9]+$ ]] || { log "kavach record not ready after 10s"; exit 1; }
port=${addr##*:}
redis-cli -p "$port" SET greeting "hello world" >/dev/null
redis-cli -p "$port" APPEND greeting "!" >/dev/null
redis-cli -p "$port" STRLEN greeting >/dev/null
redis-cli -p "$port" GETRANGE greeting 0 4 >/dev/null
# This one crashes the old build: redis-cli fails, kavach record ends by itself.
redis-cli -p "$port" GETRANGE greeting -100 -1 >/dev/null 2>&1 || true
for _ in $(seq 100); do
	kill -0 "$KPID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$KPID" 2>/dev/null; then
	log "kavach record did not end when the old build crashed:"
	cat "$TMP/record.log" >&2
	exit 1
fi
rc=0
wait "$KPID" || rc=$?
KPID=""
grep -q "failure at step 5: crash" "$TMP/record.log" || {
	log "the recording has no crash at step 5 (kavach record exited $rc):"
	cat "$TMP/record.log" >&2
	exit 1
}
log "$(grep -o '[0-9]* requests, [0-9]* replies.*' "$TMP/record.log"); failure at step 5: crash"

# ---- measure

RESULTS=$TMP/results   # j rep wall_s exit verdict replays generated reproducing regression handled passing kept old_ms new_ms variants_ms total_ms
: >"$RESULTS"
bad=0
t_start=$SECONDS
for rep in $(seq "$REPS"); do
	for j in 1 "$JOBS"; do
		report=$TMP/report-j$j-$rep.json
		out=$TMP/diff-j$j-$rep.out
		log "rep $rep/$REPS: kavach diff --variants $VARIANTS -j $j"
		t0=$(now)
		"$KAVACH" diff "$OLD" "$NEW" "$FX" --variants "$VARIANTS" -j "$j" --out "$report" >"$out" 2>&1 &
		DPID=$!
		rc=0
		wait "$DPID" || rc=$?
		DPID=""
		t1=$(now)
		verdict=$(head -1 "$out")
		if [ "$rc" != 0 ] || [ "$verdict" != fixed ]; then
			log "kavach diff -j $j gave '$verdict' (exit $rc), not fixed (exit 0):"
			head -20 "$out" >&2
			bad=1
		fi
		[ -s "$report" ] || { log "no report at $report"; exit 1; }
		figures=$(python3 - "$report" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
v = r["evidence"]["variants"]
kept = sum(1 for x in v["list"] if x.get("kept"))
old_runs = r["evidence"]["old"].get("runs", 2)
replays = old_runs + 1 + len(v["list"]) + kept
d = r["durations_ms"]
print(replays, v["generated"], v["reproducing"], v["regression"], v["handled"], v["passing"], kept,
      d["old_replays"], d["new_replay"], d["variants"], d["total"], old_runs)
EOF
)
		wall=$(calc "%.3f" "$t1 - $t0")
		echo "$j $rep $wall $rc ${verdict// /_} $figures" >>"$RESULTS"
	done
done
measure_secs=$((SECONDS - t_start))

# ---- report

# median J COLUMN
median() {
	awk -v j="$1" -v c="$2" '$1 == j { print $c }' "$RESULTS" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
W1=$(median 1 3)
WJ=$(median "$JOBS" 3)
# The variant counts of the first run; the replays' median over the -j 1 runs.
first=$(head -1 "$RESULTS")
read -r _ _ _ _ _ _ GEN REPRO REGR HANDLED PASSING KEPT _ _ _ _ OLDRUNS <<<"$first"
REPLAYS=$(median 1 6)
REPLAYS=${REPLAYS%.*}
if [ "$(awk '{ print $6 }' "$RESULTS" | sort -u | wc -l)" != 1 ]; then
	log "the number of replays differs between runs: $(awk '{ print $6 }' "$RESULTS" | tr '\n' ' ')(a variant's outcome on the old build is not deterministic)"
fi
OLDMS=$(median 1 13)
NEWMS=$(median 1 14)
VARMS=$(median 1 15)
TOTMS=$(median 1 16)
VREPLAYS=$((REPLAYS - OLDRUNS - 1))

echo
echo "kavach diff benchmark: the GETRANGE incident (5 steps, crash at step 5), --variants $VARIANTS, fixed;"
echo "median of $REPS interleaved runs per -j ($measure_secs s of measuring); $(nproc) cores${BUILD_ARGS[0]+; build arguments: ${BUILD_ARGS[*]}}"
echo
echo "variants (first run): $GEN generated, $REPRO reproduce the failure; $REGR regression variants, $HANDLED handled by the old build;"
echo "          $PASSING pass on the new build; $KEPT kept (replayed on both builds)"
echo "replays per diff: $REPLAYS (median of the -j 1 runs) = $OLDRUNS old + 1 new + $((GEN + REGR)) variants on the old build + $((REPLAYS - OLDRUNS - 1 - GEN - REGR)) kept on the new build"
echo "  (plus one start of the old build that learns the field types, not counted)"
echo
printf "wall -j 1       %7.3f s   (%.1f ms per replay)\n" "$W1" "$(calc "%.6f" "$W1 * 1000 / $REPLAYS")"
printf "wall -j %-7s %7.3f s   (%.1f ms per replay)\n" "$JOBS" "$WJ" "$(calc "%.6f" "$WJ * 1000 / $REPLAYS")"
S=$(calc "%.2f" "$W1 / $WJ")
echo "speed-up -j 1 / -j $JOBS = $S (ideal $JOBS on $(nproc) cores: $(calc "%.0f" "100 * $S / $JOBS")% of linear)"
echo
echo "inside one -j 1 diff (report durations_ms, medians): fixture on the old build $OLDRUNS times $OLDMS ms, on the new $NEWMS ms"
echo "  ($(calc "%.1f" "($OLDMS + $NEWMS) / ($OLDRUNS + 1)") ms per replay); variants $VARMS ms for $VREPLAYS replays ($(calc "%.1f" "$VARMS / $VREPLAYS") ms each);"
echo "  total $TOTMS ms of the $(calc "%.0f" "$W1 * 1000") ms wall"
echo
echo "every run, in the order measured (wall s, verdict, replays, variants kept, durations_ms old/new/variants/total):"
awk '{ printf "  -j %-3s rep %s  %7.3f s  %-8s exit %s  %3s replays, %2s kept  %s/%s/%s/%s ms\n", $1, $2, $3, $5, $4, $6, $12, $13, $14, $15, $16 }' "$RESULTS"
if [ "$bad" = 1 ]; then
	echo
	echo "a diff did not say fixed (see above)"
	exit 1
fi
