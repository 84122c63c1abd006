"""The inline time limit under a caller's own interval timer (pytest-timeout's, here).

Under pytest-timeout (``timeout = 600``) a timer is always running; the limit used to set
none then, so a hung variant hung until pytest-timeout's alarm, which the comparison caught
as the variant's error row, and the next hung variant hung the test run for good.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from types import FrameType

import pytest

from attnprof.measure.deadline import TimeLimitExceeded, time_limit


class OuterAlarm(Exception):
    pass


@pytest.fixture
def outer_timer() -> Iterator[None]:
    """A caller's timer of 30 s with its own handler, in place of whatever ran before."""
    saved_handler = signal.getsignal(signal.SIGALRM)
    saved_timer = signal.getitimer(signal.ITIMER_REAL)

    def ring(signum: int, frame: FrameType | None) -> None:
        raise OuterAlarm

    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved_handler)
        if saved_timer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *saved_timer)


def test_a_limit_under_a_longer_timer_still_stops_a_hang(outer_timer: None) -> None:
    started = time.monotonic()
    with pytest.raises(TimeLimitExceeded, match=r"within 0\.2 s"), time_limit(0.2, "sleeping"):
        time.sleep(10)
    assert time.monotonic() - started < 5
    # The caller's timer and handler are back, with about what they had left.
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert 20 < left <= 30
    assert signal.getsignal(signal.SIGALRM).__name__ == "ring"  # type: ignore[union-attr]


def test_the_callers_timer_goes_on_after_a_block_that_finished(outer_timer: None) -> None:
    with time_limit(5.0, "a quick step"):
        pass
    assert 20 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30


def test_a_callers_timer_that_fires_first_is_the_limit() -> None:
    saved = signal.getsignal(signal.SIGALRM)

    def ring(signum: int, frame: FrameType | None) -> None:
        raise OuterAlarm

    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(OuterAlarm), time_limit(30.0, "sleeping"):
            time.sleep(10)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved)
