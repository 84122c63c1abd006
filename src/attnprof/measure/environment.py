"""The environment a measurement was taken in, recorded beside every result."""

from __future__ import annotations

import platform
import sys

from attnprof._version import __version__
from attnprof.measure import device as device_mod
from attnprof.measure.threads import usable_cpus
from attnprof.record.environment import Environment


def collect_environment(device: str) -> Environment:
    """Versions (attnprof, Python, torch, CUDA, cuDNN), device and CPU, thread count."""
    import torch

    cudnn = None
    if torch.backends.cudnn.is_available():
        cudnn = str(torch.backends.cudnn.version())
    try:
        import numpy

        numpy_version: str | None = numpy.__version__
    except ImportError:  # numpy is a dependency, but the record should not depend on it
        numpy_version = None
    info = device_mod.describe(device)
    return Environment(
        attnprof=__version__,
        python=sys.version.split()[0],
        platform=platform.platform(),
        torch=str(torch.__version__),
        cuda=torch.version.cuda,
        cudnn=cudnn,
        device=device,
        device_name=str(info.get("name", device)),
        device_info=info,
        cpu_model=device_mod.cpu_model(),
        threads=torch.get_num_threads(),
        numpy=numpy_version,
        host=platform.node() or None,
        cpus=usable_cpus(),
    )
