#!/usr/bin/env bash
# axum-build.sh [PATCH...]
#
# Builds examples/axum-service (a small JSON API on axum 0.7) offline, with
# the given patch files applied in order (`patch -p1 --fuzz=0`, relative to
# the crate root: a patch must apply exactly), and prints the absolute path of the binary on stdout. Everything
# else goes to stderr.
#
# No crates registry is reachable here, but Debian ships axum and its
# dependencies as source crates (librust-*-dev, under
# /usr/share/cargo/registry). The script takes them from Debian's trixie
# suite (bookworm's are too old for axum 0.7), with a private apt state: the
# dependency closure of librust-axum-dev, librust-tokio-dev, librust-serde-dev
# and librust-serde-json-dev (`apt-cache depends --recurse`, filtered to real
# librust-* packages), downloaded with `apt-get download` and unpacked with
# `dpkg-deb -x`, never installed (installing them would pull trixie's C
# toolchain and libc). Cargo reads them as a directory source that replaces
# crates.io, with --offline. It needs cargo and rustc (1.75 or newer) on PATH.
#
# Meant for tests and demos with planted bugs (see internal/axumbuild).
#
# Cache (KAVACH_CACHE_DIR, default $HOME/.cache/kavach):
#   apt-trixie/           private apt state: sources, lists, cache. The
#                         system's apt configuration is never changed.
#   rust/registry/        the unpacked crates (NAME-VERSION/, each with a
#                         .cargo-checksum.json), a cargo directory source.
#   rust/registry.manifest the Debian packages and versions unpacked there.
#   axum/cargo-home/      CARGO_HOME of the builds: config.toml replaces
#                         crates.io with the directory source, offline.
#   axum/target/          CARGO_TARGET_DIR shared by all builds, so that a
#                         new set of patches only recompiles the service.
#                         The service's own artefacts are removed before
#                         each build (cargo clean -p) and its sources are
#                         stamped with the build's time, so that cargo, which
#                         judges freshness by modification times, can never
#                         take another key's binary for this one; the build
#                         fails unless cargo says it compiled the service.
#   axum/work/            the crate copy being built (under the build lock).
#   axum/build-KEY/       one build: axum-service, build.log, manifest.
#                         KEY = sha256 of the build recipe, the cargo and
#                         rustc versions, the registry manifest, the crate's
#                         files and the patch contents, in order.
# A cache hit prints the path at once and needs no network. The first run
# downloads about 280 packages (17 MB) and builds about 50 crates, a minute
# or so on two cores; each new key then recompiles only the service crate
# (a few seconds). KAVACH_AXUM_REFRESH=1 asks apt again for the newest crates;
# KAVACH_AXUM_SUITE names another Debian suite to take them from.
#
# Safe to run concurrently: fetching takes an exclusive lock (flock) on the
# registry, building a shared one plus the build lock (the target directory
# is shared), and each build appears in one rename.
set -euo pipefail

# stdout is only for the result: everything else, children included, goes to
# stderr.
exec 3>&1 1>&2

prog=axum-build
# shellcheck source=scripts/buildlib.sh
. "$(dirname "${BASH_SOURCE[0]}")/buildlib.sh"
# tail_log FILE [N]: the last lines of a log, indented.
tail_log() { tail -n "${2:-30}" "$1" | sed 's/^/    /' >&2; }

# The Debian suite the crates come from, and the packages whose dependency
# closure is fetched.
suite=${KAVACH_AXUM_SUITE:-trixie}
roots=(librust-axum-dev librust-tokio-dev librust-serde-dev librust-serde-json-dev)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
profile=dev
# Part of every build key: change it when the way of building changes.
recipe="kavach-axum-build/2 patch -p1 --fuzz=0; cargo build --offline --profile $profile"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
srcdir=$(cd "$here/../examples/axum-service" 2>/dev/null && pwd -P) ||
	die "the crate is not there: $here/../examples/axum-service"
[ -f "$srcdir/Cargo.toml" ] || die "no Cargo.toml in $srcdir"

[ -n "${HOME:-}" ] || die "HOME is not set"
cache=${KAVACH_CACHE_DIR:-$HOME/.cache/kavach}
mkdir -p "$cache" || die "cannot create cache directory $cache"
cache=$(cd "$cache" && pwd -P)
aptdir=$cache/apt-$suite
rustdir=$cache/rust
registry=$rustdir/registry
adir=$cache/axum
mkdir -p "$aptdir" "$rustdir" "$adir"

# ---------------------------------------------------------------- patches ---

collect_patches "$@"

# ---------------------------------------------------------------- sources ---

# write_sources OUT: writes to OUT (a .sources file) one stanza for $suite
# (main, signed by the Debian archive keyring) for each URI that the
# system's apt configuration uses for its own release. Nothing is
# hard-coded: the mirror is whatever the system uses.
write_sources() {
	local out=$1 codename sl sp f uris
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || codename=$(lsb_release -sc 2>/dev/null || true)
	[ -n "$codename" ] || die "cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release)"
	eval "$(apt-config shell sl Dir::Etc::sourcelist/f sp Dir::Etc::sourceparts/d)"
	local files=()
	[ -f "$sl" ] && files+=("$sl")
	for f in "$sp"*.list "$sp"*.sources; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || die "no apt sources found ($sl, $sp)"
	say "deriving the $suite mirror from the sources of $codename: ${files[*]}"
	uris=$(
		for f in "${files[@]}"; do
			case $f in
			*.sources) awk -v codename="$codename" -f <(deb822_uris_awk) "$f" ;;
			*) awk -v codename="$codename" -f <(oneline_uris_awk) "$f" ;;
			esac
		done | awk '!seen[$0]++'
	)
	[ -n "$uris" ] || die "no apt source serves $codename in: ${files[*]} (cannot tell which mirror to ask for $suite)"
	: >"$out"
	local uri
	while IFS= read -r uri; do
		printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n\n' \
			"$uri" "$suite" "$keyring" >>"$out"
	done <<<"$uris"
}

# deb822 (.sources): the URIs of each enabled stanza of type deb whose
# suites include the system's codename.
deb822_uris_awk() {
	cat <<'EOF'
function flush(   i, n, parts, isdeb, has) {
	n = split(field["types"], parts, /[ \t]+/)
	isdeb = 0
	for (i = 1; i <= n; i++) if (parts[i] == "deb") isdeb = 1
	n = split(field["suites"], parts, /[ \t]+/)
	has = 0
	for (i = 1; i <= n; i++) if (parts[i] == codename) has = 1
	if (isdeb && has && tolower(field["enabled"]) != "no") {
		n = split(field["uris"], parts, /[ \t]+/)
		for (i = 1; i <= n; i++) if (parts[i] != "") print parts[i]
	}
	delete field; last = ""
}
/^#/ { next }
/^[ \t]*$/ { flush(); next }
/^[ \t]/ { if (last != "") field[last] = field[last] " " $0; next }
{
	k = $0; sub(/:.*/, "", k)
	v = $0; sub(/^[^:]*:[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
	last = tolower(k); field[last] = v
}
END { flush() }
EOF
}

# One-line format (.list): the URI of each "deb [opts] URI SUITE COMP..."
# line whose suite is the system's codename.
oneline_uris_awk() {
	cat <<'EOF'
{ sub(/#.*/, ""); sub(/[ \t]+$/, "") }
$1 == "deb" {
	line = $0; sub(/^[ \t]*deb[ \t]+/, "", line)
	if (line ~ /^\[/) sub(/^[^\]]*\][ \t]*/, "", line)
	n = split(line, w, /[ \t]+/)
	if (n >= 2 && w[2] == codename) print w[1]
}
EOF
}

# ----------------------------------------------------------------- crates ---

# setup_apt: the private apt state for $suite, lists updated. Sets apt and
# aptcache (commands).
setup_apt() {
	ensure_pkgs "$keyring=debian-archive-keyring"
	private_apt "$aptdir"
	write_sources "$aptdir/sources.list.d/kavach-$suite.sources"
	apt=(apt-get -q -c "$aptdir/apt.conf")
	aptcache=(apt-cache -c "$aptdir/apt.conf")
	say "apt-get update for $suite (private state in $aptdir)"
	"${apt[@]}" update >"$aptdir/update.log" 2>&1 || {
		tail_log "$aptdir/update.log"
		die "apt-get update failed (sources: $aptdir/sources.list.d/kavach-$suite.sources, keyring $keyring; log: $aptdir/update.log)"
	}
}

# fetch_crates: downloads the dependency closure of $roots from $suite and
# unpacks it into $registry (replacing any older one) and its manifest.
# Called under the exclusive registry lock.
fetch_crates() {
	ensure_pkgs dpkg-deb=dpkg
	setup_apt
	local tmp
	tmp=$(mktemp -d "$rustdir/.tmp-fetch.XXXXXX")
	tmps+=("$tmp")

	say "resolving the dependency closure of ${roots[*]}"
	"${aptcache[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "${roots[@]}" >"$tmp/depends.txt" 2>"$tmp/depends.err" || {
		tail_log "$tmp/depends.err"
		die "apt-cache depends --recurse ${roots[*]} failed (is $suite's librust-axum-dev there?)"
	}
	# Package names are the unindented lines; virtual packages and
	# alternatives come as <name> and are left out. Only the names apt can
	# show are real packages with a version to download.
	local names=()
	mapfile -t names < <(grep -E '^librust-[a-z0-9.+-]+$' "$tmp/depends.txt" | sort -u)
	[ ${#names[@]} -gt 0 ] || die "apt-cache depends found no librust-* package for ${roots[*]}"
	local pkgs=()
	mapfile -t pkgs < <("${aptcache[@]}" show --no-all-versions "${names[@]}" 2>/dev/null |
		sed -n 's/^Package:[ \t]*//p' | sort -u)
	local r
	for r in "${roots[@]}"; do
		printf '%s\n' "${pkgs[@]}" | grep -qxF "$r" || die "$r is not in $suite (see $aptdir/update.log)"
	done

	say "downloading ${#pkgs[@]} packages"
	mkdir "$tmp/debs" "$tmp/root"
	(cd "$tmp/debs" && "${apt[@]}" download "${pkgs[@]}") >"$tmp/download.log" 2>&1 || {
		tail_log "$tmp/download.log"
		die "apt-get download of ${#pkgs[@]} packages failed (log above)"
	}
	local deb n=0
	: >"$tmp/manifest"
	for deb in "$tmp"/debs/*.deb; do
		[ -f "$deb" ] || continue
		dpkg-deb -x "$deb" "$tmp/root" || die "dpkg-deb -x $(basename "$deb") failed"
		dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >>"$tmp/manifest"
		n=$((n + 1))
	done
	[ "$n" -eq ${#pkgs[@]} ] || die "downloaded $n packages, expected ${#pkgs[@]} (log: $tmp/download.log)"
	local reg=$tmp/root/usr/share/cargo/registry
	[ -d "$reg" ] || die "the packages hold no usr/share/cargo/registry"
	ls -d "$reg"/axum-0.7.* >/dev/null 2>&1 || die "no axum 0.7 crate in the packages of $suite"
	# Cargo wants a .cargo-checksum.json in each crate of a directory
	# source; Debian ships one ({"package":...,"files":{}}), but make sure.
	local d made=0
	for d in "$reg"/*/; do
		if [ ! -f "$d/.cargo-checksum.json" ]; then
			printf '{"package":"","files":{}}\n' >"$d/.cargo-checksum.json"
			made=$((made + 1))
		fi
	done
	[ "$made" -eq 0 ] || say "wrote a .cargo-checksum.json for $made crates that had none"
	sort -o "$tmp/manifest" "$tmp/manifest"

	# In place: the old registry, if any, goes aside first (nobody is
	# building: we hold the registry lock exclusively).
	[ ! -e "$registry" ] || mv -T "$registry" "$tmp/old-registry"
	mv -T "$reg" "$registry"
	mv -f "$tmp/manifest" "$rustdir/registry.manifest"
	say "unpacked $(ls "$registry" | wc -l) crates from $n packages into $registry"
}

# ------------------------------------------------------------------- main ---

# Leftovers of runs killed with SIGKILL (no build takes a day).
find "$rustdir" "$adir" -maxdepth 1 -name '.tmp-*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true

tmps=()
cleanup() {
	local d
	for d in ${tmps[@]+"${tmps[@]}"}; do rm -rf "$d"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

have_registry() { [ -s "$rustdir/registry.manifest" ] && [ -d "$registry" ]; }

# fd 4: the registry lock. Exclusive to fetch, shared while building.
exec 4>"$rustdir/.lock-registry"
if [ -n "${KAVACH_AXUM_REFRESH:-}" ] || ! have_registry; then
	flock -n 4 || {
		say "waiting for another process using the crate registry"
		flock 4
	}
	if [ -n "${KAVACH_AXUM_REFRESH:-}" ] || ! have_registry; then
		fetch_crates
	fi
fi
# Shared from here on: the registry stays as it is while the key is computed
# and the build runs.
flock -s 4

command -v cargo >/dev/null && command -v rustc >/dev/null ||
	die "cargo and rustc are needed on PATH (1.75 or newer: bookworm's are too old for axum 0.7)"
# Builds must not depend on the caller's cargo settings.
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_BUILD_TARGET \
	CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR CARGO_PROFILE_DEV_PANIC CARGO_INCREMENTAL
# Asked from the cache, where the builds run: a rust-toolchain file in the
# caller's directory must not change the answer.
tools=$(cd "$adir" && cargo -V 2>&1 && rustc -vV 2>&1) || die "cargo -V / rustc -vV failed: $tools"

# The crate's files, for the key and the copy: all but patches/, target/ and
# a stray Cargo.lock (versions are resolved against the Debian crates).
mapfile -t files < <(cd "$srcdir" && find . \( -path ./patches -o -path ./target -o -path ./Cargo.lock \) -prune \
	-o -type f -print | LC_ALL=C sort)
manifest=$(
	printf '%s\n%s\nregistry %s\n' "$recipe" "$tools" "$(sha256sum <"$rustdir/registry.manifest" | cut -d' ' -f1)"
	(cd "$srcdir" && sha256sum "${files[@]}") | sed 's/^/file /'
	for p in ${patches[@]+"${patches[@]}"}; do
		printf 'patch %s %s\n' "$(sha256sum <"$p" | cut -d' ' -f1)" "$p"
	done
)
# The key covers the patch contents, not their names.
key=$(printf '%s\n' "$manifest" | sed 's/^\(patch [0-9a-f]*\) .*/\1/' | sha256sum | cut -d' ' -f1)
out=$adir/build-$key
bin=$out/axum-service

if [ -x "$bin" ]; then
	echo "$bin" >&3
	exit 0
fi

# fd 5: the build lock (one build at a time: the target directory is shared).
exec 5>"$adir/.lock-build"
flock -n 5 || {
	say "waiting for another build of the axum service"
	flock 5
}
if [ -x "$bin" ]; then
	echo "$bin" >&3
	exit 0
fi
ensure_pkgs patch=patch
cargo_home=$adir/cargo-home
mkdir -p "$cargo_home"
cat >"$cargo_home/config.toml.tmp" <<EOF
# Written by scripts/axum-build.sh: crates come from Debian's source crates.
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$registry"

[net]
offline = true

[term]
color = "never"
EOF
mv -f "$cargo_home/config.toml.tmp" "$cargo_home/config.toml"

# A fixed place for the copy: the service crate keeps the same identity in
# the shared target directory, so its incremental state is reused.
work=$adir/work
rm -rf "$work" "$adir/.tmp-out"
mkdir -p "$work/axum-service"
tree=$work/axum-service
# -m: the copies get the time of now, not the originals' times. Cargo tells
# a changed source by its time against the last build's: an unpatched file
# restored with its old time, after a build of the same file patched, would
# look unchanged and the patched binary would be reused.
(cd "$srcdir" && tar -cf - "${files[@]}") | (cd "$tree" && tar -xmf -) || die "cannot copy $srcdir to $tree"
log=$work/build.log
: >"$log"
applied=0
for p in ${patches[@]+"${patches[@]}"}; do
	say "applying $p"
	echo "== patch -p1 < $p" >>"$log"
	if ! (cd "$tree" && patch -p1 --fuzz=0 --forward --batch --no-backup-if-mismatch <"$p") >"$work/patch.log" 2>&1; then
		tail_log "$work/patch.log"
		after=""
		[ "$applied" -eq 0 ] || after=", after the $applied patch(es) before it"
		die "patch does not apply: $p (to $srcdir$after)"
	fi
	cat "$work/patch.log" >>"$log"
	applied=$((applied + 1))
done

# The tar copy keeps the original modification times, which can be older
# than the previous key's build in the shared target directory: cargo would
# call that build fresh. Stamp the sources now and remove the service's
# artefacts (its dependencies stay), so that this key's binary is compiled
# from this key's sources.
find "$tree" -type f -exec touch {} +
echo "== cargo clean -p axum-service" >>"$log"
(cd "$tree" && CARGO_HOME="$cargo_home" CARGO_TARGET_DIR="$adir/target" CARGO_TERM_COLOR=never \
	cargo clean --offline -p axum-service) >>"$log" 2>&1 || {
	tail_log "$log"
	die "cargo clean -p axum-service failed (log: $log)"
}

say "building axum-service${patches[0]+ with ${#patches[@]} patch(es)} (a minute or so when the crates are not built yet; log: $log)"
start=$SECONDS
echo "== cargo build --offline --profile $profile" >>"$log"
if ! (cd "$tree" && CARGO_HOME="$cargo_home" CARGO_TARGET_DIR="$adir/target" CARGO_TERM_COLOR=never \
	cargo build --offline --profile "$profile") >>"$log" 2>&1; then
	failed=$adir/failed-$key.log
	cp "$log" "$failed"
	if grep -q -E '^error' "$log"; then
		say "errors:"
		# Each error with the lines that explain it, up to a blank line.
		awk '/^error/ { on = 1 } on { print; n++ } /^$/ { on = 0 } n >= 60 { exit }' "$log" | sed 's/^/    /' >&2
	else
		say "last lines of the log:"
		tail_log "$log" 30
	fi
	die "cargo build failed (full log: $failed)"
fi
built=$adir/target/debug/axum-service
[ -x "$built" ] || die "cargo build produced no $built (log: $log)"
crates=$(grep -c '^ *Compiling ' "$log" || true)
grep -q '^ *Compiling axum-service ' "$log" ||
	die "cargo did not compile axum-service: the binary would not come from this key's sources (log: $log)"

tmpout=$adir/.tmp-out
mkdir "$tmpout"
tmps+=("$tmpout")
cp "$built" "$tmpout/axum-service"
cp "$log" "$tmpout/build.log"
printf '%s\n' "$manifest" >"$tmpout/manifest"
# One rename makes the build visible; nobody else can be renaming onto this
# key while we hold the build lock.
mv -T "$tmpout" "$out"
rm -rf "$work"
rm -f "$adir/failed-$key.log"
say "built in $((SECONDS - start))s ($crates crates compiled): $bin"
echo "$bin" >&3
