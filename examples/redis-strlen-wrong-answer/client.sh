#!/usr/bin/env bash
# The service around the bug: a greeting is stored, measured, replaced by a
# longer one, read back and measured again (the wrong answer), then a short
# tag. Run against the address in $1 (host:port).
set -euo pipefail
port=${1##*:}
cli() { redis-cli -p "$port" "$@"; }
cli SET greeting "hello"
cli STRLEN greeting
cli SET greeting "hello world, how are you"
cli GET greeting
cli EXPIRE greeting 1000000
cli STRLEN greeting          # the incident: 23 for 24 bytes
cli SET tag "ab"
cli STRLEN tag
