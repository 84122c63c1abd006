"""attnprof.run."""
