#!/usr/bin/env bash
# test.sh: a Harbor verifier that runs the task's hidden tests, then
# `kavach diff` on the agent's build, and keeps the two apart.
#
# Harbor runs this as `bash /tests/test.sh` in the verifier's container and
# reads /logs/verifier/reward.txt (or reward.json): one number, "reward",
# the hidden tests' alone. Kavach's verdict and figures go to kavach.json
# beside it, never into a reward file.
#
# Order, so that nothing the harness does loses the hidden tests' result:
#   1. Any reward file present before the verifier started is removed, and
#      the removal logged (an agent may have planted one).
#   2. The hidden tests run. The reward is the one they wrote themselves
#      (reward.txt, else reward.json, as Harbor reads them; kept as
#      hidden-reward.txt / hidden-reward.json), or, when they wrote none,
#      1 for exit status 0 and 0 otherwise; an exit status that disagrees
#      with their own reward (exit 0 and reward 0, or a failing exit and
#      reward 1) is logged. reward.txt and reward.json are
#      written at once, before Kavach runs.
#   3. kavach diff runs in this script's process group (so a harness that
#      kills the group kills it too), within the time the verifier has
#      left: Harbor's verifier timeout (VERIFIER_TIMEOUT_SEC, or the first
#      argument, times VERIFIER_TIMEOUT_MULTIPLIER) less what the hidden
#      tests took and a margin.
#   4. kavach.json is rewritten with Kavach's verdict and figures.
# SIGTERM or SIGINT at any point after 2 stops kavach, keeps the reward,
# and marks Kavach's evidence incomplete. Harbor itself, on a verifier
# timeout, reads no reward file at all: the budget is there to finish first.
#
# Harbor gives the verifier neither its timeout nor the job's timeout
# multiplier (it enforces both from outside): task.toml passes timeout_sec
# in [verifier] env, and a job run with a verifier timeout multiplier must
# pass it too (docs/agents.md, "In an evaluation harness").
#
# Every path is an environment variable, so the script runs outside the
# container too (the project's tests run it that way):
#   LOGS_DIR                     /logs/verifier  where Harbor reads rewards
#   HIDDEN_TEST_CMD              bash /tests/hidden_test.sh /app/src/redis-server
#                                                the hidden tests; exit 0 passes
#   KAVACH                       /usr/local/bin/kavach
#   KAVACH_OLD                   /opt/kavach/old/redis-server   the build the incident was recorded on
#   KAVACH_NEW                   /app/src/redis-server          the agent's build
#   KAVACH_FIXTURE               /opt/kavach/incident.kavach    the incident (its floor decides the options)
#   KAVACH_ARGS                  (none)          more flags for kavach diff, split on spaces
#   VERIFIER_TIMEOUT_SEC         600             the task's [verifier] timeout_sec
#   VERIFIER_TIMEOUT_MULTIPLIER  1               the job's verifier timeout multiplier (Harbor's
#                                                verifier_timeout_multiplier, else timeout_multiplier)
#   KAVACH_MARGIN_SEC            30              left unused at the end, for writing results

set -u

LOGS_DIR=${LOGS_DIR:-/logs/verifier}
HIDDEN_TEST_CMD=${HIDDEN_TEST_CMD:-bash /tests/hidden_test.sh /app/src/redis-server}
KAVACH=${KAVACH:-/usr/local/bin/kavach}
KAVACH_OLD=${KAVACH_OLD:-/opt/kavach/old/redis-server}
KAVACH_NEW=${KAVACH_NEW:-/app/src/redis-server}
KAVACH_FIXTURE=${KAVACH_FIXTURE:-/opt/kavach/incident.kavach}
KAVACH_ARGS=${KAVACH_ARGS:-}
VERIFIER_TIMEOUT_SEC=${1:-${VERIFIER_TIMEOUT_SEC:-600}}
VERIFIER_TIMEOUT_MULTIPLIER=${VERIFIER_TIMEOUT_MULTIPLIER:-1}
KAVACH_MARGIN_SEC=${KAVACH_MARGIN_SEC:-30}

started=$SECONDS
mkdir -p "$LOGS_DIR" || exit 2
log() { echo "test.sh: $*" | tee -a "$LOGS_DIR/verifier.log" >&2; }

number='^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'
# Harbor's verifier timeout, as Harbor computes it: timeout_sec times the
# multiplier, in whole seconds (rounded down).
for v in VERIFIER_TIMEOUT_SEC VERIFIER_TIMEOUT_MULTIPLIER; do
	if ! [[ ${!v} =~ $number ]] || awk -v x="${!v}" 'BEGIN { exit !(x <= 0) }'; then
		log "$v=${!v}: want a number above 0 (the task's [verifier] timeout_sec, the job's verifier timeout multiplier)"
		exit 2
	fi
done
timeout_sec=$(awk -v t="$VERIFIER_TIMEOUT_SEC" -v m="$VERIFIER_TIMEOUT_MULTIPLIER" 'BEGIN { printf "%d", t * m }')

# write_reward R: R, the hidden tests' reward, alone, in both files Harbor
# reads (reward.txt first, then reward.json), each replaced whole.
write_reward() {
	printf '{"reward": %s}\n' "$1" >"$LOGS_DIR/.reward.json.tmp" && mv "$LOGS_DIR/.reward.json.tmp" "$LOGS_DIR/reward.json"
	printf '%s\n' "$1" >"$LOGS_DIR/.reward.txt.tmp" && mv "$LOGS_DIR/.reward.txt.tmp" "$LOGS_DIR/reward.txt"
}

# json_str S: S as a JSON string.
json_str() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}
	printf '"%s"' "${s//$'\n'/\\n}"
}

# write_kavach STATUS EXIT: kavach.json, Kavach's figures (0/1 counts and
# the variant counts) and the rest: never a reward.
write_kavach() {
	local verdict options rep=null
	verdict=$(head -n 1 "$LOGS_DIR/kavach.txt" 2>/dev/null)
	[ -s "$report" ] && rep=$(json_str "$report")
	options=$(sed -n '/^  "options": {/,/^  }/p' "$report" 2>/dev/null | sed '1s/^  "options": //' | tr -d '\n\t' | tr -s ' ')
	{
		printf '{"fixed": %d, "red": %d, "unverified": %d, "error": %d, "incomplete": %d, "variants_generated": %d, "variants_reproducing": %d,\n' \
			"$fixed" "$red" "$unverified" "$error" "$incomplete" "${generated:-0}" "${reproducing:-0}"
		printf ' "status": %s, "exit_status": %s, "verdict": %s, "report": %s,\n' \
			"$(json_str "$1")" "${2:-null}" "$(json_str "$verdict")" "$rep"
		printf ' "hidden_exit_status": %d, "reward": %s, "reward_from": %s,\n' "$hidden" "$reward" "$(json_str "$reward_from")"
		printf ' "timeout_sec": %d, "budget_sec": %d, "args": %s, "old": %s, "new": %s, "fixture": %s,\n' \
			"$timeout_sec" "$budget" "$(json_str "$KAVACH_ARGS")" "$(json_str "$KAVACH_OLD")" "$(json_str "$KAVACH_NEW")" "$(json_str "$KAVACH_FIXTURE")"
		options=${options%,}
		printf ' "options": %s}\n' "${options:-null}"
	} >"$LOGS_DIR/.kavach.json.tmp" && mv "$LOGS_DIR/.kavach.json.tmp" "$LOGS_DIR/kavach.json"
}

# 1. No reward but the hidden tests'.
for f in reward.txt reward.json; do
	if [ -e "$LOGS_DIR/$f" ]; then
		log "removed $LOGS_DIR/$f, present before the verifier started ($(wc -c <"$LOGS_DIR/$f") bytes: $(head -c 80 "$LOGS_DIR/$f" | tr -d '\n'))"
		rm -f "$LOGS_DIR/$f"
	fi
done
rm -f "$LOGS_DIR"/kavach.json "$LOGS_DIR"/kavach.txt "$LOGS_DIR"/kavach.err "$LOGS_DIR"/kavach-report.json \
	"$LOGS_DIR"/hidden-reward.txt "$LOGS_DIR"/hidden-reward.json

# 2. The hidden tests decide the reward: the one they wrote, as Harbor
# would read it, else their exit status. Written before Kavach runs.
bash -c "$HIDDEN_TEST_CMD"
hidden=$?
reward= reward_from=
for f in reward.txt reward.json; do
	[ -e "$LOGS_DIR/$f" ] || continue
	mv "$LOGS_DIR/$f" "$LOGS_DIR/hidden-$f"
	if [ -n "$reward" ]; then
		log "the hidden tests wrote $f too: not read, as Harbor would not read it (kept as hidden-$f)"
		continue
	fi
	if [ "$f" = reward.txt ]; then
		value=$(tr -d ' \t\r\n' <"$LOGS_DIR/hidden-$f")
	else
		value=$(tr -d '\n' <"$LOGS_DIR/hidden-$f" | grep -o -E '"reward"[[:space:]]*:[[:space:]]*-?[0-9][0-9.eE+-]*' | head -n 1 | sed 's/.*:[[:space:]]*//')
	fi
	if [[ $value =~ $number ]]; then
		reward=$value reward_from=$f
	else
		reward=0 reward_from="$f (unreadable)"
		log "the hidden tests wrote $f with no readable reward ($(head -c 80 "$LOGS_DIR/hidden-$f" | tr -d '\n')): reward 0"
	fi
done
if [ -z "$reward" ]; then
	reward=0 reward_from="exit status"
	[ "$hidden" -eq 0 ] && reward=1
# A disagreement: a pass by exit status with no reward, or a failure by
# exit status with the full reward (a partial reward is neither).
elif awk -v r="$reward" -v e="$hidden" 'BEGIN { exit !((e == 0 && r <= 0) || (e != 0 && r >= 1)) }'; then
	log "the hidden tests disagree with themselves: exit status $hidden, but their $reward_from says reward $reward; their $reward_from decides"
fi
fixed=0 red=0 unverified=0 error=0 incomplete=1 generated=0 reproducing=0
report=$LOGS_DIR/kavach-report.json
budget=$((timeout_sec - (SECONDS - started) - KAVACH_MARGIN_SEC))
write_reward "$reward"
write_kavach "not started" ""
log "hidden tests exit $hidden: reward $reward from their $reward_from (written to $LOGS_DIR/reward.txt and reward.json)"

# 3. Kavach, in this process group, within the time left.
kpid=
stop() {
	trap - TERM INT
	log "stopped by SIG$1 while kavach ran: reward $reward kept, Kavach's evidence marked incomplete"
	[ -n "$kpid" ] && kill -TERM "$kpid" 2>/dev/null && wait "$kpid"
	write_kavach "interrupted (SIG$1)" ""
	exit $((128 + $2))
}
trap 'stop TERM 15' TERM
trap 'stop INT 2' INT
plan="Harbor's verifier timeout ${VERIFIER_TIMEOUT_SEC}s x ${VERIFIER_TIMEOUT_MULTIPLIER} = ${timeout_sec}s, ${KAVACH_MARGIN_SEC}s margin"
if [ "$budget" -lt 5 ]; then
	log "no time left for kavach ($plan): not run"
	write_kavach "no time left" ""
	exit 0
fi
if ! command -v "$KAVACH" >/dev/null 2>&1; then
	log "$KAVACH: not found"
	echo "$KAVACH: not found" >"$LOGS_DIR/kavach.err"
	incomplete=0 error=1
	write_kavach "not found" ""
	exit 0
fi
log "kavach diff: ${budget}s ($plan)"
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

# 4. Kavach's verdict and figures, beside the reward.
incomplete=0
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
write_kavach "$what" "$status"
line=$(head -n 1 "$LOGS_DIR/kavach.txt" 2>/dev/null)
[ -z "$line" ] && line=$(tail -n 1 "$LOGS_DIR/kavach.err" 2>/dev/null)
log "kavach: ${what}: ${line} (exit $status); results in $LOGS_DIR/kavach.json"
exit 0
