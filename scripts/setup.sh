#!/usr/bin/env bash
# Install everything specializer needs on Debian 12 (run as root): Debian packages, a venv with
# the pinned Python packages, and the QEMU instruction-count plugin (its header comes from
# Debian's qemu source package). Idempotent and quick when nothing is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

packages=(clang-19 llvm-19 gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi
          qemu-system-arm gcc libc6-dev dpkg-dev xz-utils python3 python3-venv python3-pip)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}"
    as_root=(); [[ $(id -u) -eq 0 ]] || as_root=(sudo)
    "${as_root[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The venv is rebuilt when pyproject.toml or setup.py changes (a stamp holds their hash).
venv="$root/.venv"
stamp="$venv/.specializer-stamp"
want="$(cat pyproject.toml setup.py | sha256sum | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    echo "setup: installing Python packages into .venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q -e ".[test]"
    echo "$want" > "$stamp"
fi

# QEMU TCG plugin (fetches qemu-plugin.h on first use), the libjit bitcode and its object (what
# the separate variant links): made once per build directory, before any comparison needs them.
"$venv/bin/python" -c "from specializer.run import qemu; from specializer.optimize import state, variants
qemu.ensure_plugin(); variants.library_object(state.BuildContext.default())"
