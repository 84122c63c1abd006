"""Measuring one variant: inputs, timing, memory, accuracy (collect side of the pipeline)."""
