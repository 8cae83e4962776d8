"""Stage: link, specialize, optimize, emit: the five variants."""
