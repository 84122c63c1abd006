"""This machine, measured once and remembered: ``attnprof env``'s environment and ceilings.

A :class:`MachineProfile` is what the store caches per host and device (``attnprof env``
measures it; ``--refresh`` measures again): the environment, and the matmul and copy
ceilings per dtype, with the time they were measured, so a comparison can show its rates as
shares of ceilings without spending a second measuring them again.
"""

from __future__ import annotations

import msgspec

from attnprof.record.environment import Ceilings, Environment

__all__ = ["MachineProfile"]


class MachineProfile(msgspec.Struct, kw_only=True):
    """One device of one host: its environment and its ceilings per dtype."""

    environment: Environment
    #: dtype name (``float32``, ``bfloat16`` ...) -> the ceilings measured in it.
    ceilings: dict[str, Ceilings]
    #: When it was measured (UTC, ISO 8601).
    measured: str
