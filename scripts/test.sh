#!/usr/bin/env bash
# Test job: set up, then run the pytest suite, one worker per core (pytest-xdist; the tests share
# nothing but the build directory, whose entries are made under a lock). Arguments go to pytest:
# `-n 0` runs it in one process, `--slow` adds the slow tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
exec "$root/.venv/bin/python" -m pytest -q -n auto "$@"
