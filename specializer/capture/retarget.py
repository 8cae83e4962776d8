"""Move an XLA kernel module from x86-64 to Cortex-M4 (thumbv7em, hard float).

Text in, text out, applied after `normalize`: new triple and datalayout, x86 function
attributes dropped, the per-dylib module flag dropped (kernels from several XLA dylibs are
linked into one module), and `!invariant.load` dropped (the entry function reuses buffers
across kernels, so a load is not invariant over the whole program).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specializer.llvm import irtext
from specializer.llvm.passes import TextPass
from specializer.target import TARGET


# String attributes ("target-cpu"="x86-64", "prefer-vector-width"="256", ...) all describe the
# host; uwtable asks for unwind tables we never use on a bare-metal target.
_STRING_ATTR = re.compile(r'\s*"[^"]*"(?:="[^"]*")?')
_DROPPED_KEYWORDS = re.compile(r"\s*\buwtable(?:\(\w+\))?")


def _without_host_attributes(body: str) -> str:
    return _DROPPED_KEYWORDS.sub("", _STRING_ATTR.sub("", body))


def set_target(text: str) -> str:
    """Our triple and datalayout, in place of whatever the module had."""
    return irtext.set_target(text, TARGET.datalayout, TARGET.triple)


def respell_target(text: str) -> str:
    """Our triple and datalayout for a module already for Cortex-M4 under another spelling, with
    every line where it was: errors LLVM reports later must point into the user's file."""
    return irtext.respell_target(text, TARGET.datalayout, TARGET.triple)


def retarget(text: str) -> str:
    text = irtext.rewrite_attribute_groups(set_target(text), _without_host_attributes)
    text = irtext.without_metadata(text, "invariant.load")
    return irtext.without_module_flag(text, "xla_dylib_index")


@dataclass(frozen=True)
class Retarget(TextPass):
    name = "retarget"
    summary = ("an x86-64 XLA kernel module moved to Cortex-M4: the target's triple and datalayout, host "
               "attributes, the xla_dylib_index flag and !invariant.load dropped (capture/retarget.py; "
               "after normalize)")
    rewrite = staticmethod(retarget)
