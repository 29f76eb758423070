#!/usr/bin/env bash
# Kavach on long recordings and large values: peak memory and rates, each
# figure printed next to its target.
#
# 1. A fixture of STEPS steps (default 2,000,000) is written by
#    bench/scalegen: one client's SETs and GETs, then the incident of
#    examples/redis-getrange-crash (the old build dies on its last step).
# 2. `kavach show` (the table) and `kavach show --json` read it: peak RSS
#    (target ≤ 256 MB) and steps per second (--json: target ≥ 500,000).
# 3. `kavach replay --runs 1` of the old build: peak RSS (target ≤ 256 MB)
#    and steps per second, against the same figure for a fixture of 1,000
#    steps (target: the same rate). REPLAY_STEPS (default STEPS) sets the
#    length of the long one.
# 4. `kavach diff --variants DIFF_VARIANTS` old and new builds on it: peak
#    RSS and whether it gave a verdict within LIMIT seconds; then, from its
#    report, the replays' and the variants' time against the target (the
#    four replays' time over the cores, plus the variants), and what the
#    variants replayed (the dependency slice, or the window and why).
# 5. `kavach record` in front of a build while one client SETs and GETs a
#    value of VALUE_MB MiB (default 50): the recorder's peak RSS over what
#    it was before the value (target ≤ 2× the value).
#
# Peak RSS is /usr/bin/time -v's "Maximum resident set size" (the record
# proxy's: VmHWM from /proc). Rates are given both over wall time and over
# the CPU time the command used (user + system), with the machine's load
# average beside them: on a shared machine the wall figure moves with the
# load and the CPU figure much less.
#
# Needs Go, /usr/bin/time, redis-cli, a C compiler (the clock library), and the Redis builds of
# scripts/redis-build.sh (made on first use, a few minutes).
#
# Environment:
#   STEPS          steps of the long fixture (default 2000000)
#   REPLAY_STEPS   steps of the fixture replay and diff run on (default STEPS)
#   DIFF_VARIANTS  --variants of the diff (default 8)
#   LIMIT          seconds a replay or diff may take before it is stopped (default 900)
#   VALUE_MB       the recorder's large value, in MiB (default 50)
#   SKIP           space-separated parts to skip: show replay diff record
#   KEEP=1         keep the temporary directory and print it
set -euo pipefail

STEPS=${STEPS:-2000000}
REPLAY_STEPS=${REPLAY_STEPS:-$STEPS}
DIFF_VARIANTS=${DIFF_VARIANTS:-8}
LIMIT=${LIMIT:-900}
VALUE_MB=${VALUE_MB:-50}
SKIP=${SKIP:-}
KEEP=${KEEP:-0}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

for cmd in go redis-cli /usr/bin/time; do
	command -v "$cmd" >/dev/null || {
		echo "scale.sh: $cmd not found (apt-get install -y redis-tools time; Go 1.26)" >&2
		exit 1
	}
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-bench-scale.XXXXXX")
KPID=""
cleanup() {
	local rc=$?
	set +e
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then
		kill -INT "$KPID" 2>/dev/null
		wait "$KPID" 2>/dev/null
	fi
	if [ "$KEEP" = 1 ]; then
		echo "scale.sh: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "scale.sh: interrupted" >&2; exit 130' INT TERM

log() { echo "scale.sh: $*" >&2; }
skip() { [[ " $SKIP " == *" $1 "* ]]; }

log "building kavach and scalegen into $TMP"
go build -o "$TMP/kavach" ./cmd/kavach
go build -o "$TMP/scalegen" ./bench/scalegen
KAVACH=$TMP/kavach

OLD=$(scripts/redis-build.sh examples/redis-getrange-crash/bug.patch)
NEW=$(scripts/redis-build.sh)

# measure NAME CMD...: runs CMD under /usr/bin/time -v with its output
# discarded and sets PEAK_MB, WALL_S, CPU_S and STATUS.
measure() {
	local name=$1
	shift
	set +e
	timeout --signal=INT "$LIMIT" /usr/bin/time -v -o "$TMP/$name.time" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	STATUS=$?
	set -e
	PEAK_MB=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$TMP/$name.time")
	WALL_S=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2, a, ":"); s=0; for (i=1; i<=n; i++) s=s*60+a[i]; printf "%.2f", s}' "$TMP/$name.time")
	CPU_S=$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.2f", s}' "$TMP/$name.time")
}

rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n/s; else print "inf" }'; }
verdict() { awk -v got="$1" -v op="$2" -v want="$3" 'BEGIN { ok = (op == "<=") ? got <= want : got >= want; print ok ? "meets" : "MISSES" }'; }
load() { cut -d' ' -f1 /proc/loadavg; }

echo "kavach scale benchmark: $(nproc) cores, load average $(load) at the start"

FX=$TMP/long.kavach
"$TMP/scalegen" -steps "$STEPS" -out "$FX" >/dev/null
echo "fixture: $STEPS steps, $(du -m "$FX" | cut -f1) MB on disk"

if ! skip show; then
	measure show "$KAVACH" show "$FX"
	[ "$STATUS" = 0 ] || { log "kavach show failed ($STATUS):"; cat "$TMP/show.err" >&2; exit 1; }
	printf "show          peak RSS %5s MB (target ≤ 256, %s)  %8s steps/s wall, %8s steps/s CPU  [%ss wall, %ss CPU, load %s]\n" \
		"$PEAK_MB" "$(verdict "$PEAK_MB" "<=" 256)" "$(rate "$STEPS" "$WALL_S")" "$(rate "$STEPS" "$CPU_S")" "$WALL_S" "$CPU_S" "$(load)"
	measure json "$KAVACH" show --json "$FX"
	[ "$STATUS" = 0 ] || { log "kavach show --json failed ($STATUS):"; cat "$TMP/json.err" >&2; exit 1; }
	lines=$(wc -l <"$TMP/json.out")
	[ "$lines" = "$STEPS" ] || { log "show --json wrote $lines lines for $STEPS steps"; exit 1; }
	r=$(rate "$STEPS" "$WALL_S")
	printf "show --json   peak RSS %5s MB (target ≤ 256, %s)  %8s steps/s wall (target ≥ 500000, %s), %8s steps/s CPU  [%ss wall, %ss CPU, load %s]\n" \
		"$PEAK_MB" "$(verdict "$PEAK_MB" "<=" 256)" "$r" "$(verdict "$r" ">=" 500000)" "$(rate "$STEPS" "$CPU_S")" "$WALL_S" "$CPU_S" "$(load)"
fi

RFX=$FX
if [ "$REPLAY_STEPS" != "$STEPS" ]; then
	RFX=$TMP/replay.kavach
	"$TMP/scalegen" -steps "$REPLAY_STEPS" -out "$RFX" >/dev/null
fi

if ! skip replay; then
	"$TMP/scalegen" -steps 1000 -out "$TMP/short.kavach" >/dev/null
	measure short "$KAVACH" replay --runs 1 "$OLD" "$TMP/short.kavach"
	[ "$STATUS" = 0 ] || { log "kavach replay of 1,000 steps failed ($STATUS):"; tail "$TMP/short.err" >&2; exit 1; }
	short_rate=$(rate 1000 "$WALL_S")
	measure replay "$KAVACH" replay --runs 1 "$OLD" "$RFX"
	if [ "$STATUS" = 0 ]; then
		r=$(rate "$REPLAY_STEPS" "$WALL_S")
		printf "replay        peak RSS %5s MB (target ≤ 256, %s)  %8s steps/s wall; 1,000 steps: %s steps/s (target: the same)  [%s steps, %ss wall, %ss CPU, load %s]\n" \
			"$PEAK_MB" "$(verdict "$PEAK_MB" "<=" 256)" "$r" "$short_rate" "$REPLAY_STEPS" "$WALL_S" "$CPU_S" "$(load)"
	else
		printf "replay        peak RSS %5s MB (target ≤ 256, %s)  no result: status %s after %ss (limit %ss)  [%s steps, load %s]\n" \
			"$PEAK_MB" "$(verdict "$PEAK_MB" "<=" 256)" "$STATUS" "$WALL_S" "$LIMIT" "$REPLAY_STEPS" "$(load)"
	fi
fi

if ! skip diff; then
	measure diff "$KAVACH" diff --variants "$DIFF_VARIANTS" --min-variants 1 "$OLD" "$NEW" "$RFX"
	verdict_line=$(head -1 "$TMP/diff.out" || true)
	printf "diff          peak RSS %5s MB (target ≤ 256, %s)  status %s after %ss: %s  [%s steps, %s variants, %ss CPU, load %s]\n" \
		"$PEAK_MB" "$(verdict "$PEAK_MB" "<=" 256)" "$STATUS" "$WALL_S" "${verdict_line:-no verdict}" "$REPLAY_STEPS" "$DIFF_VARIANTS" "$CPU_S" "$(load)"
	# Where the time went (the report's durations_ms: the three old
	# replays summed, the new one, the variants with the dependency slice
	# found and verified), against the target: the four replays' time over
	# the cores, plus the variants.
	report=$(sed -n 's/^report: //p' "$TMP/diff.out")
	if [ -n "$report" ] && [ -f "$report" ]; then
		durs=$(tr -d ' \n' <"$report" | grep -o '"durations_ms":{[^}]*}' || true)
		ms() { echo "$durs" | grep -o "\"$1\":[0-9]*" | cut -d: -f2; }
		old_ms=$(ms old_replays) new_ms=$(ms new_replay) var_ms=$(ms variants)
		target=$(awk -v o="$old_ms" -v n="$new_ms" -v v="$var_ms" -v c="$(nproc)" 'BEGIN { printf "%.0f", ((o + n) / c + v) / 1000 }')
		printf "              replays %ss (old, summed) + %ss (new), variants %ss: target ≤ %ss wall (replays over %s cores + variants), %s\n" \
			"$((old_ms / 1000))" "$((new_ms / 1000))" "$((var_ms / 1000))" "$target" "$(nproc)" "$(verdict "$WALL_S" "<=" "$target")"
		grep -E "dependency slice|replayed on steps|not on the dependency slice" "$TMP/diff.out" | sed 's/^ */              /' || true
		rm -f "$report"
	fi
fi

if ! skip record; then
	head -c $((VALUE_MB << 20)) /dev/urandom >"$TMP/value"
	"$KAVACH" record --protocol resp --out "$TMP/big.kavach" --ready-file "$TMP/ready" -- "$NEW" 2>"$TMP/record.log" &
	KPID=$!
	addr=""
	for _ in $(seq 300); do
		[ -s "$TMP/ready" ] && addr=$(cat "$TMP/ready")
		[[ $addr =~ ^[0-9.]+:[0-9]+$ ]] && break
		kill -0 "$KPID" 2>/dev/null || { log "kavach record died:"; cat "$TMP/record.log" >&2; exit 1; }
		sleep 0.1
	done
	port=${addr##*:}
	redis-cli -p "$port" PING >/dev/null
	before=$(awk '/VmHWM/ {print $2}' "/proc/$KPID/status")
	redis-cli -p "$port" -x SET big <"$TMP/value" >/dev/null
	redis-cli -p "$port" GET big >/dev/null
	redis-cli -p "$port" STRLEN big >/dev/null
	peak=$(awk '/VmHWM/ {print $2}' "/proc/$KPID/status")
	kill -INT "$KPID"
	wait "$KPID" || true
	KPID=""
	used=$(((peak - before) / 1024))
	limit=$((2 * VALUE_MB))
	printf "record        %s MB for one %s MB value (peak RSS %s MB, %s MB before it; target ≤ %s, %s)\n" \
		"$used" "$VALUE_MB" "$((peak / 1024))" "$((before / 1024))" "$limit" "$(verdict "$used" "<=" "$limit")"
fi
