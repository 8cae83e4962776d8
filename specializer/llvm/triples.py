"""Target triples, read the way LLVM reads them: by what each component names, not by position.

LLVM's Triple parses every component on its own (arch, vendor, OS, environment) and
normalizes the order, so `thumbv7em-none-eabihf`, `thumbv7em-unknown-none-eabihf` and
`thumbv7em-none-unknown-eabihf` are one target. Every spelling of a hard-float EABI
ARMv7E-M (Cortex-M4F) triple is ours; anything else is named by its architecture.
"""

from __future__ import annotations

from dataclasses import dataclass

# ARMv7E-M, Thumb or "ARM" spelling (M-profile runs Thumb only, so both mean the same code).
OUR_ARCHS = frozenset({"thumbv7em", "armv7em"})
HARD_FLOAT_EABI = frozenset({"eabihf", "gnueabihf", "musleabihf"})
SOFT_FLOAT_EABI = frozenset({"eabi", "gnueabi", "musleabi"})
_BARE_OS = frozenset({"none", "unknown", "elf"})
_VENDORS = frozenset({"unknown", "none", "arm", "pc", "apple"})


@dataclass(frozen=True)
class Triple:
    text: str
    arch: str
    vendor: str
    os: str
    env: str


def parse(text: str) -> Triple:
    """Components by meaning: the first is the architecture; an EABI-like word is the
    environment; of the rest, a known vendor word fills the vendor before the OS."""
    parts = text.strip().lower().split("-")
    arch, rest = parts[0], parts[1:]
    env = next((p for p in rest if p in HARD_FLOAT_EABI | SOFT_FLOAT_EABI or p.startswith(("gnu", "musl", "eabi"))),
               "")
    rest = [p for p in rest if p != env]
    vendor = os = ""
    for p in rest:
        if not vendor and p in _VENDORS and (len(rest) > 1 or p not in _BARE_OS):
            vendor = p
        elif not os:
            os = p
    return Triple(text, arch, vendor or "unknown", os or "unknown", env)


def problem(text: str) -> str | None:
    """None when `text` is a Cortex-M4 hard-float EABI triple, else why it is not."""
    if not text:
        return "the module has no target triple"
    t = parse(text)
    if t.arch not in OUR_ARCHS:
        return f"target triple '{text}' is for {t.arch or '(no architecture)'}, not thumbv7em (Cortex-M4)"
    if t.env in SOFT_FLOAT_EABI:
        return f"target triple '{text}' is soft-float ({t.env}); this tool builds hard-float EABI (eabihf)"
    if t.env not in HARD_FLOAT_EABI:
        return f"target triple '{text}' names no hard-float EABI environment (eabihf)"
    if t.os not in _BARE_OS:
        return f"target triple '{text}' is for the {t.os} operating system, not bare metal (none)"
    return None
