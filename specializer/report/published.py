"""The MLPerf Tiny reference models beside the published Cortex-M4 results for the same models.

The published numbers are MLPerf Tiny closed-division median latencies on an STM32L4R5 at
120 MHz (cycles = latency x 120 MHz), measured on silicon that pays flash wait states; ours are
QEMU-counted instructions weighted by the Cortex-M4 TRM's cycle counts with zero-wait memory
(specializer/run/cycles.py). Checked outside the project: ../shared/DESIGN.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from specializer.report.tables import Comparison, github_table

BOARD = "STM32L4R5 @ 120 MHz"


@dataclass(frozen=True)
class Published:
    stack: str
    round: str  # the MLPerf Tiny round it was submitted to
    cycles: dict  # task -> cycles (latency x 120 MHz)


TASKS = ("KWS", "IC", "VWW", "AD")
# the reference model's file -> its task
FILES = {"kws_ref_model.tflite": "KWS", "pretrainedResnet_quant.tflite": "IC", "vww_96_int8.tflite": "VWW",
         "ad01_int8.tflite": "AD"}
RESULTS = (
    Published("ST X-CUBE-AI 9.0", "v1.2", {"KWS": 5.18e6, "IC": 19.8e6, "VWW": 10.7e6, "AD": 0.631e6}),
    Published("Plumerai", "v1.1", {"KWS": 5.73e6, "IC": 20.1e6, "VWW": 11.9e6, "AD": 0.486e6}),
    Published("Bosch HALE", "v1.2", {"KWS": 7.22e6, "IC": 21.7e6, "VWW": 21.7e6, "AD": 0.700e6}),
    Published("microTVM + CMSIS-NN, AOT", "v1.0", {"KWS": 12.0e6, "IC": 46.7e6, "VWW": 36.1e6, "AD": 1.03e6}),
    Published("TFLite Micro + CMSIS-NN reference", "v0.5", {"KWS": 21.8e6, "IC": 84.5e6, "VWW": 72.1e6, "AD": 1.21e6}),
)
WAIT_STATES = ("Not charged by our estimate: flash wait states (the board runs from flash at 120 MHz; moving "
               "AD's weights from flash to RAM made one submission 20-25% faster), the bus and the caches: "
               "est. cycles are a zero-wait count, the published ones were measured.")


def _cell(cycles: float | None, macs: int | None) -> str:
    if cycles is None:
        return "-"
    per = f" ({cycles / macs:.2f})" if macs else ""
    return f"{cycles / 1e6:.2f} M{per}"


def beside_published(comparisons: list[Comparison], variants: tuple[str, ...],
                     arenas: dict[str, int]) -> tuple[str, dict]:
    """(markdown, JSON) for the comparisons of the MLPerf Tiny files (by model name = file stem):
    est. cycles and cycles/MAC of each variant beside each published stack, then flash and RAM
    beside TFLite Micro's arena (`arenas`: model -> bytes). Empty when none of them ran."""
    by_task = {FILES[f]: c for f in FILES for c in comparisons if c.model == f.rsplit(".", 1)[0]}
    if not by_task:
        return "", {}
    tasks = [t for t in TASKS if t in by_task]
    macs = {t: by_task[t].macs for t in tasks}
    body, data = [], {"board": BOARD, "tasks": {}}
    for v in variants:
        row = [f"specializer {v} (est.)"]
        for t in tasks:
            r = by_task[t].row(v)
            row.append(_cell(r.cycles if r is not None and r.status == "pass" else None, macs[t]))
        body.append(row)
    for p in RESULTS:
        body.append([f"{p.stack} ({p.round}, measured)"] + [_cell(p.cycles[t], macs[t]) for t in tasks])
    header = ["build"] + [f"{t} ({by_task[t].model}, {macs[t] / 1e6:.2f} M MACs)" if macs[t] else t for t in tasks]
    cycles_md = github_table(body, header, ("left",) + ("right",) * len(tasks))

    mem = []
    for v in variants:
        cells = []
        for t in tasks:
            r = by_task[t].row(v)
            cells.append("-" if r is None or r.status != "pass" else f"{r.flash:,} / {r.ram:,}")
        mem.append([f"specializer {v}"] + cells)
    mem.append(["TFLite Micro's arena (host)"] + [f"- / {arenas[by_task[t].model]:,}" if by_task[t].model in arenas
                                                  else "-" for t in tasks])
    mem_md = github_table(mem, ["build (flash / RAM bytes)"] + tasks, ("left",) + ("right",) * len(tasks))
    for t in tasks:
        c = by_task[t]
        data["tasks"][t] = {
            "model": c.model, "macs": c.macs, "tflite_micro_arena": arenas.get(c.model),
            "specializer": {r.variant: {"cycles": r.cycles, "flash": r.flash, "ram": r.ram} for r in c.rows
                            if r.status == "pass"},
            "published": {f"{p.stack} ({p.round})": p.cycles[t] for p in RESULTS}}
    best = {t: min(p.cycles[t] for p in RESULTS) for t in tasks}
    ratio = ", ".join(f"{t} {by_task[t].row(variants[-1]).cycles / best[t]:.2f}x" for t in tasks
                      if by_task[t].row(variants[-1]) is not None and by_task[t].row(variants[-1]).cycles)
    md = "\n".join([
        f"est. cycles (cycles per MAC) of each variant beside the published MLPerf Tiny closed-division results "
        f"on a Cortex-M4 ({BOARD}; cycles = median latency x 120 MHz).", "", cycles_md, "",
        f"{variants[-1]} against the fastest published: {ratio}.", "", WAIT_STATES, "",
        "Flash and RAM (bytes): ours is the model linked alone (code, weights, buffers, stack); TFLite Micro's "
        "arena is what its interpreter allocated on the host for the same model (activations plus its own "
        "structures, 64-bit there: smaller on the core), without the interpreter's code or the weights.", "",
        mem_md])
    return md, data
