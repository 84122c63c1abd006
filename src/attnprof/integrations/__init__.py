"""Adapters that run an attnprof capture inside other libraries' training loops.

Each lives in a module of its own, named after the library, and imports that library when
it is imported: ``attnprof`` itself never imports them (``import attnprof`` works without
transformers installed).
"""
