"""specializer: XLA's LLVM IR, specialized for Arm Cortex-M4 and measured on QEMU."""

__version__ = "0.1.0"
