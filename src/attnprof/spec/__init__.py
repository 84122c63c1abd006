"""attnprof.spec."""
