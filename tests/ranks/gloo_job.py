"""A tiny attention model trained with DDP over gloo on the CPU, one torch.profiler trace
per rank: the multi-rank sets the rank-set tests read, made at test time.

    python tests/ranks/gloo_job.py OUT [--world-size 3] [--steps 4] [--sleep-ms 100]
                                       [--device cpu|cuda] [--sets clean,straggler,...]

writes three sets, one folder each, every rank exporting ``rank-N.json.gz``:

* ``OUT/clean``: every rank runs the same step (SDPA pinned to the CPU flash kernel; on
  CUDA, where flash takes no float32, to the memory-efficient one);
* ``OUT/straggler``: the same, but rank 1 sleeps ``--sleep-ms`` inside every step, before
  its backward pass, so the others wait for it in the gradient all-reduce;
* ``OUT/divergent``: the last rank runs SDPA pinned to the math backend while the others
  run the fused one.

With ``--device cuda`` every rank runs on the one GPU (gloo moves CUDA tensors through
the host), and the traces have CUDA kernels.

One process group serves the three sets, so torch is imported once per rank. The ranks
are forked from this process after it imported torch (nothing has started a thread yet),
and rendezvous through a file, so no port is needed. Each set is recorded with a profiler
schedule: one warm-up step, then ``--steps`` active ones (``ProfilerStep#1..N``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule

SETS = ("clean", "straggler", "divergent")
#: The planted straggler and the rank that diverges.
STRAGGLER_RANK = 1


class Block(nn.Module):
    """One pre-norm-free transformer block: QKV projection, causal SDPA, output
    projection, an MLP."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.mlp = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.mlp(F.gelu(self.out(a.transpose(1, 2).reshape(b, t, d)))) + x


def run_rank(rank: int, world: int, out: str, store: str, steps: int, sleep_s: float,
             device: str, sets: tuple[str, ...]) -> None:
    """One rank: the sets, one trace each."""
    torch.set_num_threads(1)  # ranks share the machine's cores
    # One cycle per set: that the profiler clears events between cycles does not matter.
    warnings.filterwarnings("ignore", message=".*Profiler clears events")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                            world_size=world)
    torch.manual_seed(0)
    model = DistributedDataParallel(Block().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2, 64, 32, device=device)
    fused = SDPBackend.FLASH_ATTENTION if device == "cpu" else SDPBackend.EFFICIENT_ATTENTION
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device != "cpu" else [])
    for name in sets:
        backend = SDPBackend.MATH if name == "divergent" and rank == world - 1 else fused
        folder = Path(out) / name
        folder.mkdir(parents=True, exist_ok=True)
        target = str(folder / f"rank-{rank}.json.gz")
        with profile(activities=activities,
                     schedule=schedule(wait=0, warmup=1, active=steps),
                     on_trace_ready=lambda p, t=target: p.export_chrome_trace(t)) as prof:
            for _ in range(steps + 1):
                with sdpa_kernel(backend):
                    loss = model(x).pow(2).mean()
                if name == "straggler" and rank == STRAGGLER_RANK:
                    time.sleep(sleep_s)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                prof.step()
        dist.barrier()
    dist.destroy_process_group()


def make_sets(out: Path, world_size: int = 3, steps: int = 4, sleep_ms: float = 100.0,
              device: str = "cpu", sets: tuple[str, ...] = SETS) -> dict[str, Path]:
    """Write the sets under ``out``; their folders by name."""
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        mp.start_processes(run_rank, args=(world_size, str(out), store, steps,
                                           sleep_ms / 1000, device, sets),
                           nprocs=world_size, start_method="fork")
    return {name: out / name for name in sets}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--world-size", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--sleep-ms", type=float, default=100.0)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--sets", default=",".join(SETS),
                        help=f"comma-separated, of {', '.join(SETS)}")
    args = parser.parse_args()
    sets = tuple(s for s in args.sets.split(",") if s)
    if not sets or set(sets) - set(SETS):
        parser.error(f"--sets {args.sets!r}: choose among {', '.join(SETS)}")
    made = make_sets(args.out, args.world_size, args.steps, args.sleep_ms, args.device, sets)
    for name, folder in made.items():
        print(f"{name}: {folder}")


if __name__ == "__main__":
    main()
