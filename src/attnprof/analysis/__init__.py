"""Analysis passes: pure functions over traces and run records."""
