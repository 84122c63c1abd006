"""Ragged sequence lengths: how ``--lengths`` is read and how a seeded draw is made.

``--lengths`` takes three forms (no torch, so a mistake is said before torch's import):

* a range ``LO..HI``: lengths drawn, seeded, from a distribution over [LO, HI] named by
  ``--lengths-dist``: ``uniform``; ``normal`` (mean at the middle, standard deviation a
  sixth of the range, clipped); ``longtail`` (log-uniform: most sequences short, a few
  long, as chat and code corpora look);
* a list ``32,64,200``: exactly these lengths;
* ``@FILE``: a file of integers, one per line or one JSON list.

What the lengths are *of* depends on the mask: for ``padding`` one length per batch row
(the rest of the row is padding); for ``document`` the documents packed back to back in
each row of ``--seq`` tokens (a list is repeated in every row, a range is drawn until the
row is full; the last document of a row is cut at the row's end).
"""

from __future__ import annotations

import math
import re

from attnprof.errors import UsageError

#: The seeded distributions a ``LO..HI`` range is drawn from.
DISTRIBUTIONS: tuple[str, ...] = ("uniform", "normal", "longtail")

_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")
#: The largest ``@FILE`` of lengths read (a million lengths is far beyond any batch).
_FILE_BYTES = 8 << 20


def parse_lengths(text: str) -> tuple[int, int] | tuple[int, ...]:
    """``LO..HI`` as a ``(lo, hi)`` range marker, or a list of lengths; :class:`UsageError`
    naming the bad value otherwise. ``@FILE`` is read by :func:`read_lengths_file`."""
    if text.startswith("@"):
        return read_lengths_file(text[1:])
    match = _RANGE.match(text)
    if match:
        lo, hi = int(match.group(1)), int(match.group(2))
        check_lengths((lo, hi), "--lengths")
        if lo > hi:
            raise UsageError(f"--lengths {text}: the range's start is past its end; "
                             f"write it low..high ({hi}..{lo})")
        return (lo, hi)
    parts = [p.strip() for p in text.split(",")]
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(f"--lengths {text!r} is not a range LO..HI, a list 32,64,200 or "
                         "@FILE of integers") from None
    check_lengths(values, "--lengths")
    return values


def read_lengths_file(path: str) -> tuple[int, ...]:
    """The integers in ``path``: one per line, or one JSON list; one line otherwise."""
    from attnprof.input_files import Cap, read_input

    source = f"--lengths @{path}"
    data = read_input(path, source, cap=Cap(_FILE_BYTES, "a file of lengths"),
                      fix="give one length per line")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{source} is not text; give one integer per line or a JSON list"
                         ) from None
    values: list[object]
    if text.lstrip().startswith("["):
        try:
            import json  # here: every command imports this module, few read a file

            values = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"{source} is not a JSON list of integers ({exc})") from None
        if not isinstance(values, list):
            raise UsageError(f"{source} is not a JSON list of integers")
    else:
        values = [line.strip() for line in text.splitlines() if line.strip()]
    lengths: list[int] = []
    for i, value in enumerate(values, 1):
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise UsageError(f"{source}: entry {i} ({str(value)[:40]!r}) is not an integer; "
                             "give one integer per line or a JSON list of integers")
        lengths.append(value)
    if not lengths:
        raise UsageError(f"{source} holds no lengths; give one integer per line")
    check_lengths(lengths, source)
    return tuple(lengths)


def check_lengths(lengths: tuple[int, ...] | list[int], source: str,
                  seq: int | None = None) -> None:
    """Every length a positive integer (and at most ``seq``, when given)."""
    for n in lengths:
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise UsageError(f"{source}: length {n!r} is not a positive integer; every "
                             "sequence holds at least one token")
        if seq is not None and n > seq:
            raise UsageError(f"{source}: length {n} is longer than --seq {seq}; raise --seq "
                             f"to at least {max(lengths)} or shorten the lengths")


def check_distribution(name: str) -> None:
    if name not in DISTRIBUTIONS:
        raise UsageError(f"unknown --lengths-dist {name!r}; use one of "
                         f"{', '.join(DISTRIBUTIONS)}")


def draw(lo: int, hi: int, count: int, dist: str, seed: int) -> list[int]:
    """``count`` seeded lengths in [lo, hi] from ``dist`` (the same for the same seed)."""
    check_distribution(dist)
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(count):
        if dist == "uniform":
            n = rng.randint(lo, hi)
        elif dist == "normal":
            n = round(rng.gauss((lo + hi) / 2, max(1.0, (hi - lo) / 6)))
        else:  # longtail: log-uniform, most short, a few long
            n = round(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        out.append(min(hi, max(lo, n)))
    return out


def row_lengths(spec: str | tuple[int, ...] | None, batch: int, seq: int, dist: str,
                seed: int) -> tuple[int, ...]:
    """One length per batch row for a padded batch (``None``: a seeded draw over
    [seq/4, seq])."""
    if spec is None:
        return tuple(draw(max(1, seq // 4), seq, batch, dist, seed))
    parsed = parse_lengths(spec) if isinstance(spec, str) else spec
    if isinstance(spec, str) and _RANGE.match(spec):
        lo, hi = parsed
        check_lengths((lo, hi), "--lengths", seq)
        return tuple(draw(lo, hi, batch, dist, seed))
    check_lengths(parsed, "--lengths", seq)
    if len(parsed) != batch:
        raise UsageError(f"--lengths gives {len(parsed)} lengths for --batch {batch}; give "
                         "one length per batch row, or a range LO..HI to draw them")
    return tuple(parsed)


def documents(spec: str | tuple[int, ...] | None, batch: int, seq: int, dist: str,
              seed: int) -> tuple[tuple[int, ...], ...]:
    """Per batch row, the lengths of the documents packed into its ``seq`` tokens (they sum
    to ``seq``). ``None``: a seeded draw over [seq/8, seq/2]."""
    if spec is None:
        lo, hi, fixed = max(1, seq // 8), max(1, seq // 2), None
    else:
        parsed = parse_lengths(spec) if isinstance(spec, str) else spec
        if isinstance(spec, str) and _RANGE.match(spec):
            lo, hi, fixed = parsed[0], parsed[1], None
            check_lengths((lo, hi), "--lengths", seq)
        else:
            check_lengths(parsed, "--lengths", seq)
            fixed = tuple(parsed)
            if sum(fixed) > seq:
                raise UsageError(f"--lengths {','.join(map(str, fixed))} sum to {sum(fixed)}, "
                                 f"more than --seq {seq} tokens a row packs; give fewer or "
                                 "shorter documents")
    rows = []
    for b in range(batch):
        if fixed is not None:
            docs = list(fixed) + ([seq - sum(fixed)] if sum(fixed) < seq else [])
        else:
            docs, rng_seed = [], seed * 1_000_003 + b
            while sum(docs) < seq:
                docs.append(draw(lo, hi, 1, dist, rng_seed + len(docs))[0])
            docs[-1] -= sum(docs) - seq
        rows.append(tuple(docs))
    return tuple(rows)
