"""The one exception type for user mistakes.

Anything the user can fix (a bad flag value, an unknown variant, an unreadable trace, a
malformed expectations file) raises :class:`UsageError` with a message that names the bad
value and says how to fix it. The CLI prints that message on one line and exits with status 2;
it never shows a traceback for such a mistake.
"""

from __future__ import annotations

from attnprof.exit_codes import ExitCode


class UsageError(Exception):
    """A mistake in what the user asked for; the message names the bad value and the fix."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        # One line, always: the CLI prints exactly this.
        super().__init__(" ".join(message.split()))
