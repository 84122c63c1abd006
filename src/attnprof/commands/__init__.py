"""One module per command: a typed request and ``run(request, progress=None) -> record``.

This layer is the Python API of the commands (``attnprof.commands.analyze.run``, ...): each
module's ``run`` does the whole work of its command — the request checked (a user mistake
is a :class:`~attnprof.errors.UsageError`), the inputs read or measured, the record built —
and prints nothing unless given a ``progress``. The command line (:mod:`attnprof.cli`) turns
flags into the request, calls ``run``, hands the record to the renderers and chooses the
exit status; it builds no record and writes no file itself. A record is saved through
:mod:`attnprof.commands.saving` alone. Nothing is imported here: each command imports only
what its path uses.
"""
