"""What a request's fields hold when a program, not the command line, fills them: a list of
names given as one string is one name (not its characters), and a workload's field names
are the :class:`~attnprof.workload.problem.Workload`'s. Each request calls these in its
``__post_init__``, so a mistake is one :class:`~attnprof.errors.UsageError` naming the
field, before anything runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from attnprof.errors import UsageError

__all__ = ["names", "set_names", "workload_fields"]


def names(value: object, field: str) -> tuple[str, ...]:
    """``value`` as a tuple of names: one string is one name; an iterable of strings as it
    is; anything else a UsageError naming ``field``."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
        found = tuple(value)
        if all(isinstance(v, str) for v in found):
            return found
    raise UsageError(f"{field} must be a list of strings (or one string), got "
                     f"{type(value).__name__} {value!r:.80}")


def set_names(request: object, *fields: str) -> None:
    """Each of ``fields`` of the frozen ``request`` made a tuple of names (:func:`names`)."""
    for field in fields:
        object.__setattr__(request, field, names(getattr(request, field), field))


def workload_fields(value: object) -> None:
    """Refuse a workload mapping that is not one, or names a field the workload has not,
    naming the fields it has."""
    import msgspec

    from attnprof.workload.problem import Workload

    if not isinstance(value, Mapping):
        raise UsageError(f"workload must be a mapping of Workload fields (e.g. {{'seq': "
                         f"1024}}), got {type(value).__name__}")
    known = [f.name for f in msgspec.structs.fields(Workload)]
    unknown = [str(k) for k in value if k not in known]
    if unknown:
        raise UsageError(f"workload field {unknown[0]!r} is not one of the workload's; "
                         f"give some of: {', '.join(known)}")
