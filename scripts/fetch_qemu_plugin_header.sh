#!/usr/bin/env bash
# Fetch QEMU's TCG plugin header (include/qemu/qemu-plugin.h) from Debian's qemu
# SOURCE package, without touching the system's apt configuration and without
# committing the header to the repository.
#
#   scripts/fetch_qemu_plugin_header.sh [BUILD_DIR]
#
# BUILD_DIR defaults to $SPECIALIZER_BUILD_DIR, else <repo>/build.  Result:
#   BUILD_DIR/qemu-plugin/include/qemu-plugin.h
# Idempotent: does nothing when the header is already there.
#
# How: the deb-src entries are derived from the system's own apt sources
# (/etc/apt/sources.list and /etc/apt/sources.list.d/*.sources|*.list, "deb" ->
# "deb-src") into a PRIVATE apt configuration under BUILD_DIR/apt; apt-get
# update/source run with Dir::Etc::SourceList, Dir::Etc::SourceParts,
# Dir::State::Lists and Dir::Cache pointed there.  Only the one header is then
# extracted from the (large) orig tarball.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${SPECIALIZER_BUILD_DIR:-$repo_root/build}}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"
header="$build/qemu-plugin/include/qemu-plugin.h"

if [[ -s "$header" ]]; then
    echo "qemu-plugin.h already present: $header"
    exit 0
fi

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "error: need root to run: $*" >&2; exit 1; fi
}

# Tools: apt-get source needs dpkg-dev (dpkg-source); the orig tarball is .xz.
missing=()
command -v dpkg-source >/dev/null || missing+=(dpkg-dev)
command -v xz >/dev/null || missing+=(xz-utils)
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

# ---- private apt configuration with deb-src entries --------------------------
apt_dir="$build/apt"
rm -rf "$apt_dir"
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"

# deb822 files: keep every stanza that has "Types: ... deb ...", rewrite its
# Types to deb-src.  One-line .list files: "deb ..." -> "deb-src ...".
shopt -s nullglob
n=0
for f in /etc/apt/sources.list.d/*.sources; do
    awk '
        BEGIN { RS = ""; ORS = "\n\n" }
        {
            keep = 0; out = ""
            nl = split($0, lines, "\n")
            for (i = 1; i <= nl; i++) {
                line = lines[i]
                if (line ~ /^[Tt]ypes:/) {
                    if (line ~ /[: ]deb( |$)/) keep = 1
                    line = "Types: deb-src"
                }
                if (line ~ /^[Ee]nabled:[ \t]*no/) keep = 0
                out = out line "\n"
            }
            if (keep) printf "%s\n", out
        }' "$f" > "$apt_dir/sources.list.d/$(basename "$f")"
    [[ -s "$apt_dir/sources.list.d/$(basename "$f")" ]] && n=$((n + 1))
done
: > "$apt_dir/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    sed -n -E 's/^[[:space:]]*deb([[:space:]])/deb-src\1/p' "$f" >> "$apt_dir/sources.list"
done
[[ -s "$apt_dir/sources.list" ]] && n=$((n + 1))
if ((n == 0)); then
    echo "error: no 'deb' entries found in /etc/apt/sources.list{,.d/} to derive deb-src from" >&2
    exit 1
fi

apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Sandbox::User=root"
    -o "Acquire::Languages=none"
)

echo "apt-get update (private deb-src configuration in $apt_dir)"
apt-get "${apt_opts[@]}" update -q

src_dir="$build/qemu-src"
mkdir -p "$src_dir"
echo "apt-get source --download-only qemu -> $src_dir"
(cd "$src_dir" && apt-get "${apt_opts[@]}" source --download-only -q qemu)

orig=( "$src_dir"/qemu_*.orig.tar.* )
if ((${#orig[@]} == 0)); then
    echo "error: no qemu_*.orig.tar.* in $src_dir after apt-get source" >&2
    exit 1
fi
orig="${orig[-1]}"

# Extract only the one member (the tarball holds all of QEMU; --occurrence
# stops reading once the member has been found).
tmp="$(mktemp -d "$build/qemu-plugin-hdr.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "extracting include/qemu/qemu-plugin.h from $(basename "$orig")"
tar -xf "$orig" -C "$tmp" --wildcards --occurrence=1 '*/include/qemu/qemu-plugin.h'
found=( "$tmp"/*/include/qemu/qemu-plugin.h )
if [[ ! -s "${found[0]}" ]]; then
    echo "error: include/qemu/qemu-plugin.h not found in $orig" >&2
    exit 1
fi
mkdir -p "$(dirname "$header")"
cp "${found[0]}" "$header.tmp.$$"
mv "$header.tmp.$$" "$header"
echo "wrote $header"
