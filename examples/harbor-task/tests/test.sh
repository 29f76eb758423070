#!/usr/bin/env bash
# test.sh: a Harbor verifier that runs the task's hidden tests, then
# `kavach diff` on the agent's build, and keeps the two apart.
#
# Harbor runs this as `bash /tests/test.sh` in the verifier's container and
# reads /logs/verifier/reward.json, where every numeric key is a reward.
# The hidden tests alone decide "reward"; Kavach's verdict is added as
# 0/1 counts beside it, never merged into it.
#
# Order, so that nothing the harness does loses the hidden tests' result:
#   1. Any reward file present before the verifier started is removed, and
#      the removal logged (an agent may have planted one).
#   2. The hidden tests run; reward.json is written at once, with
#      kavach_incomplete 1: if the verifier is killed from here on, the
#      reward stands and Kavach's evidence is marked incomplete.
#   3. kavach diff runs in this script's process group (so a harness that
#      kills the group kills it too), within the time the verifier has
#      left: VERIFIER_TIMEOUT_SEC (or the first argument) less what the
#      hidden tests took and a margin.
#   4. reward.json is rewritten with Kavach's numbers; kavach.json beside
#      it holds the rest (status, verdict, options, report path).
# SIGTERM or SIGINT at any point after 2 stops kavach, keeps the reward,
# and marks the evidence incomplete.
#
# Every path is an environment variable, so the script runs outside the
# container too (the project's tests run it that way):
#   LOGS_DIR              /logs/verifier        where Harbor reads rewards
#   HIDDEN_TEST_CMD       bash /tests/hidden_test.sh /app/src/redis-server
#                                               the hidden tests; exit 0 passes
#   KAVACH                /usr/local/bin/kavach
#   KAVACH_OLD            /opt/kavach/old/redis-server   the build the incident was recorded on
#   KAVACH_NEW            /app/src/redis-server          the agent's build
#   KAVACH_FIXTURE        /opt/kavach/incident.kavach    the incident (its floor decides the options)
#   KAVACH_ARGS           (none)                more flags for kavach diff, split on spaces
#   VERIFIER_TIMEOUT_SEC  600                   the task's [verifier] timeout_sec
#   KAVACH_MARGIN_SEC     30                    left unused at the end, for writing results

set -u

LOGS_DIR=${LOGS_DIR:-/logs/verifier}
HIDDEN_TEST_CMD=${HIDDEN_TEST_CMD:-bash /tests/hidden_test.sh /app/src/redis-server}
KAVACH=${KAVACH:-/usr/local/bin/kavach}
KAVACH_OLD=${KAVACH_OLD:-/opt/kavach/old/redis-server}
KAVACH_NEW=${KAVACH_NEW:-/app/src/redis-server}
KAVACH_FIXTURE=${KAVACH_FIXTURE:-/opt/kavach/incident.kavach}
KAVACH_ARGS=${KAVACH_ARGS:-}
VERIFIER_TIMEOUT_SEC=${1:-${VERIFIER_TIMEOUT_SEC:-600}}
KAVACH_MARGIN_SEC=${KAVACH_MARGIN_SEC:-30}

started=$SECONDS
mkdir -p "$LOGS_DIR" || exit 2
log() { echo "test.sh: $*" | tee -a "$LOGS_DIR/verifier.log" >&2; }

# write_rewards REWARD FIXED RED UNVERIFIED ERROR INCOMPLETE GENERATED REPRODUCING
# Numbers only: Harbor takes every numeric key for a reward, so nothing
# here is an exit status or an option.
write_rewards() {
	printf '{"reward": %d, "kavach_fixed": %d, "kavach_red": %d, "kavach_unverified": %d, "kavach_error": %d, "kavach_incomplete": %d, "kavach_variants_generated": %d, "kavach_variants_reproducing": %d}\n' \
		"$@" >"$LOGS_DIR/.reward.json.tmp" && mv "$LOGS_DIR/.reward.json.tmp" "$LOGS_DIR/reward.json"
}

# json_str S: S as a JSON string.
json_str() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}
	printf '"%s"' "${s//$'\n'/\\n}"
}

# write_kavach STATUS EXIT: kavach.json, what the rewards cannot hold.
write_kavach() {
	local verdict options rep=null
	verdict=$(head -n 1 "$LOGS_DIR/kavach.txt" 2>/dev/null)
	[ -s "$report" ] && rep=$(json_str "$report")
	options=$(sed -n '/^  "options": {/,/^  }/p' "$report" 2>/dev/null | sed '1s/^  "options": //' | tr -d '\n\t' | tr -s ' ')
	{
		printf '{"status": %s, "exit_status": %s, "verdict": %s, "report": %s,\n' \
			"$(json_str "$1")" "${2:-null}" "$(json_str "$verdict")" "$rep"
		printf ' "budget_sec": %d, "args": %s, "old": %s, "new": %s, "fixture": %s,\n' \
			"$budget" "$(json_str "$KAVACH_ARGS")" "$(json_str "$KAVACH_OLD")" "$(json_str "$KAVACH_NEW")" "$(json_str "$KAVACH_FIXTURE")"
		options=${options%,}
		printf ' "options": %s}\n' "${options:-null}"
	} >"$LOGS_DIR/.kavach.json.tmp" && mv "$LOGS_DIR/.kavach.json.tmp" "$LOGS_DIR/kavach.json"
}

# 1. No reward but ours.
for f in reward.txt reward.json; do
	if [ -e "$LOGS_DIR/$f" ]; then
		log "removed $LOGS_DIR/$f, present before the verifier started ($(wc -c <"$LOGS_DIR/$f") bytes: $(head -c 80 "$LOGS_DIR/$f" | tr -d '\n'))"
		rm -f "$LOGS_DIR/$f"
	fi
done
rm -f "$LOGS_DIR"/kavach.json "$LOGS_DIR"/kavach.txt "$LOGS_DIR"/kavach.err "$LOGS_DIR"/kavach-report.json

# 2. The hidden tests decide the reward, written before Kavach runs.
bash -c "$HIDDEN_TEST_CMD"
hidden=$?
reward=0
[ "$hidden" -eq 0 ] && reward=1
for f in reward.txt reward.json; do
	if [ -e "$LOGS_DIR/$f" ]; then
		log "removed $LOGS_DIR/$f, written by the hidden tests: their exit status ($hidden) is the reward"
		rm -f "$LOGS_DIR/$f"
	fi
done
report=$LOGS_DIR/kavach-report.json
budget=$((VERIFIER_TIMEOUT_SEC - (SECONDS - started) - KAVACH_MARGIN_SEC))
write_rewards "$reward" 0 0 0 0 1 0 0
write_kavach "not started" ""
log "hidden tests exit $hidden: reward $reward (written to $LOGS_DIR/reward.json)"

# 3. Kavach, in this process group, within the time left.
kpid=
stop() {
	trap - TERM INT
	log "stopped by SIG$1 while kavach ran: reward $reward kept, Kavach's evidence marked incomplete"
	[ -n "$kpid" ] && kill -TERM "$kpid" 2>/dev/null && wait "$kpid"
	write_kavach "interrupted (SIG$1)" ""
	write_rewards "$reward" 0 0 0 0 1 0 0
	exit $((128 + $2))
}
trap 'stop TERM 15' TERM
trap 'stop INT 2' INT
if [ "$budget" -lt 5 ]; then
	log "no time left for kavach (verifier timeout ${VERIFIER_TIMEOUT_SEC}s, ${KAVACH_MARGIN_SEC}s margin): not run"
	write_kavach "no time left" ""
	exit 0
fi
if ! command -v "$KAVACH" >/dev/null 2>&1; then
	log "$KAVACH: not found"
	echo "$KAVACH: not found" >"$LOGS_DIR/kavach.err"
	write_kavach "not found" ""
	write_rewards "$reward" 0 0 0 1 0 0 0
	exit 0
fi
write_kavach "running" ""
# timeout --foreground stays in this process group (plain timeout makes
# its own, which a harness killing this group would miss).
# shellcheck disable=SC2086 # KAVACH_ARGS is split on purpose
timeout --foreground -s TERM -k 10 "$budget" "$KAVACH" diff $KAVACH_ARGS --out "$report" \
	"$KAVACH_OLD" "$KAVACH_NEW" "$KAVACH_FIXTURE" </dev/null >"$LOGS_DIR/kavach.txt" 2>"$LOGS_DIR/kavach.err" &
kpid=$!
wait "$kpid"
status=$?
kpid=
trap - TERM INT

# 4. Kavach's numbers beside the reward.
fixed=0 red=0 unverified=0 error=0 incomplete=0 generated=0 reproducing=0
case $status in
0) fixed=1 what=graded ;;
1) red=1 what=graded ;;
3) unverified=1 what=graded ;;
124 | 137) incomplete=1 what="timed out after ${budget}s" ;;
130 | 143) incomplete=1 what="interrupted" ;;
*) error=1 what="could not grade" ;;
esac
if [ -s "$report" ]; then
	generated=$(grep -m 1 -o '"generated": [0-9]*' "$report" | grep -o '[0-9]*$')
	reproducing=$(grep -m 1 -o '"reproducing": [0-9]*' "$report" | grep -o '[0-9]*$')
fi
write_rewards "$reward" "$fixed" "$red" "$unverified" "$error" "$incomplete" "${generated:-0}" "${reproducing:-0}"
write_kavach "$what" "$status"
line=$(head -n 1 "$LOGS_DIR/kavach.txt" 2>/dev/null)
[ -z "$line" ] && line=$(tail -n 1 "$LOGS_DIR/kavach.err" 2>/dev/null)
log "kavach: ${what}: ${line} (exit $status); results in $LOGS_DIR"
exit 0
