#!/usr/bin/env bash
# Variants per second with and without checkpoints (issue 42, item 4),
# side by side in one run.
#
# The recording: STEPS requests typed into one redis-cli (stdin, a
# millisecond apart: redis-cli sends COMMAND DOCS first, step 1), in front
# of the STRLEN example's old build (long strings counted one short). Every
# step before the failing one writes the same key (SET hot value-N, 24
# bytes); step FAIL reads it (STRLEN hot: the wrong answer, marked with the
# example's invariant strlen-matches); the steps after it read it again
# (GET hot). So every variant of the failing step keeps FAIL-1 steps
# before the one it changes: replayed again from the start without
# checkpoints, from each build's saved state before that step with them.
#
#   kavach diff OLD NEW FIXTURE --variants V -j J                      (checkpoints)
#   kavach diff OLD NEW FIXTURE --variants V -j J --checkpoints=false  (every step)
#
# are run, interleaved, REPS times each, for the correct fix (NEW: fixed)
# and the narrow one (NARROW: red). For each the script reports the
# medians of the diff's wall time and of its variants' part
# (durations_ms.variants), variants per second (the variants run over the
# variants' part), and the ratio; it checks that both ways give the same
# verdict and the same variants, each judged alike (k, kind, kept, failed
# step), and exits 1 when they do not. The same on the two Redis examples'
# shipped fixtures (their steps are fewer than a checkpoint needs before
# it, so none is made there: the ratio shows what checkpoints cost when
# they are not used).
#
# Environment:
#   STEPS    steps of the recording (default 5000)
#   FAIL     the failing step (default 4900)
#   VARIANTS --variants (default 64)
#   JOBS     -j (default 2)
#   REPS     repetitions of each way (default 3)
#   KEEP=1   keep the temporary directory and print it
set -euo pipefail

STEPS=${STEPS:-5000}
FAIL=${FAIL:-4900}
VARIANTS=${VARIANTS:-64}
JOBS=${JOBS:-2}
REPS=${REPS:-3}
KEEP=${KEEP:-0}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
for cmd in go redis-cli python3; do
	command -v "$cmd" >/dev/null || {
		echo "checkpoints.sh: $cmd not found (apt-get install -y redis-tools python3; Go 1.26)" >&2
		exit 1
	}
done
if [ "$FAIL" -ge "$STEPS" ] || [ "$FAIL" -lt 3 ]; then
	echo "checkpoints.sh: FAIL=$FAIL: want 3 <= FAIL < STEPS=$STEPS" >&2
	exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-bench-checkpoints.XXXXXX")
KPID=""
cleanup() {
	local rc=$?
	set +e
	[ "$rc" != 0 ] && echo "checkpoints.sh: stopping on status $rc" >&2
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then
		kill -INT "$KPID"
		wait "$KPID"
	fi
	if [ "$KEEP" = 1 ]; then
		echo "checkpoints.sh: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "checkpoints.sh: $*" >&2; }

KAVACH=$TMP/kavach
go build -o "$KAVACH" ./cmd/kavach
EX=examples/redis-strlen-wrong-answer
OLD=$(scripts/redis-build.sh "$EX/bug.patch")
NEW=$(scripts/redis-build.sh "$EX/bug.patch" "$EX/candidates/correct.patch")
NARROW=$(scripts/redis-build.sh "$EX/bug.patch" "$EX/candidates/narrow.patch")

# The recording, through kavach record in front of the old build.
FX=$TMP/hot.kavach
log "recording $STEPS steps, a millisecond apart (step $FAIL reads the key every earlier step wrote)"
"$KAVACH" record --protocol resp --out "$FX" --ready-file "$TMP/addr" -- "$OLD" 2>"$TMP/record.log" &
KPID=$!
for _ in $(seq 100); do [ -s "$TMP/addr" ] && break; sleep 0.1; done
addr=$(cat "$TMP/addr")
python3 - "$STEPS" "$FAIL" <<'EOF' | redis-cli -h "${addr%:*}" -p "${addr##*:}" >/dev/null
import sys, time
steps, fail = int(sys.argv[1]), int(sys.argv[2])
# Step 1 is redis-cli's COMMAND DOCS; the lines are steps 2 on.
for n in range(2, steps + 1):
    if n < fail:
        print("SET hot value-%018d" % n)
    elif n == fail:
        print("STRLEN hot")
    else:
        print("GET hot")
    sys.stdout.flush()
    time.sleep(0.001)
EOF
sleep 0.2
kill -INT "$KPID"
wait "$KPID"
KPID=""
"$KAVACH" mark "$FX" --step "$FAIL" --oracle invariant:strlen-matches --invariants "$EX/strlen.invariants" 2>/dev/null
got=$("$KAVACH" show "$FX" 2>/dev/null | grep -c '^ *[0-9]' || true)
log "recorded $FX ($got step lines in kavach show)"

# grade NAME FIXTURE NEW FLAGS...: one diff; prints "wall variants_ms verdict"
# and keeps the report as $TMP/NAME.json.
grade() {
	local name=$1 fx=$2 new=$3
	shift 3
	local start end
	start=$(date +%s.%N)
	"$KAVACH" diff "$OLD_FOR" "$new" "$fx" --variants "$VARIANTS" -j "$JOBS" --out "$TMP/$name.json" "$@" >/dev/null || [ $? = 1 ]
	end=$(date +%s.%N)
	python3 - "$TMP/$name.json" "$start" "$end" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(float(sys.argv[3]) - float(sys.argv[2]), r["durations_ms"]["variants"], r["verdict"])
EOF
}
# variants FILE: each variant's judgement, one line each.
variants() {
	python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for v in r["evidence"]["variants"]["list"]:
    print(v["k"], v.get("kind", ""), v.get("kept", False), v.get("failed_step", 0))
EOF
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# compare LABEL FIXTURE NEW: REPS diffs each way, interleaved.
compare() {
	local label=$1 fx=$2 new=$3
	local -a wall_on wall_off var_on var_off
	local verdict_on="" verdict_off="" n=0
	for i in $(seq "$REPS"); do
		read -r w v verdict_on < <(grade on "$fx" "$new")
		wall_on+=("$w"); var_on+=("$v")
		read -r w v verdict_off < <(grade off "$fx" "$new" --checkpoints=false)
		wall_off+=("$w"); var_off+=("$v")
		if [ "$verdict_on" != "$verdict_off" ]; then
			log "$label: $verdict_on with checkpoints, $verdict_off without"
			exit 1
		fi
		if ! diff <(variants "$TMP/on.json") <(variants "$TMP/off.json") >"$TMP/variants.diff"; then
			log "$label: the variants differ with and without checkpoints:"
			cat "$TMP/variants.diff" >&2
			exit 1
		fi
	done
	n=$(variants "$TMP/on.json" | wc -l)
	local starts
	starts=$(python3 -c 'import json,sys; print(sum(c["variants"] for c in json.load(open(sys.argv[1]))["evidence"]["variants"].get("checkpoints", [])))' "$TMP/on.json")
	local mw_on mw_off mv_on mv_off
	mw_on=$(printf '%s\n' "${wall_on[@]}" | median); mw_off=$(printf '%s\n' "${wall_off[@]}" | median)
	mv_on=$(printf '%s\n' "${var_on[@]}" | median); mv_off=$(printf '%s\n' "${var_off[@]}" | median)
	awk -v l="$label" -v verdict="$verdict_on" -v n="$n" -v s="$starts" -v won="$mw_on" -v woff="$mw_off" -v von="$mv_on" -v voff="$mv_off" 'BEGIN {
		rate_on = n / (von / 1000); rate_off = n / (voff / 1000)
		printf "%-34s %-22s %3d variants (%d replays from checkpoints)\n", l, verdict, n, s
		printf "    checkpoints:   wall %7.2f s, variants %7.2f s, %6.2f variants/s\n", won, von / 1000, rate_on
		printf "    every step:    wall %7.2f s, variants %7.2f s, %6.2f variants/s\n", woff, voff / 1000, rate_off
		printf "    ratio (variants/s with over without): %.2f; wall without over with: %.2f\n", rate_on / rate_off, woff / won
	}'
}

echo "kavach diff --variants $VARIANTS -j $JOBS, $REPS runs each way, medians (nproc $(nproc))"
OLD_FOR=$OLD
compare "hot key, $STEPS steps, fails at $FAIL: correct" "$FX" "$NEW"
compare "hot key, $STEPS steps, fails at $FAIL: narrow" "$FX" "$NARROW"
compare "strlen example: correct" "$EX/fixture.kavach" "$NEW"
GR=examples/redis-getrange-crash
OLD_FOR=$(scripts/redis-build.sh "$GR/bug.patch")
compare "getrange example: correct" "$GR/fixture.kavach" "$(scripts/redis-build.sh "$GR/bug.patch" "$GR/candidates/correct.patch")"
