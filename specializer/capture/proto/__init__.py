"""Our subset of XLA's protobuf schema (xla_subset.proto) and its generated module."""
