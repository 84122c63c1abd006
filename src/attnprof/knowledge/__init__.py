"""attnprof.knowledge."""
