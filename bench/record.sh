#!/usr/bin/env bash
# The recording proxy's benchmark (docs/design.md §11): redis-benchmark with 50
# clients, SET and GET, without pipelining and with -P 16, through four
# paths to one redis-server, all in this run:
#
#   direct         redis-benchmark -> redis-server
#   plain proxy    a byte-copying proxy, one upstream conn per client (bench/plainproxy);
#                  on Linux its io.Copy moves the bytes with splice(2), so they
#                  never enter its memory
#   copy proxy     the same proxy with -copy: read(2) into a buffer, write(2) out,
#                  which is the least any recorder does (it must see every byte)
#   twemproxy      nutcracker, for reference (it multiplexes clients onto one server conn)
#   kavach record  the recording proxy, writing a fixture
#   --state none   the recording proxy, writing a fixture, taking no state
#                  (no snapshot, no watch of other clients)
#   record --keep  the recording proxy always on (--keep 10s --state none):
#                  rolling segments in a directory, no cut
#
# On the "kavach record" path the server also runs the state taking's own
# commands (the snapshot's REPLCONF and SYNC, MONITOR and its ECHO, CLIENT
# REPLY, COMMAND INFO): none is one redis-benchmark sends, so they are left
# out of the server's count there.
#
# Every measurement is repeated REPS times, interleaved across paths, and
# the median is reported, because the machine is shared and noisy. Prints a
# table with ratios to direct and to the plain proxy, the headline
# `kavach record / plain proxy` per pipelining mode (and the same over the
# copy proxy), the recording proxy's
# memory over its largest run, and whether every command the server
# executed is in the fixture. Exits 1 when a recording lost a command or
# recorded a failure (nothing fails in a healthy run); a ratio below the
# target is reported, not an error.
#
# Environment:
#   N        requests per test without pipelining (default 200000)
#   NP       requests per test with pipelining (default 1000000)
#   PIPE     the pipelining depth (default 16)
#   CLIENTS  redis-benchmark's -c (default 50)
#   REPS     repetitions of each measurement (default 3)
#   KEEP=1   keep the temporary directory (fixtures, logs) and print it
#   KAVACH   the kavach binary to measure (default: built into bin/kavach)
set -euo pipefail

N=${N:-200000}
NP=${NP:-1000000}
PIPE=${PIPE:-16}
CLIENTS=${CLIENTS:-50}
REPS=${REPS:-3}
KEEP=${KEEP:-0}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KAVACH=${KAVACH:-}

for cmd in go redis-server redis-cli redis-benchmark nutcracker; do
	command -v "$cmd" >/dev/null || {
		echo "record.sh: $cmd not found (apt-get install -y redis-server redis-tools nutcracker)" >&2
		exit 1
	}
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-bench.XXXXXX")
PIDS=()      # every long-lived process started here
KPID=""      # the running kavach record, if any
SAMPLER=""   # the running RSS sampler, if any

cleanup() {
	local rc=$?
	set +e
	[ "$rc" != 0 ] && echo "record.sh: stopping on status $rc" >&2
	[ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then
		kill -INT "$KPID" 2>/dev/null
		wait "$KPID" 2>/dev/null
	fi
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	if [ "$KEEP" = 1 ]; then
		echo "record.sh: kept $TMP (fixtures: $TMP/bench-*.kavach, logs: $TMP/*.log)" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "record.sh: interrupted" >&2; exit 130' INT TERM

log() { echo "record.sh: $*" >&2; }

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

# wait_port PORT PID waits until PORT accepts connections, failing if PID dies.
wait_port() {
	local port=$1 pid=$2
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { log "process $pid died before listening on $port"; return 1; }
		sleep 0.1
	done
	log "nothing listens on $port after 10s"
	return 1
}

# bench PORT PIPELINE REQUESTS prints "SET_RPS GET_RPS".
bench() {
	local port=$1 pipe=$2 n=$3 args=() out
	[ "$pipe" -gt 1 ] && args=(-P "$pipe")
	# redis-benchmark warns on stderr that twemproxy has no CONFIG: keep that aside.
	out=$(timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$n" "${args[@]}" -t set,get -q --csv 2>>"$TMP/redis-benchmark.log") || {
		log "redis-benchmark on port $port failed (status $?):"
		tail -5 "$TMP/redis-benchmark.log" >&2
		kill -0 "$RPID" 2>/dev/null || log "redis-server (pid $RPID) is gone; its log ends: $(tail -1 "$TMP/redis.log")"
		return 1
	}
	awk -F'"' '$2 == "SET" { s = $4 } $2 == "GET" { g = $4 } END { if (s == "" || g == "") exit 1; print s, g }' <<<"$out" || {
		log "redis-benchmark on port $port gave no SET/GET figures:"
		echo "$out" >&2
		tail -5 "$TMP/redis-benchmark.log" >&2
		kill -0 "$RPID" 2>/dev/null || log "redis-server (pid $RPID) is gone; its log ends: $(tail -1 "$TMP/redis.log")"
		return 1
	}
}

# server_calls [own] sums calls= over the server's command stats, without
# CONFIG RESETSTAT and INFO themselves; with "own", without the commands
# kavach record's state taking sends either.
server_calls() {
	redis-cli -p "$RPORT" INFO commandstats | tr -d '\r' | awk -F'[:,=]' -v own="${1:-}" '
		$1 == "cmdstat_config|resetstat" || $1 == "cmdstat_info" { next }
		own && $1 ~ /^cmdstat_(replconf|sync|monitor|echo|client\|reply|command\|info)$/ { next }
		/^cmdstat_/ { s += $3 }
		END { print s + 0 }'
}

# sample_rss PID FILE appends PID's VmRSS (kB) to FILE every 0.2s while it lives.
sample_rss() {
	local pid=$1 out=$2 k v rest
	while [ -r "/proc/$pid/status" ]; do
		while read -r k v rest; do
			if [ "$k" = "VmRSS:" ]; then echo "$v" >>"$out"; fi
		done <"/proc/$pid/status" 2>/dev/null || true
		sleep 0.2
	done
}

# ---- build and start the servers and proxies

log "building bin/kavach and the plain proxy (into $TMP)"
if [ -z "$KAVACH" ]; then
	KAVACH=$ROOT/bin/kavach
	go build -o "$KAVACH" ./cmd/kavach
fi
go build -o "$TMP/plainproxy" ./bench/plainproxy

RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no \
	--daemonize no --dir "$TMP" --logfile "$TMP/redis.log" &
RPID=$!
PIDS+=("$RPID")
wait_port "$RPORT" "$RPID"
log "redis-server $(redis-server --version | grep -o 'v=[^ ]*') on 127.0.0.1:$RPORT (pid $RPID)"

PPORT=$(free_port)
"$TMP/plainproxy" -listen "127.0.0.1:$PPORT" -upstream "127.0.0.1:$RPORT" 2>"$TMP/plainproxy.log" &
PIDS+=("$!")
wait_port "$PPORT" "$!"

CPORT=$(free_port)
"$TMP/plainproxy" -copy -listen "127.0.0.1:$CPORT" -upstream "127.0.0.1:$RPORT" 2>"$TMP/copyproxy.log" &
PIDS+=("$!")
wait_port "$CPORT" "$!"

TPORT=$(free_port)
TSTATS=$(free_port)
cat >"$TMP/nutcracker.yml" <<EOF
bench:
  listen: 127.0.0.1:$TPORT
  redis: true
  hash: fnv1a_64
  distribution: ketama
  preconnect: true
  auto_eject_hosts: false
  server_connections: 1
  servers:
   - 127.0.0.1:$RPORT:1
EOF
nutcracker -c "$TMP/nutcracker.yml" -o "$TMP/nutcracker.log" -p "$TMP/nutcracker.pid" \
	-s "$TSTATS" -a 127.0.0.1 &
PIDS+=("$!")
wait_port "$TPORT" "$!"

# ---- measure

PATHS=(direct plain copy twem kavach none keep)
declare -A NAME=([direct]="direct" [plain]="plain proxy" [copy]="copy proxy" [twem]="twemproxy" [kavach]="kavach record" [none]="--state none" [keep]="record --keep")
MODES=(1 "$PIPE")
declare -A REQS=([1]=$N [$PIPE]=$NP)
mode_name() { if [ "$1" -gt 1 ]; then echo "-P $1"; else echo "none"; fi; }

# The memory and nothing-lost figures are for the run with the most
# commands: the last repetition of the larger mode.
BIG_MODE=1
[ "$NP" -ge "$N" ] && BIG_MODE=$PIPE
RESULTS=$TMP/results     # path mode rep set_rps get_rps
LOSTS=$TMP/lost          # run mode rep server_calls recorded
: >"$RESULTS"
: >"$LOSTS"
BIG_RUN="" BIG_FX="" BIG_RSS="" BIG_REC=""
run=0
t0=$SECONDS

for rep in $(seq "$REPS"); do
	for mode in "${MODES[@]}"; do
		n=${REQS[$mode]}
		for path in "${PATHS[@]}"; do
			case $path in
			direct) port=$RPORT ;;
			plain) port=$PPORT ;;
			copy) port=$CPORT ;;
			twem) port=$TPORT ;;
			kavach)
				run=$((run + 1))
				port=$(free_port)
				fx=$TMP/bench-$run.kavach
				redis-cli -p "$RPORT" CONFIG RESETSTAT >/dev/null
				"$KAVACH" record --protocol resp --out "$fx" --upstream "127.0.0.1:$RPORT" \
					--listen "127.0.0.1:$port" 2>"$TMP/kavach-$run.log" &
				KPID=$!
				wait_port "$port" "$KPID"
				big=0
				if [ "$rep" = "$REPS" ] && [ "$mode" = "$BIG_MODE" ]; then
					big=1
					rss=$TMP/rss-$run
					: >"$rss"
					sample_rss "$KPID" "$rss" &
					SAMPLER=$!
				fi
				;;
			none | keep)
				run=$((run + 1))
				port=$(free_port)
				redis-cli -p "$RPORT" CONFIG RESETSTAT >/dev/null
				out=(--out "$TMP/none-$run.kavach")
				[ "$path" = keep ] && out=(--out "$TMP/cuts-$run" --keep 10s)
				"$KAVACH" record --protocol resp "${out[@]}" --state none \
					--upstream "127.0.0.1:$RPORT" --listen "127.0.0.1:$port" 2>"$TMP/kavach-$run.log" &
				KPID=$!
				wait_port "$port" "$KPID"
				big=0
				;;
			esac
			log "rep $rep/$REPS, pipelining $(mode_name "$mode"), $n requests per test: ${NAME[$path]}"
			figures=$(bench "$port" "$mode" "$n")
			read -r set get <<<"$figures"
			echo "$path $mode $rep $set $get" >>"$RESULTS"
			if [ "$path" = kavach ] || [ "$path" = none ] || [ "$path" = keep ]; then
				if [ -n "$SAMPLER" ]; then
					kill "$SAMPLER" 2>/dev/null || true
					wait "$SAMPLER" 2>/dev/null || true
					SAMPLER=""
				fi
				kill -INT "$KPID"
				krc=0
				wait "$KPID" || krc=$?
				KPID=""
				if [ "$krc" != 0 ]; then
					log "kavach record exited with status $krc:"
					cat "$TMP/kavach-$run.log" >&2
					exit 1
				fi
				calls=$(server_calls "$([ "$path" = kavach ] && echo own)")
				# kavach's own summary: "...: N requests, M replies on C connections (...)"
				recorded=$(grep -o '[0-9]* requests,' "$TMP/kavach-$run.log" | grep -o '[0-9]*' || echo "?")
				failure=$(grep -o "failure at step [0-9]*: .*" "$TMP/kavach-$run.log" | tr " " _ || true)
				echo "$run $mode $rep $calls $recorded ${failure:--}" >>"$LOSTS"
				if [ "$big" = 1 ]; then
					BIG_RUN=$run BIG_FX=$fx BIG_RSS=$rss
				fi
			fi
		done
	done
done
measure_secs=$((SECONDS - t0))

log "counting the steps of $BIG_FX (kavach show --json)"
BIG_REC=$("$KAVACH" show --json "$BIG_FX" | wc -l)

# ---- report

# median PATH MODE COLUMN (4: SET, 5: GET)
median() {
	awk -v p="$1" -v m="$2" -v c="$3" '$1 == p && $2 == m { print $c }' "$RESULTS" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# combined SET+GET throughput: requests over the time both tests took
combined() { awk -v s="$1" -v g="$2" 'BEGIN { printf "%.2f", 2 / (1 / s + 1 / g) }'; }

declare -A SET GET
for mode in "${MODES[@]}"; do
	for path in "${PATHS[@]}"; do
		SET[$path,$mode]=$(median "$path" "$mode" 4)
		GET[$path,$mode]=$(median "$path" "$mode" 5)
	done
done

echo
echo "kavach record benchmark: redis-benchmark -c $CLIENTS -t set,get, $N requests per test without pipelining,"
echo "$NP with -P $PIPE; median of $REPS interleaved runs ($measure_secs s of measuring); $(nproc) cores, $(redis-server --version | grep -o 'v=[^ ]*' | tr -d v=) redis"
echo
printf "%-14s %-9s %11s %11s   %-19s %-19s\n" path pipeline "SET rps" "GET rps" "vs direct SET/GET" "vs plain SET/GET"
for mode in "${MODES[@]}"; do
	for path in "${PATHS[@]}"; do
		s=${SET[$path,$mode]} g=${GET[$path,$mode]}
		printf "%-14s %-9s %11.0f %11.0f   %-19s %-19s\n" "${NAME[$path]}" "$(mode_name "$mode")" "$s" "$g" \
			"$(ratio "$s" "${SET[direct,$mode]}") / $(ratio "$g" "${GET[direct,$mode]}")" \
			"$(ratio "$s" "${SET[plain,$mode]}") / $(ratio "$g" "${GET[plain,$mode]}")"
	done
done

echo
echo "every run (SET/GET rps), in the order measured:"
for mode in "${MODES[@]}"; do
	for path in "${PATHS[@]}"; do
		printf "  %-14s %-9s %s\n" "${NAME[$path]}" "$(mode_name "$mode")" \
			"$(awk -v p="$path" -v m="$mode" '$1 == p && $2 == m { printf "%.0f/%.0f  ", $4, $5 }' "$RESULTS")"
	done
done

echo
for mode in "${MODES[@]}"; do
	k=$(combined "${SET[kavach,$mode]}" "${GET[kavach,$mode]}")
	p=$(combined "${SET[plain,$mode]}" "${GET[plain,$mode]}")
	r=$(ratio "$k" "$p")
	verdict=$(awk -v r="$r" 'BEGIN { print (r >= 0.80 ? "meets it" : "BELOW TARGET") }')
	printf "kavach record / plain proxy = %s (target ≥ 0.80) pipelining %-5s  [SET %s, GET %s; %s]\n" "$r" "$(mode_name "$mode")" \
		"$(ratio "${SET[kavach,$mode]}" "${SET[plain,$mode]}")" "$(ratio "${GET[kavach,$mode]}" "${GET[plain,$mode]}")" "$verdict"
done
for mode in "${MODES[@]}"; do
	k=$(combined "${SET[keep,$mode]}" "${GET[keep,$mode]}")
	p=$(combined "${SET[plain,$mode]}" "${GET[plain,$mode]}")
	r=$(ratio "$k" "$p")
	verdict=$(awk -v r="$r" 'BEGIN { print (r >= 0.90 ? "meets it" : "BELOW TARGET") }')
	printf "record --keep / plain proxy = %s (target ≥ 0.90) pipelining %-5s  [SET %s, GET %s; %s]\n" "$r" "$(mode_name "$mode")" \
		"$(ratio "${SET[keep,$mode]}" "${SET[plain,$mode]}")" "$(ratio "${GET[keep,$mode]}" "${GET[plain,$mode]}")" "$verdict"
	c=$(combined "${SET[copy,$mode]}" "${GET[copy,$mode]}")
	printf "record --keep / copy proxy = %s pipelining %-5s  (over the least a recorder does: every byte read and written)\n" "$(ratio "$k" "$c")" "$(mode_name "$mode")"
	printf "copy proxy / plain proxy = %s pipelining %-5s  (what reading the bytes costs any proxy, before recording)\n" "$(ratio "$c" "$p")" "$(mode_name "$mode")"
	n=$(combined "${SET[none,$mode]}" "${GET[none,$mode]}")
	printf "record --keep / record --state none = %s pipelining %-5s  (what the segments cost over one fixture)\n" "$(ratio "$k" "$n")" "$(mode_name "$mode")"
done

echo
big_cmds=$((2 * ${REQS[$BIG_MODE]}))
echo "memory of kavach record over its largest run ($big_cmds commands, pipelining $(mode_name "$BIG_MODE"), rep $REPS):"
if [ "$big_cmds" -lt 1000000 ]; then
	echo "  (fewer than 1,000,000 commands: raise N or NP for a meaningful figure)"
fi
awk '{ v[NR] = $1; if ($1 > max) max = $1 }
	function at(f) { return v[int(f * (NR - 1)) + 1] }
	END {
		if (NR == 0) { print "  no RSS samples"; exit }
		printf "  VmRSS: peak %.1f MiB; at 10%% %.1f MiB, 50%% %.1f MiB, 90%% %.1f MiB of the run (%d samples, every 0.2 s)\n",
			max / 1024, at(0.1) / 1024, at(0.5) / 1024, at(0.9) / 1024, NR
	}' "$BIG_RSS"
size=$(stat -c %s "$BIG_FX")
awk -v s="$size" -v r="$BIG_REC" 'BEGIN { printf "  fixture: %.1f MiB on disk, %d requests recorded (%.1f bytes per request)\n", s / 1048576, r, s / r }'

echo
echo "nothing lost (commands the server executed vs requests in the fixture):"
lost=0
while read -r r mode rep calls recorded failure; do
	verdict=$([ "$calls" = "$recorded" ] && echo match || echo MISMATCH)
	line="server executed $calls commands, kavach recorded $recorded requests"
	if [ "$r" = "$BIG_RUN" ]; then
		verdict=$([ "$calls" = "$recorded" ] && [ "$calls" = "$BIG_REC" ] && echo match || echo MISMATCH)
		line="$line, the fixture has $BIG_REC steps"
	fi
	if [ "$failure" != - ]; then
		verdict="$verdict; but a healthy recording recorded a ${failure//_/ }"
	fi
	[ "$verdict" = match ] || lost=1
	printf "  run %d (pipelining %s, rep %s): %s: %s\n" "$r" "$(mode_name "$mode")" "$rep" "$line" "$verdict"
done <"$LOSTS"
if [ "$KEEP" = 1 ]; then
	echo
	echo "fixtures kept in $TMP: $(cd "$TMP" && echo bench-*.kavach)"
fi
if [ "$lost" = 1 ]; then
	log "a recording lost commands or recorded a failure (see above)"
	exit 1
fi
