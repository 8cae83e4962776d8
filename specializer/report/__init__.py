"""Stage: comparisons, reports, plots."""
