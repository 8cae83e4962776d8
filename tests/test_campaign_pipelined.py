"""campaign.pipelined: each item's first stage runs in a side process while the previous item's
second stage runs here (the benchmark's captures beside the previous model's builds)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from specializer.driver import campaign
from specializer.errors import UserError


def _first(item: tuple[str, int]) -> tuple[int, int]:
    marks, n = item
    if n < 0:
        raise UserError(f"no model {n}")
    if n == 99:  # a capture that takes long
        time.sleep(60)
    (Path(marks) / f"first-{n}").write_text("")
    return n * n, os.getpid()


def test_the_next_items_first_stage_runs_beside_this_items_second(tmp_path):
    items = [(str(tmp_path), n) for n in (3, 1, 2)]
    seen = []

    def second(item, value):
        # item 3's second stage waits for item 1's first stage: it can only end if that ran beside it
        if item[1] == 3:
            deadline = time.monotonic() + 60
            while not (tmp_path / "first-1").exists():
                assert time.monotonic() < deadline, "the next item's first stage did not run beside this one"
                time.sleep(0.05)
        seen.append(item[1])
        return item[1], value[0], value[1]

    out = list(campaign.pipelined(_first, second, items))
    assert [i for i, _ in out] == [0, 1, 2] and seen == [3, 1, 2]
    assert [r[:2] for _, r in out] == [(3, 9), (1, 1), (2, 4)]
    pids = {r[2] for _, r in out}
    assert len(pids) == 1 and os.getpid() not in pids  # one side process, not this one


def test_a_user_error_in_the_first_stage_is_the_value_the_second_stage_gets(tmp_path):
    out = dict(campaign.pipelined(_first, lambda item, v: v, [(str(tmp_path), 2), (str(tmp_path), -1)]))
    assert out[0][0] == 4
    assert isinstance(out[1], UserError) and str(out[1]) == "no model -1"
    assert list(campaign.pipelined(_first, lambda item, v: v, [])) == []


def test_an_error_in_the_second_stage_does_not_wait_for_the_capture_ahead(tmp_path):
    """The next item's first stage (60 s) is running when this item's second stage raises: the
    error comes at once, the side process ended, not after the capture."""
    def second(item, value):
        raise RuntimeError("a build failed")

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="a build failed"):
        list(campaign.pipelined(_first, second, [(str(tmp_path), 2), (str(tmp_path), 99)]))
    assert time.monotonic() - start < 30
