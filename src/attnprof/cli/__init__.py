"""The ``attnprof`` command line: one module per subcommand, wired up in :mod:`.main`."""
