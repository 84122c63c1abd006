"""attnprof.analysis.index."""
