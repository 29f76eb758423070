#!/usr/bin/env bash
# verify.sh: a harness verifier that runs the hidden tests and `kavach diff`
# side by side. The hidden tests alone decide the reward and this script's
# exit status; Kavach's verdict is recorded beside them, never merged in.
#
# Usage: verify.sh [OLD NEW FIXTURE]
#
# Inputs (arguments override the environment):
#   OLD              the old build: the one the incident was recorded on
#   NEW              the new build: the candidate fix
#   FIXTURE          the incident, recorded with `kavach record`
#   HIDDEN_TEST_CMD  the hidden tests, run with `sh -c` in the current directory (required)
#   OUT_DIR          where the results go (default: ./verifier-out)
#   KAVACH           the kavach command (default: kavach on PATH)
#   KAVACH_ARGS      more flags for `kavach diff`, split on spaces (e.g. "--variants 32 -j 2")
#   KAVACH_TIMEOUT   seconds before `kavach diff` is stopped (default: 900; 0: no limit)
#
# Writes, in OUT_DIR:
#   result.json         numbers only, e.g.
#                       {"reward": 1, "hidden_exit_status": 0, "kavach_fixed": 0, "kavach_red": 1,
#                        "kavach_unverified": 0, "kavach_error": 0, "kavach_exit_status": 1}
#                       reward: 1 when the hidden tests pass, else 0. Exactly one of kavach_fixed
#                       (exit 0), kavach_red (exit 1), kavach_unverified (exit 3) and kavach_error
#                       (exit 2, or Kavach missing, killed or timed out) is 1.
#   kavach-report.json  Kavach's full report (absent when Kavach could not grade)
#   kavach.txt          what `kavach diff` printed: the verdict on the first line, then the finding
#   kavach.err          Kavach's messages (why it could not grade)
#
# Exit status: the hidden tests' own (0 when they pass), whatever Kavach says.
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
KAVACH_TIMEOUT=${KAVACH_TIMEOUT:-900}
if [ -z "${HIDDEN_TEST_CMD:-}" ]; then
	echo "verify.sh: set HIDDEN_TEST_CMD to the command that runs the hidden tests" >&2
	exit 2
fi
mkdir -p "$OUT_DIR" || exit 2

# 1. The hidden tests: they alone decide the reward.
sh -c "$HIDDEN_TEST_CMD"
hidden=$?
reward=0
if [ "$hidden" -eq 0 ]; then
	reward=1
fi

# 2. Kavach, beside them: its status is recorded, never acted on.
report=$OUT_DIR/kavach-report.json
rm -f "$report"
limit=()
if [ "$KAVACH_TIMEOUT" != 0 ] && command -v timeout >/dev/null 2>&1; then
	limit=(timeout --kill-after=30 "$KAVACH_TIMEOUT")
fi
if command -v "$KAVACH" >/dev/null 2>&1; then
	# shellcheck disable=SC2086 # KAVACH_ARGS is split on purpose
	"${limit[@]}" "$KAVACH" diff $KAVACH_ARGS --out "$report" "$OLD" "$NEW" "$FIXTURE" \
		</dev/null >"$OUT_DIR/kavach.txt" 2>"$OUT_DIR/kavach.err"
	kavach=$?
else
	echo "verify.sh: $KAVACH: command not found (set KAVACH or put kavach on PATH)" >"$OUT_DIR/kavach.err"
	: >"$OUT_DIR/kavach.txt"
	kavach=127
fi
fixed=0 red=0 unverified=0 error=0
case $kavach in
0) fixed=1 ;;
1) red=1 ;;
3) unverified=1 ;;
*) error=1 ;; # 2: could not grade; 124: timed out; 127: not found; 128+N: killed
esac

# 3. Both results, side by side, numbers only.
printf '{"reward": %d, "hidden_exit_status": %d, "kavach_fixed": %d, "kavach_red": %d, "kavach_unverified": %d, "kavach_error": %d, "kavach_exit_status": %d}\n' \
	"$reward" "$hidden" "$fixed" "$red" "$unverified" "$error" "$kavach" >"$OUT_DIR/result.json.tmp" &&
	mv "$OUT_DIR/result.json.tmp" "$OUT_DIR/result.json"

verdict=$(head -n 1 "$OUT_DIR/kavach.txt" 2>/dev/null)
echo "verify.sh: hidden tests exit $hidden (reward $reward); kavach: ${verdict:-could not grade, see $OUT_DIR/kavach.err} (exit $kavach)" >&2
exit "$hidden"
