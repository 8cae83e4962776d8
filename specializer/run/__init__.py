"""Stage: firmware, QEMU, counting, the cost model."""
