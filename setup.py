"""Only the optional C extension lives here; everything else is in pyproject.toml.

``attnprof.trace._scan`` reads trace events into fixed records in C (the loader's fast
path, see src/attnprof/trace/scan.py). It is optional: where no C compiler is available the
build goes on without it and the loader decodes every batch with msgspec, with the same
result, only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "attnprof.trace._scan",
            sources=["src/attnprof/trace/_scan.c"],
            optional=True,
        )
    ]
)
