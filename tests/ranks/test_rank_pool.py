"""The executors' batch method (``map_calls``): results in order, and one bad call — one
that raises, or whose worker dies — is its own ``failed`` result, never the batch's end.

The calls are stdlib functions bound with ``functools.partial`` and run through
``operator.call``: importable and picklable, so they reach a worker whichever way it was
started (fork, fork server)."""

from __future__ import annotations

import functools
import math
import operator
import os
import signal
from collections.abc import Callable
from typing import Any

import pytest

from attnprof.run.executors import get_executor
from attnprof.run.executors.pool import map_in_processes

call = getattr(operator, "call", None)
if call is None:  # Python 3.10
    pytest.skip("operator.call is Python 3.11+", allow_module_level=True)


def _failed(item: Callable[[], Any], reason: str) -> str:
    return f"failed: {reason}"


def test_results_come_back_in_order_and_each_is_heard_of() -> None:
    items = [functools.partial(math.sqrt, float(n * n)) for n in range(7)]
    heard: dict[int, object] = {}
    out = map_in_processes(call, items, failed=_failed, workers=3,
                           on_result=lambda i, r: heard.setdefault(i, r))
    assert out == [float(n) for n in range(7)]
    assert heard == dict(enumerate(out))


def test_a_call_that_raises_is_its_own_failed_result() -> None:
    items = [functools.partial(math.sqrt, 4.0), functools.partial(math.sqrt, -1.0),
             functools.partial(math.sqrt, 9.0)]
    out = map_in_processes(call, items, failed=_failed, workers=2)
    assert out[0] == 2.0 and out[2] == 3.0
    assert isinstance(out[1], str) and out[1].startswith("failed: attnprof failed on it")
    assert "ValueError: math domain error" in out[1]


@pytest.mark.parametrize("death, says", [
    (functools.partial(os._exit, 3), "exited with status 3 before answering"),
    (functools.partial(signal.raise_signal, signal.SIGKILL), "was killed by SIGKILL (signal 9)"),
])
def test_a_worker_that_dies_costs_only_its_item(death: Callable[[], Any], says: str) -> None:
    # One worker: after the death a new one must take over the rest.
    items = [functools.partial(math.sqrt, 1.0), death, functools.partial(math.sqrt, 16.0),
             functools.partial(math.sqrt, 25.0)]
    out = map_in_processes(call, items, failed=_failed, workers=1)
    assert out[0] == 1.0 and out[2:] == [4.0, 5.0]
    assert out[1] == f"failed: the worker reading it {says}"


@pytest.mark.parametrize("name", ["inline", "process"])
def test_every_local_executor_maps_the_same_way(name: str) -> None:
    items = [functools.partial(math.sqrt, 4.0), functools.partial(math.sqrt, -1.0)]
    out = get_executor(name).map_calls(call, items, failed=_failed, workers=2)
    assert out[0] == 2.0 and "ValueError" in str(out[1])


def test_no_items_no_workers() -> None:
    assert map_in_processes(call, [], failed=_failed) == []
