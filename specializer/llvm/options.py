"""LLVM's cl::opts, set for one piece of work and put back afterwards, never left set.

llvmlite reaches LLVM's command-line options only through `set_option`, which changes them for
the whole process, and LLVM cannot be asked for an option's current value. So every option the
tool sets is listed here with LLVM 22's default, and `scoped` restores that default when the
work is done: a build's result depends on its own settings, not on what ran before it.
"""

from __future__ import annotations

from contextlib import contextmanager

import llvmlite.binding as llvm

# option -> LLVM's default (what `scoped` restores)
DEFAULTS = {
    "unroll-threshold": "150",  # UnrollThresholdDefault at O2 (LoopUnrollPass.cpp)
    "force-specialization": "false",
    "funcspec-for-literal-constant": "true",
    "funcspec-on-address": "false",
    "funcspec-max-clones": "3",
    "preserve-ll-uselistorder": "false",
    "arm-assume-misaligned-load-store": "false",
    "pre-RA-sched": "default",
}


@contextmanager
def scoped(settings: dict[str, str]):
    """Run the enclosed work with `settings` (option -> value); each is reset to its default after."""
    unknown = [k for k in settings if k not in DEFAULTS]
    if unknown:
        raise KeyError(f"no default known for LLVM option '{unknown[0]}': add it to options.DEFAULTS")
    for k, v in settings.items():
        llvm.set_option("", f"-{k}={v}")
    try:
        yield
    finally:
        for k in settings:
            llvm.set_option("", f"-{k}={DEFAULTS[k]}")
