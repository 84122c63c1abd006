"""Renderers: they format a record, they never compute a metric."""
