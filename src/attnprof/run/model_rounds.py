"""Every implementation of a phase timed in the same interleaved rounds, as compare times
its variants (:func:`attnprof.measure.timer.interleaved_rounds`, the one timing loop).

Timed one after another, two implementations are measured minutes apart, and a machine
that slows down meanwhile (another job, a thermal step) decides which looks faster: on
the development VM one ``model --attn eager,sdpa`` run read sdpa 296 ms against eager's
220 ms, its rerun 207 against 203. So before the implementations are measured one by one
(memory, trace, attribution), each is built and warmed up, then all are timed in rounds,
labels off and on for each, switching the model to an implementation before its slice.
A slice's samples and each round's median go into that implementation's run; whether
they tie or rank is :mod:`attnprof.run.model_ranks`'s.

An implementation that is refused, or fails while armed or timed, is left out here; its
own measuring then says why in its row, as it does when timed alone.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from attnprof.measure.timer import interleaved_rounds, round_sizes, take_samples, warm_up
from attnprof.models.implementations import Refused, switch_implementation, with_pin
from attnprof.models.instrument import labelled
from attnprof.models.loaded import LoadedModel
from attnprof.models.locate import Located
from attnprof.models.phases import build_step, unsupported_phase
from attnprof.record.model import ModelSettings
from attnprof.signals import reraise_stop

__all__ = ["RoundSamples", "time_alone", "time_in_rounds"]

Say = Callable[[str, str], None]


@dataclass
class RoundSamples:
    """One implementation's samples of one phase, per interleaved round: labels off (the
    latency reported) and on (their cost)."""

    bare: list[list[float]] = field(default_factory=list)
    labelled: list[list[float]] = field(default_factory=list)


@dataclass
class _Armed:
    impl: str
    call: Callable[[], object]
    samples: int
    timed: RoundSamples = field(default_factory=RoundSamples)
    failed: bool = False


def time_in_rounds(loaded: LoadedModel, located: Located, implementations: Sequence[str],
                   phases: Sequence[str], settings: ModelSettings, cache_len: int,
                   say: Say) -> dict[tuple[str, str], RoundSamples]:
    """The samples of each (implementation, phase) timed in rounds interleaved with the
    phase's other implementations; empty when fewer than two run. Warnings raised here
    are raised again when each implementation is measured on its own."""
    if len(implementations) < 2:
        return {}
    out: dict[tuple[str, str], RoundSamples] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for phase in phases:
            armed = [a for impl in implementations
                     if (a := _arm(loaded, located, impl, phase, settings, cache_len,
                                   say)) is not None]
            if len(armed) < 2:
                continue
            _rounds(loaded, located, armed, phase, settings, say)
            out.update({(a.impl, phase): a.timed for a in armed if not a.failed})
    return out


def _arm(loaded: LoadedModel, located: Located, impl: str, phase: str,
         settings: ModelSettings, cache_len: int, say: Say) -> _Armed | None:
    """``impl``'s step of ``phase`` built and warmed up (labels off, then on); ``None``
    when it cannot run (its own measuring says why)."""
    if unsupported_phase(loaded, phase):
        return None
    say(f"{impl}/{phase}", "warming up for the interleaved rounds")
    try:
        switch_implementation(loaded, impl, located)
        call = with_pin(impl, build_step(loaded, phase, cache_len=cache_len).call)
        bare = warm_up(call, device=loaded.device, plan=settings.plan)
        with labelled(located):
            warm_up(call, device=loaded.device, plan=msgspec.structs.replace(
                settings.plan, min_warmup_calls=1, warmup_s=0.0))
    except Refused:
        return None
    except BaseException as exc:  # isolation: its own run raises it again, as its row
        reraise_stop(exc)
        return None
    return _Armed(impl, call, bare.samples)


def _rounds(loaded: LoadedModel, located: Located, armed: list[_Armed], phase: str,
            settings: ModelSettings, say: Say) -> None:
    """Take every armed implementation's slices, labels off and on, in interleaved rounds."""
    sizes = [round_sizes(a.samples, settings.plan.rounds) for a in armed]
    count = max(len(s) for s in sizes)

    def take(i: int, r: int, n: int) -> bool:
        one, labels = armed[i // 2], i % 2
        if one.failed:
            return False
        say(f"{one.impl}/{phase}", f"timing, round {r + 1} of {count}, interleaved")
        try:
            switch_implementation(loaded, one.impl, located)
            with labelled(located) if labels else contextlib.nullcontext():
                one.call()  # one untimed call: the other slices ran since this one did
                taken, _ = take_samples(one.call, n, device=loaded.device)
        except BaseException as exc:  # its own run says why
            reraise_stop(exc)
            one.failed = True
            return False
        (one.timed.labelled if labels else one.timed.bare).append(taken)
        return False

    interleaved_rounds([s for s in sizes for _ in (0, 1)], take)


def time_alone(call: Callable[[], object], located: Located, device: str, sizes: list[int],
                say: Callable[[str], None]) -> RoundSamples:
    """Interleaved rounds (the one timing loop, measure.timer) of one implementation:
    labels off and on take turns, so drift hits both alike."""
    slices = RoundSamples(bare=[[] for _ in sizes], labelled=[[] for _ in sizes])

    def take(labels: int, r: int, n: int) -> bool:
        say(f"timing, round {r + 1} of {len(sizes)}")
        with labelled(located) if labels else contextlib.nullcontext():
            call()  # one untimed call: the other slice ran since this one did
            (slices.labelled if labels else slices.bare)[r], _ = take_samples(
                call, n, device=device)
        return False

    interleaved_rounds([sizes, sizes], take)
    return slices
