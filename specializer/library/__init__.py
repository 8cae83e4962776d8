"""Stage: the libjit kernel library: sources, CMSIS, bitcode."""
