"""The typed record family every later step reads (see :mod:`attnprof.record.family`)."""
