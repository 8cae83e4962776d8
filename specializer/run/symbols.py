"""The functions of a linked ELF, by address: what a profile row and a fault's PC are named by."""

from __future__ import annotations

from pathlib import Path

from elftools.elf.elffile import ELFFile


def functions(elf: Path) -> list[tuple[int, int, str]]:
    """(start, size, name) of every function symbol, sorted by address."""
    out = {}
    with open(elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        for s in symtab.iter_symbols():
            if s["st_info"]["type"] == "STT_FUNC" and s["st_size"] > 0:
                start = s["st_value"] & ~1
                # a global symbol wins over a local alias at the same address
                if start not in out or s["st_info"]["bind"] == "STB_GLOBAL":
                    out[start] = (start, s["st_size"], s.name)
    return sorted(out.values())
