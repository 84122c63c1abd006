"""attnprof.record.run."""
