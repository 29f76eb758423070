#!/usr/bin/env bash
# verify.sh: a harness verifier that runs the hidden tests and `kavach diff`
# side by side. The hidden tests alone decide the reward and this script's
# exit status; Kavach's verdict is recorded beside them, never merged in.
# It follows examples/harbor-task/tests/test.sh, outside Harbor.
#
# Usage: verify.sh [OLD NEW FIXTURE]
#
# Inputs (arguments override the environment):
#   OLD                   the old build: the one the incident was recorded on
#   NEW                   the new build: the candidate fix
#   FIXTURE               the incident, recorded with `kavach record`
#   HIDDEN_TEST_CMD       the hidden tests, run with `sh -c` in the current directory (required)
#   OUT_DIR               where the results go (default: ./verifier-out)
#   KAVACH                the kavach command (default: kavach on PATH)
#   KAVACH_ARGS           more flags for `kavach diff`, split on spaces (e.g. "--variants 32 -j 2")
#   VERIFIER_TIMEOUT_SEC  the verifier's whole budget, hidden tests included (default: 600,
#                         Harbor's default); Kavach gets what is left less KAVACH_MARGIN_SEC
#   KAVACH_MARGIN_SEC     left unused at the end, for writing results (default: 30)
#   KAVACH_TIMEOUT        a lower limit for `kavach diff` alone, in seconds (default: none)
#
# Order, so that nothing the harness does loses the hidden tests' result:
#   1. The hidden tests run; result.json is written at once, and
#      kavach.json with "incomplete": 1.
#   2. kavach diff runs in this script's process group (timeout
#      --foreground: a harness that kills the group kills it too), within
#      the time left. SIGTERM or SIGINT stops it, keeps result.json and
#      marks Kavach's evidence incomplete (exit 128+N).
#   3. kavach.json is rewritten with Kavach's verdict and figures.
#
# Writes, in OUT_DIR:
#   result.json         the reward alone: {"reward": 1} when the hidden tests pass, else
#                       {"reward": 0}; a harness that takes every key for a reward sees one
#   kavach.json         Kavach's figures and the rest, never a reward:
#                       {"fixed", "red", "unverified", "error", "incomplete", "status",
#                        "exit_status", "hidden_exit_status", "verdict", "report", "budget_sec",
#                        "args", "old", "new", "fixture", "options"}. At most one of fixed
#                       (exit 0), red (exit 1), unverified (exit 3), error (exit 2, or Kavach
#                       missing or killed) and incomplete (timed out, interrupted, not run) is 1.
#                       (exit statuses as strings; options as the report gives them)
#   kavach-report.json  Kavach's full report (absent when Kavach could not grade)
#   kavach.txt          what `kavach diff` printed: the verdict on the first line, then the finding
#   kavach.err          Kavach's messages (why it could not grade)
#
# Exit status: the hidden tests' own (0 when they pass), whatever Kavach says;
# 128+N when stopped by signal N while Kavach ran.
# The hidden tests' output goes to this script's stdout and stderr, as it
# would without Kavach; Kavach's goes only to OUT_DIR.

set -u

if [ $# -ne 0 ] && [ $# -ne 3 ]; then
	echo "usage: verify.sh [OLD NEW FIXTURE] (or set OLD, NEW, FIXTURE; and HIDDEN_TEST_CMD, OUT_DIR)" >&2
	exit 2
fi
if [ $# -eq 3 ]; then
	OLD=$1 NEW=$2 FIXTURE=$3
fi
OLD=${OLD:-} NEW=${NEW:-} FIXTURE=${FIXTURE:-}
OUT_DIR=${OUT_DIR:-verifier-out}
KAVACH=${KAVACH:-kavach}
KAVACH_ARGS=${KAVACH_ARGS:-}
VERIFIER_TIMEOUT_SEC=${VERIFIER_TIMEOUT_SEC:-600}
KAVACH_MARGIN_SEC=${KAVACH_MARGIN_SEC:-30}
KAVACH_TIMEOUT=${KAVACH_TIMEOUT:-0}
if [ -z "${HIDDEN_TEST_CMD:-}" ]; then
	echo "verify.sh: set HIDDEN_TEST_CMD to the command that runs the hidden tests" >&2
	exit 2
fi
started=$SECONDS
mkdir -p "$OUT_DIR" || exit 2
report=$OUT_DIR/kavach-report.json
rm -f "$OUT_DIR"/result.json "$OUT_DIR"/kavach.json "$OUT_DIR"/kavach.txt "$OUT_DIR"/kavach.err "$report"
log() { echo "verify.sh: $*" >&2; }

# write_result REWARD: the reward alone (a harness may take every number
# in the file for a reward).
write_result() {
	printf '{"reward": %d}\n' "$1" >"$OUT_DIR/.result.json.tmp" && mv "$OUT_DIR/.result.json.tmp" "$OUT_DIR/result.json"
}

# json_str S: S as a JSON string.
json_str() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}
	printf '"%s"' "${s//$'\n'/\\n}"
}

# write_kavach STATUS EXIT: kavach.json, Kavach's figures and the rest.
write_kavach() {
	local verdict options rep=null exit=null
	verdict=$(head -n 1 "$OUT_DIR/kavach.txt" 2>/dev/null)
	[ -s "$report" ] && rep=$(json_str "$report")
	[ -n "$2" ] && exit=$(json_str "$2")
	options=$(sed -n '/^  "options": {/,/^  }/p' "$report" 2>/dev/null | sed '1s/^  "options": //' | tr -d '\n\t' | tr -s ' ')
	{
		printf '{"fixed": %d, "red": %d, "unverified": %d, "error": %d, "incomplete": %d,\n' \
			"$fixed" "$red" "$unverified" "$error" "$incomplete"
		printf ' "status": %s, "exit_status": %s, "hidden_exit_status": %s, "verdict": %s, "report": %s,\n' \
			"$(json_str "$1")" "$exit" "$(json_str "$hidden")" "$(json_str "$verdict")" "$rep"
		printf ' "budget_sec": %d, "args": %s, "old": %s, "new": %s, "fixture": %s,\n' \
			"$budget" "$(json_str "$KAVACH_ARGS")" "$(json_str "$OLD")" "$(json_str "$NEW")" "$(json_str "$FIXTURE")"
		options=${options%,}
		printf ' "options": %s}\n' "${options:-null}"
	} >"$OUT_DIR/.kavach.json.tmp" && mv "$OUT_DIR/.kavach.json.tmp" "$OUT_DIR/kavach.json"
}

# 1. The hidden tests: they alone decide the reward, written before Kavach runs.
sh -c "$HIDDEN_TEST_CMD"
hidden=$?
reward=0
[ "$hidden" -eq 0 ] && reward=1
budget=$((VERIFIER_TIMEOUT_SEC - (SECONDS - started) - KAVACH_MARGIN_SEC))
if [ "$KAVACH_TIMEOUT" -gt 0 ] && [ "$KAVACH_TIMEOUT" -lt "$budget" ]; then
	budget=$KAVACH_TIMEOUT
fi
fixed=0 red=0 unverified=0 error=0 incomplete=1
write_result "$reward"
write_kavach "not started" ""

# 2. Kavach, beside them, in this process group, within the time left.
kpid=
stop() {
	trap - TERM INT
	log "stopped by SIG$1 while kavach ran: hidden tests exit $hidden (reward $reward) kept, Kavach's evidence marked incomplete"
	[ -n "$kpid" ] && kill -TERM "$kpid" 2>/dev/null && wait "$kpid"
	write_kavach "interrupted (SIG$1)" ""
	exit $((128 + $2))
}
trap 'stop TERM 15' TERM
trap 'stop INT 2' INT
if [ "$budget" -lt 5 ]; then
	log "hidden tests exit $hidden (reward $reward); kavach: not run, no time left (verifier timeout ${VERIFIER_TIMEOUT_SEC}s, ${KAVACH_MARGIN_SEC}s margin)"
	write_kavach "no time left" ""
	exit "$hidden"
fi
if ! command -v "$KAVACH" >/dev/null 2>&1; then
	echo "verify.sh: $KAVACH: command not found (set KAVACH or put kavach on PATH)" >"$OUT_DIR/kavach.err"
	: >"$OUT_DIR/kavach.txt"
	incomplete=0 error=1
	write_kavach "not found" 127
	log "hidden tests exit $hidden (reward $reward); kavach: $KAVACH not found (exit 127)"
	exit "$hidden"
fi
write_kavach "running" ""
# timeout --foreground stays in this process group (plain timeout makes
# its own, which a harness killing this group would miss).
# shellcheck disable=SC2086 # KAVACH_ARGS is split on purpose
timeout --foreground -s TERM -k 10 "$budget" "$KAVACH" diff $KAVACH_ARGS --out "$report" "$OLD" "$NEW" "$FIXTURE" \
	</dev/null >"$OUT_DIR/kavach.txt" 2>"$OUT_DIR/kavach.err" &
kpid=$!
wait "$kpid"
kavach=$?
kpid=
trap - TERM INT

# 3. Kavach's verdict and figures, beside the reward.
incomplete=0
case $kavach in
0) fixed=1 what=graded ;;
1) red=1 what=graded ;;
3) unverified=1 what=graded ;;
124 | 137) incomplete=1 what="timed out after ${budget}s" ;;
130 | 143) incomplete=1 what=interrupted ;;
*) error=1 what="could not grade" ;; # 2: could not grade; 128+N: killed
esac
write_kavach "$what" "$kavach"

verdict=$(head -n 1 "$OUT_DIR/kavach.txt" 2>/dev/null)
log "hidden tests exit $hidden (reward $reward); kavach: ${verdict:-$what, see $OUT_DIR/kavach.err} (exit $kavach)"
exit "$hidden"
