#!/usr/bin/env bash
# Main job: set up, then capture, build, run on QEMU and measure every bundled example model.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
# the main job: every bundled model captured, built five ways (separate, lto, llvm-funcspec, dims, all-args),
# run on QEMU against JAX, one table per model and the geometric-mean summary (also reports/)
exec "$root/.venv/bin/python" "$root/scripts/benchmark.py" "$@"
