#!/usr/bin/env bash
# The cost of a fixture recorded with stock redis-cli 7 (issue 14: "a
# fixture recorded with stock redis-cli diffs within 1.2x the time of the
# same fixture recorded without it"). redis-cli reading a session from
# stdin first sends COMMAND DOCS, a reply of about 200 KB whose order
# changes with every server process; every variant replays it.
#
# The INCRBY incident (internal/redisbuild testdata: the old build refuses
# negative increments) is recorded three times in front of the old build
# with `kavach record`: typed into redis-cli (COMMAND DOCS at step 1, the
# failure at step 5); sent as inline commands on one plain TCP connection,
# one at a time, each after the previous reply, as redis-cli sends them
# (the failure at step 4); and the same pipelined, all at once. All are
# marked `--oracle error` and graded against pristine Redis (the correct
# fix):
#
#   kavach diff OLD NEW FIXTURE --variants V -j J
#
# timed (wall clock), interleaved, REPS times each; the medians and the
# ratios are printed. All must say `fixed`. The target compares the
# redis-cli fixture with the same session one command at a time: what
# COMMAND DOCS costs. The pipelined fixture is shown beside it: its steps
# share one millisecond, so they are sent as one batch with no clock move
# between them, which no interactive client's fixture gets.
#
# Environment: VARIANTS (64), REPS (3), JOBS (2), KEEP=1 keeps the files.
set -euo pipefail
VARIANTS=${VARIANTS:-64}
REPS=${REPS:-3}
JOBS=${JOBS:-2}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KAVACH=${KAVACH:-$ROOT/bin/kavach}
command -v redis-cli >/dev/null || { echo "redis-cli.sh: redis-cli not found (apt-get install -y redis-tools)" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-bench-cli.XXXXXX")
KPID=""
cleanup() {
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then kill -INT "$KPID"; wait "$KPID" 2>/dev/null || true; fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
[ -x "$KAVACH" ] || go build -o "$KAVACH" ./cmd/kavach
OLD=$(scripts/redis-build.sh internal/redisbuild/testdata/incrby-negative-error.patch)
NEW=$(scripts/redis-build.sh)
SESSION=$'SET counter 10\nINCRBY counter 5\nGET counter\nINCRBY counter -3\nSET other hello\nSTRLEN other\nGET counter\n'

# record FIXTURE SENDER: the old build behind kavach record, SENDER given the address.
record() {
	rm -f "$TMP/addr"
	"$KAVACH" record --protocol resp --out "$1" --ready-file "$TMP/addr" -- "$OLD" 2>>"$TMP/record.log" &
	KPID=$!
	for _ in $(seq 100); do [ -s "$TMP/addr" ] && break; sleep 0.1; done
	local addr host port
	addr=$(cat "$TMP/addr"); host=${addr%:*}; port=${addr##*:}
	"$2" "$host" "$port"
	sleep 0.2
	kill -INT "$KPID"; wait "$KPID"; KPID=""
}
with_cli() { printf '%s' "$SESSION" | redis-cli -h "$1" -p "$2" >/dev/null; }
# without_cli sends the same session as redis-cli does, one command at a
# time, each after the previous reply: the same fixture without COMMAND
# DOCS.
without_cli() {
	exec 3<>"/dev/tcp/$1/$2"
	local cmd line
	while IFS= read -r cmd; do
		printf '%s\r\n' "$cmd" >&3
		IFS= read -r -t 5 line <&3
		case $line in \$-1*) ;; \$*) IFS= read -r -t 5 line <&3 ;; esac
	done <<<"${SESSION%$'\n'}"
	exec 3<&-
}
# pipelined sends the whole session at once and then reads the seven
# replies: a client that pipelines, for comparison.
pipelined() {
	exec 3<>"/dev/tcp/$1/$2"
	printf '%s' "${SESSION//$'\n'/$'\r\n'}" >&3
	local n=0 line
	while [ $n -lt 7 ] && IFS= read -r -t 5 line <&3; do
		case $line in \$-1*|[*+:-]*) n=$((n + 1)) ;; \$*) IFS= read -r -t 5 line <&3; n=$((n + 1)) ;; esac
	done
	exec 3<&-
}
record "$TMP/cli.kavach" with_cli
record "$TMP/plain.kavach" without_cli
record "$TMP/pipelined.kavach" pipelined
"$KAVACH" mark "$TMP/cli.kavach" --step 5 --oracle error 2>/dev/null
"$KAVACH" mark "$TMP/plain.kavach" --step 4 --oracle error 2>/dev/null
"$KAVACH" mark "$TMP/pipelined.kavach" --step 4 --oracle error 2>/dev/null

declare -a T_CLI T_PLAIN T_PIPE
run() { # fixture -> wall seconds
	local start end out
	start=$(date +%s.%N)
	out=$("$KAVACH" diff "$OLD" "$NEW" "$1" --variants "$VARIANTS" -j "$JOBS" --out "$TMP/report.json" | head -1)
	end=$(date +%s.%N)
	[ "$out" = fixed ] || { echo "redis-cli.sh: $1 graded $out, want fixed" >&2; exit 1; }
	echo "$end - $start" | bc
}
for _ in $(seq "$REPS"); do
	T_CLI+=("$(run "$TMP/cli.kavach")")
	T_PLAIN+=("$(run "$TMP/plain.kavach")")
	T_PIPE+=("$(run "$TMP/pipelined.kavach")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
c=$(median "${T_CLI[@]}"); p=$(median "${T_PLAIN[@]}"); q=$(median "${T_PIPE[@]}")
printf 'redis-cli fixture (COMMAND DOCS at step 1): %.1f s (median of %d)\n' "$c" "$REPS"
printf 'same session, one command at a time:        %.1f s\n' "$p"
printf 'same session, pipelined:                    %.1f s\n' "$q"
printf 'ratio to one at a time: %.2f (target at most 1.20)\n' "$(echo "$c / $p" | bc -l)"
printf 'ratio to pipelined:     %.2f\n' "$(echo "$c / $q" | bc -l)"
