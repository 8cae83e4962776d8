#!/usr/bin/env bash
# Test job: set up, then run the pytest suite on one worker more than the cores (pytest-xdist; the
# tests share nothing but the build directory, whose entries are made under a lock): a worker
# waiting on a lock, a QEMU run or a linker leaves its core to the extra one. On two cores three
# workers took 608 s and 720 s, two 628-649 s: the machine's noise is as large as the difference.
# Arguments go to pytest: `-n 0` runs it in one process, `--slow` adds the slow tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
workers=$(( $(nproc) + 1 ))
# --dist loadscope: a test file's tests run in one worker, so its module-scoped fixtures (captures,
# builds) are made once, not once per worker that draws one of its tests
exec "$root/.venv/bin/python" -m pytest -q -n "$workers" --dist loadscope "$@"
