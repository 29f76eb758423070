#!/usr/bin/env bash
# Kavach's main job on every example under examples/: build the old build
# (a planted bug) and each candidate fix, record the incident afresh
# through `kavach record` with the example's client, then grade every
# candidate two ways — the hidden test written for the failure alone, and
# `kavach diff` — and print the two verdicts side by side.
#
# Builds are cached under ~/.cache/kavach: the first run builds Redis and
# the axum service from Debian's sources (about ten minutes on 2 cores),
# later runs take a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
KAVACH=${KAVACH:-bin/kavach}
start=$SECONDS
for ex in examples/redis-getrange-crash examples/redis-strlen-wrong-answer examples/http-split-panic; do
	t=$SECONDS
	echo "== kavach grade --record $ex"
	"$KAVACH" grade --record "$ex"
	echo "($ex: $((SECONDS - t)) s)"
	echo
done
echo "demo: $((SECONDS - start)) s in all"
