"""Stage: JAX -> XLA -> one retargeted module + manifest."""
