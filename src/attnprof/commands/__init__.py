"""One module per command: a typed request and ``run(request, progress=None) -> Record``,
the whole work of the command (checking the request, measuring or reading, building the
record); this is attnprof's Python API, one function per command.

The command line (:mod:`attnprof.cli`) turns flags into a request, calls ``run``, hands
the record to the renderers and chooses the exit status; it builds no record and writes
no file itself. A record is saved through :mod:`attnprof.commands.saving` alone.
"""
