"""The one target every stage builds for: a Cortex-M4F on QEMU's mps2-an386 board.

Capture retargets XLA's IR to it, the kernel library is compiled for it with clang, LLVM emits
its objects, GCC links its firmware and QEMU runs that. Each of those reads the facts it needs
from TARGET, so the triple, CPU, float ABI and memories are written once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    # The 4-part spelling: with "thumbv7em-none-eabihf" LLVM 22.1 leaves the float ABI soft.
    triple: str
    datalayout: str
    cpu: str
    features: str  # LLVM's target features for the CPU (single-precision FPv4, 16 d-registers)
    fpu: str  # the same FPU as GCC and clang name it (-mfpu)
    float_abi: str  # -mfloat-abi: "hard" passes floats in s0..s15
    board: str  # qemu-system-arm -M
    flash_origin: int
    flash_bytes: int
    ram_origin: int
    ram_bytes: int

    def arch_flags(self) -> list[str]:
        """What GCC and clang must be told to make code for this core."""
        return [f"-mcpu={self.cpu}", "-mthumb", f"-mfloat-abi={self.float_abi}", f"-mfpu={self.fpu}"]

    def gcc_flags(self) -> list[str]:
        """arm-none-eabi-gcc's flags for the harness and the firmware link."""
        return self.arch_flags() + ["-O2", "-ffunction-sections", "-fdata-sections", "-fno-common"]

    def clang_flags(self) -> list[str]:
        """clang's flags for the kernel library's bitcode: optimizations on (-O0 would mark every
        function optnone, which blocks specialization), no FP contraction (results match the
        reference run op for op)."""
        return [f"--target={self.triple}", f"-mcpu={self.cpu}", f"-mfloat-abi={self.float_abi}",
                f"-mfpu={self.fpu}", "-mthumb", "-O2", "-fomit-frame-pointer", "-fno-builtin-printf",
                "-fno-common", "-ffunction-sections", "-fdata-sections", "-ffp-contract=off"]


# mps2-an386: 4 MiB flash-like memory at 0x0, 4 MiB RAM at 0x20000000 (firmware.py's linker script).
TARGET = Target(triple="thumbv7em-unknown-none-eabihf",
                datalayout="e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64",
                cpu="cortex-m4", features="+vfp4d16sp", fpu="fpv4-sp-d16", float_abi="hard",
                board="mps2-an386", flash_origin=0x0, flash_bytes=4 << 20, ram_origin=0x20000000,
                ram_bytes=4 << 20)
