"""``python -m attnprof`` is the ``attnprof`` command."""

from attnprof.cli.main import console_main

console_main()
