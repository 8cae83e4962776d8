"""Campaigns: many independent tasks (the fuzzer's batches, the benchmark's models) on a Dask
cluster when given its scheduler's address, else on a local process pool.

    for i, result in campaign.run(task, items, scheduler=None, jobs=2):   # as each finishes
        ...

`task` must be a module-level function (it is pickled to the workers) and `items` plain data.
A cluster's workers need this package installed and the task's paths (the output directory, the
build directory) on a file system they share with the caller; a local cluster on one machine has
both. Results are the same wherever they run: every task is deterministic and the caller orders
them (a campaign's log holds one line per item, so an interrupted one resumes where it stopped).
Dask (the `distributed` package) is an optional extra: `pip install 'specializer[cluster]'`.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterator

from specializer.errors import UserError


CONNECT_SECONDS = 30.0  # Dask retries a refused connection until then


def run(task: Callable, items: list, *, scheduler: str | None = None, jobs: int = 1,
        connect_seconds: float = CONNECT_SECONDS) -> Iterator[tuple[int, object]]:
    """(index, task(item)) for every item, in the order they finish: on the Dask cluster at
    `scheduler` (tcp://host:port), else `jobs` local processes (1: in this process, in order)."""
    if scheduler:
        yield from _on_cluster(task, items, scheduler, connect_seconds)
    elif jobs <= 1:
        for i, item in enumerate(items):
            yield i, task(item)
    else:
        with ProcessPoolExecutor(jobs) as pool:
            futures = {pool.submit(task, item): i for i, item in enumerate(items)}
            for f in as_completed(futures):
                yield futures[f], f.result()


def pipelined(first: Callable, second: Callable, items: list) -> Iterator[tuple[int, object]]:
    """(index, second(item, first(item))) for every item, in order, each item's `first` running in
    a side process while the previous item's `second` runs here: a model's capture (one core:
    JAX, then parsing XLA's dumps) beside the previous model's builds, which leave a core idle in
    their tails. `first` must be picklable; a UserError it raises is handed to `second` as the value."""
    if not items:
        return
    # spawn: this process may hold LLVM and a build pool's threads, which a fork would copy mid-state.
    # A Pool, not an executor: when `second` raises or the caller stops early, terminate() ends the
    # capture running ahead at once (its JAX worker dies with it) instead of waiting it out.
    pool = multiprocessing.get_context("spawn").Pool(1)
    try:
        ahead = pool.apply_async(_caught, (first, items[0]))
        for i, item in enumerate(items):
            value = ahead.get()
            if i + 1 < len(items):
                ahead = pool.apply_async(_caught, (first, items[i + 1]))
            yield i, second(item, value)
        pool.close()
        pool.join()
    finally:
        pool.terminate()


def _caught(fn: Callable, item: object) -> object:
    try:
        return fn(item)
    except UserError as e:
        return e


def _on_cluster(task: Callable, items: list, scheduler: str, connect_seconds: float) -> Iterator[tuple[int, object]]:
    try:
        from distributed import Client, as_completed as done_first
    except ImportError:
        raise UserError("--scheduler needs Dask's 'distributed' package: pip install 'specializer[cluster]'") from None
    try:
        client = Client(scheduler, timeout=connect_seconds)
    except (OSError, TimeoutError) as e:
        raise UserError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
    with client:
        # pure=False: every item runs (two equal items are two tasks); each keyed by its index
        name = getattr(task, "__name__", None) or getattr(getattr(task, "func", None), "__name__", "task")  # a partial
        futures = client.map(task, items, pure=False, key=[f"{name}-{i}" for i in range(len(items))])
        index = {f.key: i for i, f in enumerate(futures)}
        for f in done_first(futures):
            try:
                result = f.result()
            except UserError:
                raise
            except Exception as e:  # noqa: BLE001 - a worker lost, a task that raised: one line
                raise UserError(f"task {f.key} on {scheduler} failed: {type(e).__name__}: {e}") from None
            yield index[f.key], result
