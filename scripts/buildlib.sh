# shellcheck shell=bash
# What scripts/redis-build.sh and scripts/axum-build.sh share; sourced by
# both after they set $prog. Defines say, die, as_root, ensure_pkgs and
# collect_patches.

say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 1
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		return 1
	fi
}

# ensure_pkgs CMD=PACKAGE...: installs, with the system's apt, the package of
# each command (or file, for an absolute path) that is missing.
ensure_pkgs() {
	local need=() spec
	for spec in "$@"; do
		case ${spec%%=*} in
		/*) [ -e "${spec%%=*}" ] || need+=("${spec#*=}") ;;
		*) command -v "${spec%%=*}" >/dev/null || need+=("${spec#*=}") ;;
		esac
	done
	[ ${#need[@]} -gt 0 ] || return 0
	say "installing missing packages: ${need[*]}"
	local install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}")
	if ! as_root "${install[@]}"; then
		as_root apt-get update -q && as_root "${install[@]}" ||
			die "could not install ${need[*]} (need root or sudo); install them and retry"
	fi
}

# collect_patches FILE...: sets the array patches to the files' absolute
# paths, after checking each is a readable file.
collect_patches() {
	patches=()
	local p
	for p in "$@"; do
		[ -f "$p" ] || die "patch file not found: $p"
		[ -r "$p" ] || die "patch file not readable: $p"
		patches+=("$(cd "$(dirname "$p")" && pwd -P)/$(basename "$p")")
	done
}

# private_apt DIR: makes DIR a private apt state (its own sources.list.d,
# lists, cache and an empty status) and writes DIR/apt.conf, which points
# apt at it alone: the system's apt configuration, lists and caches are
# left alone. Package lists only: no AppStream metadata or translations.
private_apt() {
	local dir=$1 sandbox=""
	mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
	: >"$dir/status"
	# The private state lives under $HOME, where apt's sandbox user (_apt)
	# usually cannot go: apt would fall back to root anyway, with a warning.
	[ "$(id -u)" -ne 0 ] || sandbox='APT::Sandbox::User "root";'
	cat >"$dir/apt.conf" <<CONF
// Private apt state for scripts/$prog.sh.
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
Dir::Etc::SourceList "/dev/null";
Dir::Etc::SourceParts "$dir/sources.list.d";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "/dev/null";
Dir::State::Lists "$dir/lists";
Dir::State::status "$dir/status";
Dir::Cache "$dir/cache";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled "false";
Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled "false";
Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled "false";
Acquire::Languages "none";
$sandbox
CONF
}
