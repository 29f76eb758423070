#!/usr/bin/env bash
# The cost of taking a running service's state (issue 39, item 4): a
# redis-server filled with SIZE_MB of data (random values, so that the
# service's data file is as large as its memory), and `kavach record
# --upstream` in front of it. Four parts, all in this run:
#
# 1. Recording. A short session (GET key:1, SET bench:x y through the proxy
#    with redis-cli, then SIGINT) recorded in the default mode (a snapshot
#    through the replication handshake, cut at the end to the keys the
#    recording names) and with --state-whole, beside `redis-cli --rdb` (the
#    same handshake, written to a file). For each: the snapshot's time
#    (from the start to the recorder's "clients connect to" line), of which
#    the service's BGSAVE (from its log), the end (SIGINT to exit: the cut
#    or the whole data file written into the fixture), the recorder's peak
#    RSS (its own VmHWM, sampled every 0.1 s; and /usr/bin/time -v's
#    "Maximum resident set size", which also counts the scratch
#    redis-server the recorder starts and reaps), the fixture's size and
#    its state line.
# 2. Proxied traffic. redis-benchmark -c 1 -P 1 -t set,get -n N through
#    bench/plainproxy, `kavach record --state none`, `kavach record`
#    (default mode, after its snapshot, watching the service's feed) and
#    `kavach record --no-watch`, all in front of the filled
#    service; and how long the proxy serves nobody (a client connecting
#    1 s after the start, and from then on every 0.05 s until served).
# 3. Replay start. `kavach replay --runs 1` of the 2-step fixture cut from
#    the snapshot, of the same session recorded with --state none in front
#    of an empty server, and of the --state-whole fixture (the `wall` line
#    it prints, from starting the build to the last step, and the whole
#    process); beside redis-server loading the same data file itself (to
#    its first PONG). Once, the whole fixture with the default
#    --start-timeout.
# 4. First-touch. One redis-cli reading K GETs of distinct existing keys
#    from stdin (one round trip each), through `kavach record --state
#    first-touch` and `--state none`; the client's wall time, and the
#    extra time per key.
#
# Every measurement is repeated (REPS, FT_REPS), interleaved, and the
# median is reported. Exits 1 when a kavach command fails, a replay does
# not reproduce its recording, a default-mode recording (parts 1 and 2) was
# not cut (it fell back to keeping the whole data file), or first-touch did
# not capture the K keys; a figure beside its target is only reported.
#
# Environment:
#   SIZE_MB  data the service holds, in MB of values (default 1000: 1,000,000 keys of VALUE bytes)
#   VALUE    bytes of each value (default 1000; a multiple of 4)
#   N        requests per redis-benchmark test in part 2 (default 20000)
#   K        distinct keys of part 4's session (default 5000)
#   REPS     repetitions in parts 1 to 3 (default 3)
#   FT_REPS  repetitions in part 4 (default 7)
#   REPLAY_START_TIMEOUT  --start-timeout of the replays in part 3 (default 600s)
#   PARTS    which parts to run (default "record traffic replay firsttouch"; replay needs record)
#   KAVACH_BIN  a kavach built elsewhere (default: built from this tree into the temporary directory)
#   KEEP=1   keep the temporary directory (GBs: the data files) and print it
set -euo pipefail

SIZE_MB=${SIZE_MB:-1000}
VALUE=${VALUE:-1000}
N=${N:-20000}
K=${K:-5000}
REPS=${REPS:-3}
FT_REPS=${FT_REPS:-7}
REPLAY_START_TIMEOUT=${REPLAY_START_TIMEOUT:-600s}
PARTS=${PARTS:-record traffic replay firsttouch}
KEEP=${KEEP:-0}
part() { [[ " $PARTS " == *" $1 "* ]]; }
if part replay && ! part record; then
	PARTS="record $PARTS" # part 3 replays part 1's fixtures
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

for cmd in go redis-server redis-cli redis-benchmark base64 python3 /usr/bin/time; do
	command -v "$cmd" >/dev/null || {
		echo "state.sh: $cmd not found (apt-get install -y redis-server redis-tools time python3)" >&2
		exit 1
	}
done
if [ $((VALUE % 4)) != 0 ]; then
	echo "state.sh: VALUE=$VALUE: want a multiple of 4 (values are base64 of VALUE*3/4 random bytes)" >&2
	exit 1
fi
KEYS=$((SIZE_MB * 1000000 / VALUE))
if [ "$K" -gt "$KEYS" ]; then
	echo "state.sh: K=$K is more than the $KEYS keys the service holds" >&2
	exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-bench-state.XXXXXX")
# The service's data file, its snapshot beside each fixture, whole
# fixtures, redis-cli --rdb's copy and a replay's copy: about six times
# SIZE_MB at the most.
need_kb=$((SIZE_MB * 1000 * 6))
avail_kb=$(df -Pk "$TMP" | awk 'NR == 2 { print $4 }')
if [ "$avail_kb" -lt "$need_kb" ]; then
	echo "state.sh: $TMP has $((avail_kb / 1024)) MiB free, needs about $((need_kb / 1024)) MiB (6 x SIZE_MB): set TMPDIR or a smaller SIZE_MB" >&2
	rmdir "$TMP"
	exit 1
fi
export TMPDIR=$TMP # kavach's scratch and replay directories too, removed with it

PIDS=()     # long-lived processes started here (servers, the plain proxy)
CUR=""      # the running foreground job (a replay, a client), if any
TPID=""     # the running /usr/bin/time wrapping kavach record, if any
KPID=""     # the running kavach record, if any
SAMPLER=""  # the running VmHWM sampler, if any

cleanup() {
	local rc=$?
	set +e
	[ "$rc" != 0 ] && echo "state.sh: stopping on status $rc" >&2
	[ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then
		kill -INT "$KPID" 2>/dev/null
		# /usr/bin/time ignores SIGINT and waits for it
		wait "$TPID" 2>/dev/null
	fi
	if [ -n "$CUR" ] && kill -0 "$CUR" 2>/dev/null; then
		kill -INT "$CUR" 2>/dev/null
		wait "$CUR" 2>/dev/null
	fi
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	if [ "$KEEP" = 1 ]; then
		echo "state.sh: kept $TMP ($(du -sh "$TMP" | cut -f1))" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
# bash 5.2 can fail to run a trap that interrupts a command substitution
# inside a double-quoted string and exit 2 instead of 130 (cleanup still
# runs): the measuring loops assign command substitutions to variables first.
on_signal() {
	echo "state.sh: interrupted" >&2
	exit 130
}
trap on_signal INT TERM

log() { echo "state.sh: $*" >&2; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
since() { calc "%.3f" "$(now) - $1"; }

# seconds DURATION prints a Go duration ("133ms", "27.7s", "1m2s") in seconds.
seconds() {
	python3 -c '
import re, sys
units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
parts = re.findall(r"([0-9.]+)(ms|us|µs|ns|h|m|s)", sys.argv[1])
if not parts: sys.exit("not a duration: " + sys.argv[1])
print("%.6f" % sum(float(v) * units[u] for v, u in parts))' "$1"
}

# free_port prints a loopback port nothing listens on, below the
# ephemeral range so that no client connection is given it meanwhile.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# wait_pong PORT PID waits until redis-server PID on PORT answers PING (not
# LOADING), failing if it dies.
wait_pong() {
	local port=$1 pid=$2
	while :; do
		if [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { log "redis-server $pid died before answering on $port"; return 1; }
		sleep 0.05
	done
}

# start_server NAME PORT: a redis-server with persistence off, its
# directory $TMP/NAME; sets SPID.
start_server() {
	local name=$1 port=$2
	mkdir -p "$TMP/$name"
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
		--daemonize no --dir "$TMP/$name" --logfile "$TMP/$name/redis.log" &
	SPID=$!
	PIDS+=("$SPID")
	wait_pong "$port" "$SPID"
}

# median FILE KEY prints the median of the values of lines "KEY VALUE" in FILE.
median() {
	awk -v k="$2" '$1 == k { print $2 }' "$1" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# runs FILE KEY FORMAT prints every value of KEY, in the order measured.
runs() { awk -v k="$2" -v f="$3" '$1 == k { printf f " ", $2 }' "$1"; }

# bgsave_secs LOG FROM prints how long the service's BGSAVE for a SYNC took
# after line FROM of its log (from its timestamps).
bgsave_secs() {
	awk -v from="$2" '
		function t(s, a) { split(s, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
		NR > from && /Starting BGSAVE for SYNC/ { s = t($5) }
		NR > from && /Background saving terminated with success|Background RDB transfer terminated with success/ { e = t($5) }
		END { if (s != "" && e != "") printf "%.1f", e - s; else print "nan" }' "$1"
}

# ---- build, fill

if [ -n "${KAVACH_BIN:-}" ]; then
	KAVACH=$KAVACH_BIN
else
	KAVACH=$TMP/kavach
	log "building kavach and the plain proxy into $TMP"
	go build -o "$KAVACH" ./cmd/kavach
fi
go build -o "$TMP/plainproxy" ./bench/plainproxy

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T_ALL=$(now)
RPORT=$(free_port)
start_server big "$RPORT"
RPID=$SPID
RLOG=$TMP/big/redis.log
log "redis-server $(redis-server --version | grep -o 'v=[^ ]*') on 127.0.0.1:$RPORT (pid $RPID): filling it with $KEYS keys of $VALUE random bytes"
# Random bytes in base64: neither the service's data file (LZF) nor the
# fixture's zstd makes much of them smaller, as with real data already
# compressed. (DEBUG POPULATE's values are zeros after a prefix: its data
# file is about 4% of its memory, and would not test a large snapshot.)
t0=$(now)
head -c $((KEYS * VALUE / 4 * 3)) /dev/urandom | base64 -w "$VALUE" |
	awk '{ k = "key:" (NR - 1); printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length($0), $0 }' |
	redis-cli -p "$RPORT" --pipe >"$TMP/fill.log" 2>&1 || {
	log "filling the service failed:"
	tail -5 "$TMP/fill.log" >&2
	exit 1
}
FILL_S=$(since "$t0")
HELD=$(redis-cli -p "$RPORT" DBSIZE)
USED=$(redis-cli -p "$RPORT" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" { printf "%.0f", $2 / 1048576 }')
log "filled in $FILL_S s: $HELD keys, used_memory $USED MiB"
[ "$HELD" = "$KEYS" ] || { log "the service holds $HELD keys, not $KEYS"; exit 1; }

bad=0
fail() {
	log "$*"
	bad=1
}

# ---- recording helpers

# record_start NAME ARGS...: starts kavach record (under /usr/bin/time -v)
# in front of the filled service, into $TMP/NAME.kavach, its stderr in
# $TMP/NAME.log; sets TPID, KPID, KPORT, KT0 and starts the VmHWM sampler.
record_start() {
	local name=$1
	shift
	KPORT=$(free_port)
	KT0=$(now)
	/usr/bin/time -v -o "$TMP/$name.time" "$KAVACH" record --protocol resp --upstream "127.0.0.1:${UPORT:-$RPORT}" \
		--listen "127.0.0.1:$KPORT" --out "$TMP/$name.kavach" "$@" 2>"$TMP/$name.log" &
	TPID=$!
	KPID=""
	while [ -z "$KPID" ]; do
		KPID=$(cat "/proc/$TPID/task/$TPID/children" 2>/dev/null || true)
		KPID=${KPID%% *}
		[ -n "$KPID" ] || kill -0 "$TPID" 2>/dev/null || { log "kavach record ($name) did not start"; cat "$TMP/$name.log" >&2; exit 1; }
		[ -n "$KPID" ] || sleep 0.01
	done
	: >"$TMP/$name.hwm"
	(
		while [ -r "/proc/$KPID/status" ]; do
			awk '$1 == "VmHWM:" { print $2 }' "/proc/$KPID/status" >>"$TMP/$name.hwm" 2>/dev/null || true
			sleep 0.1
		done
	) &
	SAMPLER=$!
}

# record_ready NAME: waits for the "clients connect to" line; sets READY_S.
record_ready() {
	local name=$1
	while ! grep -q "clients connect to" "$TMP/$name.log"; do
		if ! kill -0 "$KPID" 2>/dev/null; then
			log "kavach record ($name) exited before serving:"
			cat "$TMP/$name.log" >&2
			exit 1
		fi
		sleep 0.05
	done
	READY_S=$(since "$KT0")
}

# record_stop NAME: SIGINT, waits; sets END_S (SIGINT to exit), HWM_MB
# (the recorder's own peak), TIME_MB (/usr/bin/time's), FX_MB, STATE (its
# state line).
record_stop() {
	local name=$1 t0 rc=0
	t0=$(now)
	kill -INT "$KPID"
	wait "$TPID" || rc=$?
	END_S=$(since "$t0")
	TPID="" KPID=""
	wait "$SAMPLER" 2>/dev/null || true
	SAMPLER=""
	if [ "$rc" != 0 ]; then
		log "kavach record ($name) exited with status $rc:"
		cat "$TMP/$name.log" >&2
		exit 1
	fi
	HWM_MB=$(sort -g "$TMP/$name.hwm" | tail -1 | awk '{ printf "%.1f", $1 / 1024 }')
	TIME_MB=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$TMP/$name.time")
	FX_MB=$(stat -c %s "$TMP/$name.kavach" | awk '{ printf "%.3f", $1 / 1048576 }')
	STATE=$(grep -o 'state: .*' "$TMP/$name.log" | head -1 || echo "state: (none printed)")
}

# session PORT: the 2-step session of parts 1 and 3.
session() {
	redis-cli -p "$1" GET key:1 >/dev/null
	redis-cli -p "$1" SET bench:x y >/dev/null
}

# ---- 1. recording

A=$TMP/part1   # "what value" lines
: >"$A"
CUT_FX="" WHOLE_FX="" CUT_OK=0 CUT_RUNS=0
if part record; then
	for rep in $(seq "$REPS"); do
		# redis-cli --rdb: the same handshake, the service streaming it
		# (redis-cli announces EOF: diskless, after repl-diskless-sync-delay)
		log "rep $rep/$REPS, recording: redis-cli --rdb"
		from=$(wc -l <"$RLOG")
		t0=$(now)
		redis-cli -p "$RPORT" --rdb "$TMP/cli.rdb" >"$TMP/cli-rdb.log" 2>&1 &
		CUR=$!
		wait "$CUR" || { log "redis-cli --rdb failed:"; cat "$TMP/cli-rdb.log" >&2; exit 1; }
		CUR=""
		echo "cli.snap $(since "$t0")" >>"$A"
		echo "cli.bgsave $(bgsave_secs "$RLOG" "$from")" >>"$A"
		RDB_MB=$(stat -c %s "$TMP/cli.rdb" | awk '{ printf "%.1f", $1 / 1048576 }')
		rm -f "$TMP/cli.rdb"

		for mode in cut whole; do
			name=rec-$mode-$rep
			args=()
			[ "$mode" = whole ] && args=(--state-whole)
			log "rep $rep/$REPS, recording: kavach record ${args[*]:-(default)}"
			from=$(wc -l <"$RLOG")
			record_start "$name" "${args[@]}"
			record_ready "$name"
			session "$KPORT"
			record_stop "$name"
			{
				echo "$mode.snap $READY_S"
				echo "$mode.bgsave $(bgsave_secs "$RLOG" "$from")"
				echo "$mode.end $END_S"
				echo "$mode.hwm $HWM_MB"
				echo "$mode.time $TIME_MB"
				echo "$mode.fx $FX_MB"
			} >>"$A"
			echo "$mode.state $rep: $STATE" >>"$TMP/states"
			if [ "$mode" = cut ]; then
				CUT_RUNS=$((CUT_RUNS + 1))
				# Part 3 replays the last one cut (or, if none is, the last one).
				if [[ "$STATE" == *"cut to the keys"* ]]; then
					CUT_OK=$((CUT_OK + 1))
					[ -n "$CUT_FX" ] && rm -f "$CUT_FX"
					CUT_FX=$TMP/$name.kavach
				else
					log "the default mode was not cut: $STATE"
					if [ "$CUT_OK" = 0 ]; then
						[ -n "$CUT_FX" ] && rm -f "$CUT_FX"
						CUT_FX=$TMP/$name.kavach
					else
						rm -f "$TMP/$name.kavach"
					fi
				fi
			else
				[ -n "$WHOLE_FX" ] && rm -f "$WHOLE_FX"
				WHOLE_FX=$TMP/$name.kavach
			fi
		done
	done
	[ "$CUT_OK" = "$CUT_RUNS" ] || fail "$((CUT_RUNS - CUT_OK)) of $CUT_RUNS default-mode recordings were not cut (they kept the whole data file): see their state lines"
fi

# ---- 2. proxied traffic

B=$TMP/part2   # "path set get" lines
: >"$B"
W=$TMP/wait    # "what value" lines
TCUT_OK=0 TCUT_RUNS=0
: >"$W"
: >"$TMP/probes"
# bench PORT prints "SET_RPS GET_RPS".
bench() {
	local port=$1 out
	out=$(timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -c 1 -P 1 -n "$N" -t set,get -q --csv 2>>"$TMP/redis-benchmark.log") || {
		log "redis-benchmark on port $port failed (status $?):"
		tail -5 "$TMP/redis-benchmark.log" >&2
		return 1
	}
	awk -F'"' '$2 == "SET" { s = $4 } $2 == "GET" { g = $4 } END { if (s == "" || g == "") exit 1; print s, g }' <<<"$out" || {
		log "redis-benchmark on port $port gave no SET/GET figures:"
		echo "$out" >&2
		return 1
	}
}
if part traffic; then
	PPORT=$(free_port)
	"$TMP/plainproxy" -listen "127.0.0.1:$PPORT" -upstream "127.0.0.1:$RPORT" 2>"$TMP/plainproxy.log" &
	PIDS+=("$!")
	while ! (exec 3<>"/dev/tcp/127.0.0.1/$PPORT") 2>/dev/null; do sleep 0.05; done
	for rep in $(seq "$REPS"); do
		for path in plain none snapshot nowatch; do
			log "rep $rep/$REPS, traffic: $path"
			case $path in
			plain)
				figures=$(bench "$PPORT")
				;;
			none)
				record_start "traffic-none-$rep" --state none
				record_ready "traffic-none-$rep"
				figures=$(bench "$KPORT")
				record_stop "traffic-none-$rep"
				rm -f "$TMP/traffic-none-$rep.kavach"
				;;
			snapshot)
				record_start "traffic-snap-$rep"
				# A client 1 s after the start, then every 0.05 s until served.
				sleep 1
				first=$(redis-cli -p "$KPORT" PING 2>&1 || true)
				echo "$rep $first" >>"$TMP/probes"
				tries=1
				while [ "$(redis-cli -p "$KPORT" PING 2>/dev/null || true)" != PONG ]; do
					kill -0 "$KPID" 2>/dev/null || { log "kavach record exited:"; cat "$TMP/traffic-snap-$rep.log" >&2; exit 1; }
					tries=$((tries + 1))
					sleep 0.05
				done
				echo "served $(since "$KT0")" >>"$W"
				echo "tries $tries" >>"$W"
				record_ready "traffic-snap-$rep"
				echo "ready $READY_S" >>"$W"
				figures=$(bench "$KPORT")
				record_stop "traffic-snap-$rep"
				echo "end $END_S" >>"$W"
				echo "snapshot.state $rep: $STATE" >>"$TMP/states"
				TCUT_RUNS=$((TCUT_RUNS + 1))
				if [[ "$STATE" == *"cut to the keys"* ]]; then
					TCUT_OK=$((TCUT_OK + 1))
				else
					fail "a default-mode recording was not cut (it kept the whole data file): $STATE"
				fi
				rm -f "$TMP/traffic-snap-$rep.kavach"
				;;
			nowatch)
				record_start "traffic-nowatch-$rep" --no-watch
				record_ready "traffic-nowatch-$rep"
				figures=$(bench "$KPORT")
				record_stop "traffic-nowatch-$rep"
				rm -f "$TMP/traffic-nowatch-$rep.kavach"
				;;
			esac
			echo "$path $figures" >>"$B"
		done
	done
fi

# ---- 3. replay start

C=$TMP/part3   # "what seconds" lines
: >"$C"
NONE_FX=$TMP/none-empty.kavach
# replay NAME FIXTURE [ARGS...]: appends "NAME WALL_SECONDS" (its wall
# line: from starting the build to the last step) and "NAME.proc SECONDS"
# (the whole process, reading the fixture and writing its data file into
# the build's directory too) to $C; a replay that does not reproduce fails
# the run.
replay() {
	local name=$1 fx=$2 out rc=0 wall t0
	shift 2
	out=$TMP/replay-$name.out
	t0=$(now)
	"$KAVACH" replay --runs 1 "$@" /usr/bin/redis-server "$fx" >"$out" 2>&1 &
	CUR=$!
	wait "$CUR" || rc=$?
	CUR=""
	echo "$name.proc $(since "$t0")" >>"$C"
	wall=$(awk '$1 == "wall" { print $2; exit }' "$out")
	if [ -z "$wall" ] || [ "$rc" != 0 ]; then
		fail "kavach replay of $fx ($name) did not reproduce it (status $rc):"
		tail -8 "$out" >&2
		[ -z "$wall" ] && return 0
	fi
	wall=$(seconds "$wall")
	echo "$name $wall" >>"$C"
}
if part replay; then
	EPORT=$(free_port)
	start_server empty "$EPORT"
	log "replay: the same session recorded with --state none in front of an empty server"
	UPORT=$EPORT record_start none-empty --state none
	record_ready none-empty
	session "$KPORT"
	record_stop none-empty
	echo "none.state: $STATE" >>"$TMP/states"
	mkdir -p "$TMP/load"
	for rep in $(seq "$REPS"); do
		log "rep $rep/$REPS, replay start: redis-server loading the data file, none, cut, whole"
		# redis-server loading the service's own data file (the last
		# snapshot's), to its first PONG. Each large start after a sync,
		# so that it does not wait for the writes of the one before.
		ln -f "$TMP/big/dump.rdb" "$TMP/load/dump.rdb"
		sync
		LPORT=$(free_port)
		t0=$(now)
		redis-server --port "$LPORT" --bind 127.0.0.1 --save "" --appendonly no \
			--daemonize no --dir "$TMP/load" --logfile "$TMP/load/redis.log" &
		CUR=$!
		wait_pong "$LPORT" "$CUR"
		echo "load $(since "$t0")" >>"$C"
		kill "$CUR"
		wait "$CUR" || true
		CUR=""
		rm -f "$TMP/load/dump.rdb"
		replay none "$NONE_FX" --start-timeout "$REPLAY_START_TIMEOUT"
		replay cut "$CUT_FX" --start-timeout "$REPLAY_START_TIMEOUT"
		sync
		replay whole "$WHOLE_FX" --start-timeout "$REPLAY_START_TIMEOUT"
	done
	log "replay start: the whole fixture once with the default --start-timeout"
	rc=0
	"$KAVACH" replay --runs 1 /usr/bin/redis-server "$WHOLE_FX" >"$TMP/replay-default-timeout.out" 2>&1 &
	CUR=$!
	wait "$CUR" || rc=$?
	CUR=""
	if [ "$rc" = 0 ]; then
		DEFAULT_TIMEOUT="reproduced, wall $(awk '$1 == "wall" { print $2; exit }' "$TMP/replay-default-timeout.out")"
	else
		DEFAULT_TIMEOUT="exit $rc: $(grep -m1 -o 'never became ready within [^(]*' "$TMP/replay-default-timeout.out" || tail -1 "$TMP/replay-default-timeout.out")"
	fi
fi

# ---- 4. first-touch

D=$TMP/part4   # "mode seconds" lines
: >"$D"
if part firsttouch; then
	for i in $(seq 0 $((K - 1))); do echo "GET key:$i"; done >"$TMP/gets"
	for rep in $(seq "$FT_REPS"); do
		for mode in none first-touch; do
			log "rep $rep/$FT_REPS, first-touch: --state $mode, $K GETs"
			name=ft-$mode-$rep
			record_start "$name" --state "$mode"
			record_ready "$name"
			t0=$(now)
			redis-cli -p "$KPORT" <"$TMP/gets" >"$TMP/gets.out" &
			CUR=$!
			wait "$CUR"
			CUR=""
			echo "$mode $(since "$t0")" >>"$D"
			got=$(wc -l <"$TMP/gets.out")
			[ "$got" = "$K" ] || fail "--state $mode: $got replies to $K GETs"
			record_stop "$name"
			echo "ft.$mode.state $rep: $STATE" >>"$TMP/states"
			if [ "$mode" = first-touch ] && [[ "$STATE" != *"first-touch, $K keys"* ]]; then
				fail "--state first-touch captured other than $K keys: $STATE"
			fi
			rm -f "$TMP/$name.kavach"
		done
	done
fi

# ---- report

ALL_S=$(since "$T_ALL")
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
m() { median "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0 || a == "nan" || b == "nan") print "nan"; else printf "%.2f", a / b }'; }
combined() { awk -v s="$1" -v g="$2" 'BEGIN { printf "%.0f", 2 / (1 / s + 1 / g) }'; }

echo
echo "kavach state benchmark: a redis-server ($(redis-server --version | grep -o 'v=[^ ]*' | tr -d v=)) holding $KEYS keys of $VALUE random bytes"
echo "($USED MiB used_memory, filled in $FILL_S s); $(nproc) cores; load average $LOAD0 at the start, $LOAD1 at the end; ${ALL_S%.*} s in all"

if part record; then
	echo
	echo "1. recording a 2-step session (GET key:1, SET bench:x y; then SIGINT) in front of it: median of $REPS, interleaved"
	printf "   %-44s %16s %16s %16s\n" "" "default (cut)" "--state-whole" "redis-cli --rdb"
	printf "   %-44s %16s %16s %16s\n" "snapshot: start to \"clients connect to\" (s)" "$(m "$A" cut.snap)" "$(m "$A" whole.snap)" "$(m "$A" cli.snap)"
	printf "   %-44s %16s %16s %16s\n" "  of which the service's BGSAVE (s)" "$(m "$A" cut.bgsave)" "$(m "$A" whole.bgsave)" "$(m "$A" cli.bgsave)"
	printf "   %-44s %16s %16s\n" "end: SIGINT to exit (s)" "$(m "$A" cut.end)" "$(m "$A" whole.end)"
	printf "   %-44s %16s %16s   (target < 128)\n" "recorder's peak RSS, its own VmHWM (MiB)" "$(m "$A" cut.hwm)" "$(m "$A" whole.hwm)"
	printf "   %-44s %16s %16s   (with its reaped children)\n" "/usr/bin/time -v max RSS (MiB)" "$(m "$A" cut.time)" "$(m "$A" whole.time)"
	printf "   %-44s %16s %16s %16s\n" "fixture size (MiB)" "$(m "$A" cut.fx)" "$(m "$A" whole.fx)" "$RDB_MB (the RDB)"
	echo "   every run:"
	for k in cut.snap whole.snap cli.snap cut.bgsave whole.bgsave cli.bgsave cut.end whole.end cut.hwm whole.hwm cut.time whole.time cut.fx whole.fx; do
		printf "     %-12s %s\n" "$k" "$(runs "$A" "$k" %s)"
	done
	echo "   default-mode recordings cut: $CUT_OK of $CUT_RUNS (the others kept the whole data file)"
	echo "   state lines:"
	grep -E '^(cut|whole)\.state' "$TMP/states" | sed 's/^/     /'
fi

if part traffic; then
	echo
	echo "2. proxied traffic after the snapshot: redis-benchmark -c 1 -P 1 -t set,get -n $N, median of $REPS, interleaved"
	printf "   %-40s %9s %9s   %s\n" path "SET rps" "GET rps" "vs plain SET/GET (combined)"
	for path in plain none snapshot nowatch; do
		case $path in
		plain) label="plain proxy" ;;
		none) label="kavach record --state none" ;;
		snapshot) label="kavach record (default: snapshot, watch)" ;;
		nowatch) label="kavach record --no-watch" ;;
		esac
		s=$(awk -v p=$path '$1 == p { print "x", $2 }' "$B" | median /dev/stdin x)
		g=$(awk -v p=$path '$1 == p { print "x", $3 }' "$B" | median /dev/stdin x)
		ps=$(awk '$1 == "plain" { print "x", $2 }' "$B" | median /dev/stdin x)
		pg=$(awk '$1 == "plain" { print "x", $3 }' "$B" | median /dev/stdin x)
		printf "   %-40s %9.0f %9.0f   %s / %s (%s)\n" "$label" "$s" "$g" "$(ratio "$s" "$ps")" "$(ratio "$g" "$pg")" \
			"$(ratio "$(combined "$s" "$g")" "$(combined "$ps" "$pg")")"
	done
	echo "   every run (SET/GET rps):"
	for path in plain none snapshot nowatch; do
		printf "     %-9s %s\n" "$path" "$(awk -v p=$path '$1 == p { printf "%.0f/%.0f  ", $2, $3 }' "$B")"
	done
	echo "   the proxy serves nobody until the snapshot is taken: first PONG through it $(m "$W" served) s after the start"
	echo "   (\"clients connect to\" at $(m "$W" ready) s; runs: $(runs "$W" served %s)); a client 1 s after the start got:"
	sed 's/^/     rep /' "$TMP/probes"
	echo "   end (SIGINT to exit) of these recordings: $(runs "$W" end %s)s; cut: $TCUT_OK of $TCUT_RUNS (the others kept the whole data file)"
	grep -E '^snapshot\.state' "$TMP/states" | sed 's/^/     /'
fi

if part replay; then
	echo
	echo "3. replay start: kavach replay --runs 1 --start-timeout $REPLAY_START_TIMEOUT /usr/bin/redis-server FIXTURE, its wall line; median of $REPS"
	cut_label="cut from the snapshot"
	[ "$CUT_OK" = 0 ] && cut_label="default mode (NOT cut: whole)"
	n=$(m "$C" none) c=$(m "$C" cut) np=$(m "$C" none.proc) cp=$(m "$C" cut.proc)
	printf "   %-44s %12s %12s\n" "" "wall line" "process"
	printf "   %-44s %10.3f s %10.3f s\n" "--state none, recorded on an empty server" "$n" "$np"
	printf "   %-44s %10.3f s %10.3f s   (%+.3f s / %+.3f s over none; target within 1 s)\n" "$cut_label" "$c" "$cp" \
		"$(calc %.3f "$c - $n")" "$(calc %.3f "$cp - $np")"
	printf "   %-44s %10.3f s %10.3f s\n" "--state-whole ($RDB_MB MiB data file)" "$(m "$C" whole)" "$(m "$C" whole.proc)"
	printf "   %-44s %10.3f s %12s   (to its first PONG)\n" "redis-server loading that data file itself" "$(m "$C" load)" ""
	echo "   every run (wall line / process):"
	for k in none cut whole; do
		printf "     %-6s %s/ %s\n" "$k" "$(runs "$C" "$k" %.3f)" "$(runs "$C" "$k.proc" %.3f)"
	done
	printf "     %-6s %s\n" load "$(runs "$C" load %.3f)"
	echo "   the whole fixture with the default --start-timeout (10s): $DEFAULT_TIMEOUT"
fi

if part firsttouch; then
	echo
	echo "4. first-touch: redis-cli reading $K GETs of distinct existing keys from stdin, the client's wall; median of $FT_REPS, interleaved"
	n=$(m "$D" none) f=$(m "$D" first-touch)
	printf "   %-28s %8.3f s   (%.0f µs a request)\n" "--state none" "$n" "$(calc %.3f "$n * 1000000 / $K")"
	printf "   %-28s %8.3f s   (%.0f µs a request)\n" "--state first-touch" "$f" "$(calc %.3f "$f * 1000000 / $K")"
	printf "   extra per key: %.0f µs (%s x the session)\n" "$(calc %.3f "($f - $n) * 1000000 / $K")" "$(ratio "$f" "$n")"
	echo "   every run: none $(runs "$D" none %.3f)/ first-touch $(runs "$D" first-touch %.3f)"
	grep -E '^ft\.first-touch\.state' "$TMP/states" | tail -1 | sed 's/^/     /'
fi

if [ "$KEEP" = 1 ]; then
	echo
	echo "kept in $TMP: the fixtures (*.kavach), logs (*.log), /usr/bin/time outputs (*.time)"
fi
if [ "$bad" = 1 ]; then
	log "a run failed (see above)"
	exit 1
fi
