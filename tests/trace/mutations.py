"""Seeded mutations of real traces, for fuzzing ``attnprof analyze``.

Shared by the suite's fuzz test (a few dozen mutants) and ``benchmarks/fuzz_analyze.py``
(thousands). A mutant is a real trace with a few things broken the way files get broken in
the wild or by hostile hands: values of the wrong type, numbers too large or not finite,
control characters in names, nesting thousands deep, missing keys, events that are not
objects, a cut-off or corrupted file, runs of bytes written twice (an id grown huge), bits
flipped, values and events swapped, a damaged gzip stream. ``mutant(source, seed)`` is a
pure function of its arguments, so any failure can be replayed from its seed.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BIT_FLIPS", "GZIP_KINDS", "KINDS", "Mutant", "Source", "judge", "mutant"]

KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp", "args"]
ARG_KEYS = [
    "correlation", "External id", "Sequence number", "device", "Device Id", "stream", "grid",
    "block", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
    "est. achieved occupancy %", "Bytes", "bytes", "Total Allocated", "Addr", "Device Type",
    "Input Dims", "Input type", "name", "labels", "sort_index",
]  # fmt: skip
ODD_VALUES: list[Any] = [
    None, True, False, "", "x", "12", "0x1f", "NaN", -1, 0, 2**63, -(2**63) - 1, 10**30,
    1.5, -2.5, 1e308, -1e308, [], [1, "a"], [[1, 2], [3]], {}, {"a": [1]}, "\x00", "é",
]  # fmt: skip
CONTROL = ["\x00", "\x07", "\x1b[31m", "\n", "\r", "\t", "\u202e", "\ufeff", "\udcff", "\x7f"]
# Text that JSON writers never produce but files may hold: numbers past float range and
# the non-standard literals.
BAD_NUMBERS = ["1e999", "-1e999", "1e-999", "NaN", "Infinity", "-Infinity", "01", "1.",
               "123456789012345678901234567890123456789"]


@dataclass(frozen=True)
class Source:
    """A real trace to mutate: its JSON text and its decoded document."""

    name: str
    text: str
    doc: Any

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> Source:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8")
        return cls(name=name, text=text, doc=json.loads(text))

    @property
    def events(self) -> list[Any]:
        doc = self.doc
        return doc["traceEvents"] if isinstance(doc, dict) else doc


@dataclass(frozen=True)
class Mutant:
    """One mutated file: its bytes, and what was done (for the report)."""

    name: str
    kind: str
    data: bytes
    gzipped: bool


def _events_doc(src: Source, events: list[Any]) -> Any:
    if isinstance(src.doc, dict):
        return {**src.doc, "traceEvents": events}
    return events


def _pick(rng: random.Random, events: list[Any]) -> list[int]:
    return sorted(rng.sample(range(len(events)), k=min(len(events), rng.choice([1, 2, 5, 20]))))


# ---- structural mutations: on the decoded events, written back as JSON -------------------
def _type_swap(src: Source, rng: random.Random) -> str:
    events = list(src.events)
    for i in _pick(rng, events):
        e = copy.deepcopy(events[i])
        if not isinstance(e, dict):
            continue
        if isinstance(e.get("args"), dict) and rng.random() < 0.5:
            e["args"][rng.choice(ARG_KEYS)] = rng.choice(ODD_VALUES)
        else:
            e[rng.choice(KEYS)] = rng.choice(ODD_VALUES)
        events[i] = e
    return json.dumps(_events_doc(src, events))


def _drop_keys(src: Source, rng: random.Random) -> str:
    events = list(src.events)
    for i in _pick(rng, events):
        e = events[i]
        if isinstance(e, dict) and e:
            events[i] = {k: v for k, v in e.items() if k != rng.choice([*e, "ts", "dur"])}
    return json.dumps(_events_doc(src, events))


def _not_objects(src: Source, rng: random.Random) -> str:
    events = list(src.events)
    for i in _pick(rng, events):
        events[i] = rng.choice([5, "event", None, [1, 2], [], True, {"ph": {}}])
    return json.dumps(_events_doc(src, events))


def _control_chars(src: Source, rng: random.Random) -> str:
    events = list(src.events)
    for i in _pick(rng, events):
        e = copy.deepcopy(events[i])
        if isinstance(e, dict):
            key = rng.choice(["name", "cat", "ph", "pid", "tid"])
            text = str(e.get(key, ""))
            cut = rng.randrange(len(text) + 1)
            e[key] = text[:cut] + rng.choice(CONTROL) + text[cut:]
            events[i] = e
    return json.dumps(_events_doc(src, events), ensure_ascii=rng.random() < 0.5)


def _times(src: Source, rng: random.Random) -> str:
    """Reordered, duplicated, negative, zero and overlapping times."""
    events = list(src.events)
    how = rng.choice(["shuffle", "duplicate", "negate", "zero", "same_ts", "reverse"])
    if how == "shuffle":
        rng.shuffle(events)
    elif how == "reverse":
        events.reverse()
    elif how == "duplicate":
        events = events + [copy.deepcopy(events[i]) for i in _pick(rng, events)]
    else:
        for i in _pick(rng, events):
            e = copy.deepcopy(events[i])
            if isinstance(e, dict):
                if how == "negate":
                    e["dur"] = -abs(e.get("dur", 1) if isinstance(e.get("dur"), int) else 1)
                elif how == "zero":
                    e["dur"] = 0
                else:
                    e["ts"] = events[0].get("ts", 0) if isinstance(events[0], dict) else 0
                events[i] = e
    return json.dumps(_events_doc(src, events))


def _header(src: Source, rng: random.Random) -> str:
    doc = src.doc if isinstance(src.doc, dict) else {"traceEvents": src.doc}
    doc = dict(doc)
    key = rng.choice(["deviceProperties", "distributedInfo", "schemaVersion", "traceName",
                      "baseTimeNanoseconds", "displayTimeUnit", "attnprof", "traceEvents"])
    doc[key] = rng.choice([*ODD_VALUES, {"workload": {"batch": "two"}, "variant": 3},
                           {"rank": "zero", "world_size": -1}, [{"name": 5}, 3]])
    return json.dumps(doc)


# ---- text mutations: on the JSON text ---------------------------------------------------
def _number_text(src: Source, rng: random.Random) -> str:
    """A number written as something no JSON writer writes: past float range, NaN, ..."""
    text = src.text
    for _ in range(rng.choice([1, 3])):
        at = text.find('"dur": ', rng.randrange(len(text)))
        at = at if at >= 0 else text.find('"ts": ')
        if at < 0:
            break
        start = at + text[at:].index(":") + 1
        end = start
        while end < len(text) and text[end] not in ",}":
            end += 1
        text = text[:start] + " " + rng.choice(BAD_NUMBERS) + text[end:]
    return text


def _deep_nesting(src: Source, rng: random.Random) -> str:
    depth = rng.choice([100, 900, 1000, 5000, 50_000])
    opening, closing = rng.choice([("[", "]"), ('{"a":', "}")])
    nest = opening * depth + "1" + closing * depth
    text = src.text
    where = rng.choice(["args", "event", "header"])
    if where == "header" and text.lstrip().startswith("{"):
        return text.replace("{", f'{{"deviceProperties": {nest}, ', 1)
    at = text.find('"args": {' if where == "args" else '{"ph"', rng.randrange(len(text)))
    if at < 0:
        at = text.find("{", 1)
    if where == "args":
        insert = at + len('"args": {')
        return text[:insert] + f'"deep": {nest}, ' + text[insert:]
    return text[:at] + nest + ", " + text[at:]


def _truncate(src: Source, rng: random.Random) -> str:
    return src.text[: rng.randrange(len(src.text))]


def _byte_noise(src: Source, rng: random.Random) -> str:
    chars = list(src.text)
    for _ in range(rng.choice([1, 3, 10])):
        at = rng.randrange(len(chars))
        op = rng.random()
        if op < 0.4:
            chars[at] = rng.choice('{}[]",:0123456789 \\aeX\x00')
        elif op < 0.7:
            del chars[at]
        else:
            chars.insert(at, rng.choice('{}[]",: \\\x00'))
    return "".join(chars)


# Keys whose values are ids: a run of digits duplicated there makes an id huge (a pid of
# 28692242869224 beside tids of 2869224 crashed the grouping of sync events by thread).
_ID_KEYS = ('"pid": ', '"tid": ', '"id": ', '"External id": ', '"correlation": ',
            '"Sequence number": ', '"ts": ', '"Addr": ', '"Bytes": ')


def _byte_duplication(src: Source, rng: random.Random) -> str:
    """A run of the text written twice, as a faulty copy does; often inside a number."""
    text = src.text
    for _ in range(rng.choice([1, 2, 5])):
        if rng.random() < 0.6:  # right after an id's key: the number grows
            key = rng.choice(_ID_KEYS)
            at = text.find(key, rng.randrange(len(text)))
            at = text.find(key) if at < 0 else at
            at = rng.randrange(len(text)) if at < 0 else at + len(key)
        else:
            at = rng.randrange(len(text))
        run = text[at : at + rng.choice([1, 2, 4, 7, 16, 64])]
        text = text[:at] + run * rng.choice([2, 3]) + text[at:]
    return text


def _swaps(src: Source, rng: random.Random) -> str:
    """Structure moved around: two values of one event swapped between keys, an event's
    args given to another, or two events exchanged."""
    events = list(src.events)
    picked = _pick(rng, events)
    for i in picked:
        e = copy.deepcopy(events[i])
        if not isinstance(e, dict) or len(e) < 2:
            continue
        how = rng.choice(["keys", "args", "events"])
        if how == "keys":
            a, b = rng.sample(sorted(e), 2)
            e[a], e[b] = e[b], e[a]
        elif how == "args":
            other = events[rng.randrange(len(events))]
            if isinstance(other, dict):
                e["args"] = copy.deepcopy(other.get("args"))
        else:
            j = rng.randrange(len(events))
            events[i], events[j] = events[j], events[i]
            continue
        events[i] = e
    return json.dumps(_events_doc(src, events))


def _wrapping(src: Source, rng: random.Random) -> str:
    return rng.choice([
        "\ufeff" + src.text, "  \n" + src.text + "\n\n", src.text + " trailing",
        src.text + "\x00", src.text.replace(" ", "\t"), src.text.replace(", ", ",\n"),
    ])


TextMutation = Callable[[Source, random.Random], str]
KINDS: dict[str, TextMutation] = {
    "type-swap": _type_swap,
    "drop-keys": _drop_keys,
    "not-objects": _not_objects,
    "control-chars": _control_chars,
    "times": _times,
    "header": _header,
    "bad-numbers": _number_text,
    "deep-nesting": _deep_nesting,
    "truncate": _truncate,
    "byte-noise": _byte_noise,
    "byte-duplication": _byte_duplication,
    "swaps": _swaps,
    "wrapping": _wrapping,
}
#: Mutations of the compressed bytes themselves (applied after gzip).
GZIP_KINDS = ("gzip-truncate", "gzip-flip", "gzip-crc", "gzip-trailing")
#: A few bits flipped in the plain text: a digit made another, a quote or a bracket
#: something else, a byte made invalid UTF-8.
BIT_FLIPS = "bit-flips"


def mutant(src: Source, seed: int) -> Mutant:
    """The mutant of ``src`` for ``seed``: one mutation kind, written plain or gzipped."""
    rng = random.Random(f"{src.name}:{seed}")
    kind = rng.choice([*KINDS, *GZIP_KINDS, BIT_FLIPS])
    if kind == BIT_FLIPS:  # on the bytes: a flipped bit may leave invalid UTF-8
        data = bytearray(src.text.encode("utf-8", "surrogatepass"))
        for _ in range(rng.choice([1, 2, 8])):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return Mutant(f"{src.name}-{seed}-{kind}", kind, bytes(data), gzipped=False)
    if kind in GZIP_KINDS:
        data = _damage_gzip(gzip.compress(src.text.encode("utf-8", "surrogatepass"),
                                          compresslevel=1), kind, rng)
        return Mutant(f"{src.name}-{seed}-{kind}", kind, data, gzipped=True)
    text = KINDS[kind](src, rng)
    data = text.encode("utf-8", "surrogatepass")
    packed = rng.random() < 0.3
    if packed:
        data = gzip.compress(data, compresslevel=1)
    return Mutant(f"{src.name}-{seed}-{kind}", kind, data, gzipped=packed)


def _damage_gzip(data: bytes, kind: str, rng: random.Random) -> bytes:
    if kind == "gzip-truncate":
        return data[: rng.randrange(1, len(data))]
    if kind == "gzip-crc":  # the last 8 bytes: CRC-32 and size
        return data[:-8] + bytes(rng.randrange(256) for _ in range(8))
    if kind == "gzip-trailing":
        return data + rng.choice([b"\x00" * 16, b"garbage", gzip.compress(b"{}")])
    flipped = bytearray(data)
    for _ in range(rng.choice([1, 4, 16])):
        flipped[rng.randrange(10, len(flipped))] ^= 1 << rng.randrange(8)
    return bytes(flipped)


def judge(code: int | None, stderr: str, wrote: bytes | None) -> str | None:
    """What went wrong in one ``attnprof analyze MUTANT --json OUT`` run, or None.

    ``code`` is the exit status (None: it did not finish), ``wrote`` the output file's bytes
    (None: no file). Good runs exit 0 with a readable report, 3 with a report that marks
    the trace contended (its steps' ops stalled: docs/exit-codes.md), or 2 with one error
    line and no file; anything else, or a traceback anywhere, is a crash.
    """
    if code is None:
        return "hang"
    if "Traceback" in stderr:
        return "traceback"
    if code == 0:
        return None if wrote is not None and wrote.startswith(b"{") else "exit 0 without a report"
    if code == 3:
        marked = wrote is not None and wrote.startswith(b"{") and b'"marked": true' in wrote
        return None if marked else "exit 3 without a contended report"
    if code == 2:
        lines = stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("attnprof: error: "):
            return "exit 2 without one error line"
        return "exit 2 but wrote a file" if wrote is not None else None
    return f"exit {code}"
