#!/usr/bin/env bash
# Main job: set up, then capture, build, run on QEMU and measure every bundled example model.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
exec "$root/.venv/bin/specialize" examples "$@"
