"""The driver: what the commands do, on top of every stage. Builds a model's variants, runs and
measures them (measured.py: the one build-and-measure step), chooses among candidates
(compare.py, callchoice.py), and the other commands' jobs: run and run --entry (run.py), the
HLO profile (profile.py), bundles, the bundled examples and differential testing."""
