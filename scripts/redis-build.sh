#!/usr/bin/env bash
# redis-build.sh [PATCH...]
#
# Builds redis-server from the Debian source package `redis` of the system's
# release (bookworm: 5:7.0.15-1~deb12u*), with the given patch files applied
# in order (`patch -p1`, relative to the top of the source tree), and prints
# the absolute path of the binary on stdout. Everything else goes to stderr.
#
# Meant for tests and demos with planted bugs (see internal/redisbuild). The
# server is built with MALLOC=libc by default (the quickest build); with
# KAVACH_REDIS_MALLOC=jemalloc it is a plain `make`, with the jemalloc bundled
# in the source, as Redis and Valkey ship on Linux. Kavach's replay clock
# runs either (and Debian's packaged server, linked to the system's
# jemalloc).
#
# Cache (KAVACH_CACHE_DIR, default $HOME/.cache/kavach):
#   apt/                  private apt state: sources, lists, cache. The system's
#                         apt configuration is never changed.
#   redis/src-VERSION/    the unpacked source, Debian patches applied.
#   redis/current-version the source version in use (full, with epoch).
#   redis/build-KEY/      one build: redis-server, build.log, manifest.
#                         KEY = sha256 of the version, the build recipe and
#                         the patch contents, in order.
# A cache hit prints the path at once and needs no network. The first run
# downloads the source (a few MB) and each new key takes about a minute to
# build. KAVACH_REDIS_REFRESH=1 asks apt again for the newest source version.
#
# Each key is built from a fresh copy of the source (no object file of
# another key can be taken for this one's), in a temporary directory under a
# lock (flock), and moved into place in one rename: safe to run concurrently.
set -euo pipefail

# stdout is only for the result: everything else, children included, goes to
# stderr.
exec 3>&1 1>&2

prog=redis-build
# shellcheck source=scripts/buildlib.sh
. "$(dirname "${BASH_SOURCE[0]}")/buildlib.sh"
# tail_log FILE: the last lines of a log, without the colour codes of
# Redis's Makefile.
tail_log() { tail -n "${2:-30}" "$1" | sed 's/\x1b\[[0-9;]*m//g' | sed 's/^/    /' >&2; }

# KAVACH_REDIS_SOURCE picks the source package (redis, or valkey) and
# KAVACH_REDIS_SUITE the Debian suite to take it from (default: the
# system's release; e.g. trixie, for the newer Redis and Valkey that a
# real upgrade is graded against). The suite is reached through the URIs
# of the system's own apt sources.
source_pkg=${KAVACH_REDIS_SOURCE:-redis}
case $source_pkg in
redis) server=redis-server ;;
valkey) server=valkey-server ;;
*) echo "redis-build: KAVACH_REDIS_SOURCE=$source_pkg: want redis or valkey" >&2; exit 2 ;;
esac
case ${KAVACH_REDIS_MALLOC:-libc} in
libc) make_args=(MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no) ;;
jemalloc) make_args=(BUILD_TLS=no USE_SYSTEMD=no) ;;
*) echo "redis-build: KAVACH_REDIS_MALLOC=$KAVACH_REDIS_MALLOC: want libc or jemalloc" >&2; exit 2 ;;
esac
jobs=2
# Part of every build key: change it when the way of building changes.
recipe="kavach-redis-build/1 make -C src $server ${make_args[*]}"
[ "${KAVACH_REDIS_MALLOC:-libc}" = libc ] || recipe="$recipe (Debian's USE_SYSTEM_JEMALLOC patch reversed)"

[ -n "${HOME:-}" ] || die "HOME is not set"
cache=${KAVACH_CACHE_DIR:-$HOME/.cache/kavach}
mkdir -p "$cache" || die "cannot create cache directory $cache"
cache=$(cd "$cache" && pwd -P)
aptdir=$cache/apt
system_codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
suite=${KAVACH_REDIS_SUITE:-$system_codename}
rdir=$cache/redis
if [ "$source_pkg" != redis ] || [ "$suite" != "$system_codename" ]; then
	rdir=$cache/$source_pkg-$suite
	aptdir=$cache/apt-$suite
fi
mkdir -p "$rdir" "$aptdir"

# ---------------------------------------------------------------- patches ---

collect_patches "$@"

# ---------------------------------------------------------------- sources ---

# write_sources OUT: writes to OUT (a .sources file) a deb-src entry for each
# entry of the system's apt configuration that serves this release (suites
# CODENAME, CODENAME-updates, CODENAME-security), keeping its URIs,
# components and keyring (Signed-By). Nothing is hard-coded: the mirror is
# whatever the system uses.
write_sources() {
	local out=$1 codename sl sp f
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || codename=$(lsb_release -sc 2>/dev/null || true)
	[ -n "$codename" ] || die "cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release)"
	local target=${suite:-$codename}
	eval "$(apt-config shell sl Dir::Etc::sourcelist/f sp Dir::Etc::sourceparts/d)"
	local files=()
	[ -f "$sl" ] && files+=("$sl")
	for f in "$sp"*.list "$sp"*.sources; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || die "no apt sources found ($sl, $sp)"
	say "deriving deb-src entries for $codename from: ${files[*]}"
	: >"$out"
	for f in "${files[@]}"; do
		case $f in
		*.sources) awk -v codename="$codename" -v target="$target" -f <(deb822_awk) "$f" >>"$out" ;;
		*) awk -v codename="$codename" -v target="$target" -f <(oneline_awk) "$f" >>"$out" ;;
		esac
	done
	grep -q '^Types:' "$out" ||
		die "no apt source for $codename (suites $codename, $codename-updates, $codename-security) in: ${files[*]}"
}

# awk programs shared by both formats: keep only this release's suites.
suite_awk='
function wanted(s) { return target == codename ? (s == codename || s == codename "-updates" || s == codename "-security") : s == codename }
function renamed(s) { return target == codename ? s : target }
'

# deb822 (.sources): copies each enabled stanza of type deb or deb-src as one
# of type deb-src, with its suites filtered; fields are copied verbatim, so an
# inline Signed-By key block survives.
deb822_awk() {
	cat <<EOF
$suite_awk
function flush(   i, n, parts, keep, isdeb, t) {
	if (nl == 0) return
	n = split(field["types"], parts, /[ \t]+/)
	isdeb = 0
	for (i = 1; i <= n; i++) if (parts[i] == "deb" || parts[i] == "deb-src") isdeb = 1
	keep = ""
	n = split(field["suites"], parts, /[ \t]+/)
	for (i = 1; i <= n; i++) if (wanted(parts[i])) keep = keep (keep == "" ? "" : " ") renamed(parts[i])
	if (isdeb && keep != "" && tolower(field["enabled"]) != "no") {
		print "Types: deb-src"
		print "Suites: " keep
		for (i = 1; i <= nl; i++) {
			t = tolower(name[i])
			if (t == "types" || t == "suites" || t == "enabled") continue
			print text[i]
		}
		print ""
	}
	delete field; delete name; delete text; nl = 0
}
/^#/ { next }
/^[ \t]*$/ { flush(); next }
/^[ \t]/ { if (nl > 0) text[nl] = text[nl] "\n" \$0; next }
{
	k = \$0; sub(/:.*/, "", k)
	v = \$0; sub(/^[^:]*:[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
	nl++; name[nl] = k; text[nl] = \$0
	field[tolower(k)] = v
}
END { flush() }
EOF
}

# One-line format (.list): "deb [opts] URI SUITE COMP..." becomes a deb822
# stanza of type deb-src, keeping signed-by.
oneline_awk() {
	cat <<EOF
$suite_awk
{ sub(/#.*/, ""); sub(/[ \t]+$/, "") }
\$1 == "deb" || \$1 == "deb-src" {
	line = \$0; sub(/^[ \t]*deb(-src)?[ \t]+/, "", line)
	opts = ""
	if (line ~ /^\[/) { opts = line; sub(/\].*/, "", opts); sub(/^\[/, "", opts); sub(/^[^\]]*\][ \t]*/, "", line) }
	n = split(line, w, /[ \t]+/)
	if (n < 2 || !wanted(w[2]) || seen[w[1] " " w[2]]++) next
	print "Types: deb-src"
	print "URIs: " w[1]
	print "Suites: " renamed(w[2])
	comps = ""; for (i = 3; i <= n; i++) comps = comps (comps == "" ? "" : " ") w[i]
	if (comps != "") print "Components: " comps
	m = split(opts, o, /[ \t]+/)
	for (i = 1; i <= m; i++) if (o[i] ~ /^signed-by=/) { sub(/^signed-by=/, "", o[i]); print "Signed-By: " o[i] }
	print ""
}
EOF
}

# older_source DIR: when the mirror's pool lacks the version its index
# names (a mirror between two point releases: the index says +deb13u3, the
# pool still holds +deb13u2), fetches the newest earlier +debNNuK upload of
# the same version from the same pool: its .dsc, then each file the .dsc
# lists, checked against the .dsc's SHA-256 sums. Only for a suite other
# than the system's (a newer release to grade an upgrade against).
older_source() {
	local dl=$1 idx uri ver base k v url f
	[ "$suite" != "$system_codename" ] || return 1
	idx=$("${apt[@]}" -q=2 source --print-uris "$source_pkg" 2>/dev/null | grep -o "'[^']*\.dsc'" | tr -d "'" | head -n1)
	[ -n "$idx" ] || return 1
	uri=${idx%/*}
	ver=$(basename "$idx" .dsc)
	ver=${ver#"${source_pkg}"_}
	ver=${ver//%2b/+}
	case $ver in *+deb*u*) ;; *) return 1 ;; esac
	base=${ver%u*}
	k=${ver##*u}
	while [ "$k" -gt 1 ]; do
		k=$((k - 1))
		v=${base}u$k
		url=$uri/${source_pkg}_${v//+/%2b}.dsc
		if curl -fsS -o "$dl/${source_pkg}_$v.dsc" "$url" 2>/dev/null; then
			say "the pool lacks $ver; using $v from the same pool"
			awk '/^Checksums-Sha256:/{on=1; next} /^[^ ]/{on=0} on && NF==3 {print $1, $3}' "$dl/${source_pkg}_$v.dsc" |
				while read -r sum f; do
					curl -fsS -o "$dl/$f" "$uri/${f//+/%2b}" || exit 1
					echo "$sum  $dl/$f" | sha256sum -c --quiet - || exit 1
				done || return 1
			return 0
		fi
	done
	return 1
}

# fetch_source: downloads the newest source of $source_pkg the release
# serves, with a private apt state, unpacks it into src-VERSION and records
# the version. Called under the source lock.
fetch_source() {
	ensure_pkgs dpkg-source=dpkg-dev
	private_apt "$aptdir"
	write_sources "$aptdir/sources.list.d/kavach-src.sources"
	local apt=(apt-get -q -c "$aptdir/apt.conf")
	say "apt-get update (private state in $aptdir)"
	"${apt[@]}" update >"$aptdir/update.log" 2>&1 || {
		tail_log "$aptdir/update.log"
		die "apt-get update failed (sources: $aptdir/sources.list.d/kavach-src.sources; log: $aptdir/update.log)"
	}
	local dl
	dl=$(mktemp -d "$rdir/.tmp-src.XXXXXX")
	tmps+=("$dl")
	say "downloading the source package $source_pkg"
	(cd "$dl" && "${apt[@]}" source --download-only "$source_pkg") >"$aptdir/source.log" 2>&1 ||
		older_source "$dl" || {
		tail_log "$aptdir/source.log"
		die "apt-get source $source_pkg failed (log: $aptdir/source.log)"
	}
	local dsc
	dsc=$(ls "$dl"/*.dsc 2>/dev/null | head -n1)
	[ -n "$dsc" ] || die "apt-get source $source_pkg downloaded no .dsc (log: $aptdir/source.log)"
	version=$(sed -n 's/^Version:[ \t]*//p' "$dsc" | head -n1)
	[ -n "$version" ] || die "no Version in $dsc"
	local dir=$rdir/src-${version#*:}
	if [ ! -d "$dir" ]; then
		say "unpacking $source_pkg $version"
		# apt has checked the files against the signed Release: no need for
		# dpkg-source to check the .dsc signature again (apt-get source
		# itself passes --no-check).
		(cd "$dl" && dpkg-source --no-check -x "$dsc" "$dl/tree") >"$dl/unpack.log" 2>&1 || {
			tail_log "$dl/unpack.log"
			die "dpkg-source -x $dsc failed"
		}
		mv -T "$dl/tree" "$dir"
	fi
	printf '%s\n' "$version" >"$rdir/.current-version.tmp.$$"
	mv -f "$rdir/.current-version.tmp.$$" "$rdir/current-version"
}

# ------------------------------------------------------------------- main ---

# Leftovers of runs killed with SIGKILL (no build takes a day).
find "$rdir" -maxdepth 1 -name '.tmp-*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true

tmps=()
cleanup() {
	local d
	for d in "${tmps[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# have_source: sets version if the recorded source version is unpacked.
have_source() {
	[ -f "$rdir/current-version" ] || return 1
	version=$(head -n1 "$rdir/current-version")
	[ -n "$version" ] && [ -d "$rdir/src-${version#*:}" ]
}

version=""
if [ -n "${KAVACH_REDIS_REFRESH:-}" ] || ! have_source; then
	exec 4>"$rdir/.lock-src"
	flock -n 4 || {
		say "waiting for another process fetching the source"
		flock 4
	}
	if [ -n "${KAVACH_REDIS_REFRESH:-}" ] || ! have_source; then
		fetch_source
	fi
	exec 4>&-
fi
src=$rdir/src-${version#*:}

manifest=$(
	printf '%s\nsource %s %s\n' "$recipe" "$source_pkg" "$version"
	for p in ${patches[@]+"${patches[@]}"}; do
		printf 'patch %s %s\n' "$(sha256sum <"$p" | cut -d' ' -f1)" "$p"
	done
)
# The key covers the patch contents, not their names.
key=$(printf '%s\n' "$manifest" | sed 's/^\(patch [0-9a-f]*\) .*/\1/' | sha256sum | cut -d' ' -f1)
out=$rdir/build-$key
bin=$out/$server

if [ -x "$bin" ]; then
	echo "$bin" >&3
	exit 0
fi

exec 5>"$rdir/.lock-build-$key"
flock -n 5 || {
	say "waiting for another process building the same key ($key)"
	flock 5
}
if [ -x "$bin" ]; then
	echo "$bin" >&3
	exit 0
fi

ensure_pkgs gcc=gcc make=make patch=patch /usr/include/stdio.h=libc6-dev
work=$(mktemp -d "$rdir/.tmp-build.XXXXXX")
tmps+=("$work")
log=$work/build.log
cp -a "$src" "$work/tree"
if [ "${KAVACH_REDIS_MALLOC:-libc}" = jemalloc ]; then
	# Debian's patch for its system jemalloc breaks a build with the bundled
	# one (its `#if USE_SYSTEM_JEMALLOC == yes` holds when the flag is unset):
	# take it back out, so that the build is upstream's plain `make`.
	for p in "$work"/tree/debian/patches/*USE_SYSTEM_JEMALLOC*.patch; do
		[ -e "$p" ] || continue
		echo "== patch -R -p1 < $p" >>"$log"
		(cd "$work/tree" && patch -R -p1 --batch --no-backup-if-mismatch <"$p") >>"$log" 2>&1 ||
			die "cannot take Debian's $(basename "$p") back out for a bundled-jemalloc build (log: $log)"
	done
fi
applied=0
for p in ${patches[@]+"${patches[@]}"}; do
	say "applying $p"
	echo "== patch -p1 < $p" >>"$log"
	if ! (cd "$work/tree" && patch -p1 --forward --batch --no-backup-if-mismatch <"$p") >"$work/patch.log" 2>&1; then
		tail_log "$work/patch.log"
		after=""
		[ "$applied" -eq 0 ] || after=", after the $applied patch(es) before it"
		die "patch does not apply: $p (to the source of $source_pkg $version in $src$after)"
	fi
	cat "$work/patch.log" >>"$log"
	applied=$((applied + 1))
done

say "building $source_pkg $version${patches[0]+ with ${#patches[@]} patch(es)} (about a minute; log: $log)"
start=$SECONDS
echo "== make -C src $server ${make_args[*]} -j$jobs" >>"$log"
if ! make -C "$work/tree/src" "$server" "${make_args[@]}" -j"$jobs" >>"$log" 2>&1; then
	failed=$rdir/failed-$key.log
	cp "$log" "$failed"
	# With -j2 the first error can scroll out of the tail: show it too.
	if grep -q -E ': (fatal )?error:' "$log"; then
		say "first errors:"
		grep -E -m 10 ': (fatal )?error:' "$log" | sed 's/\x1b\[[0-9;]*m//g; s/^/    /' >&2
	fi
	say "last lines of the log:"
	tail_log "$log" 30
	die "build failed (full log: $failed)"
fi
[ -x "$work/tree/src/$server" ] || die "build produced no src/$server (log: $log)"

mkdir "$work/out"
mv "$work/tree/src/$server" "$work/out/$server"
mv "$log" "$work/out/build.log"
printf '%s\n' "$manifest" >"$work/out/manifest"
rm -rf "$work/tree"
# One rename makes the build visible; nobody else can be renaming onto this
# key while we hold its lock.
mv -T "$work/out" "$out"
rm -f "$rdir/failed-$key.log"
say "built in $((SECONDS - start))s: $bin"
echo "$bin" >&3
