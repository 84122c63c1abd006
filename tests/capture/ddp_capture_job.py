"""Two DDP ranks over gloo on the CPU, each inside ``attnprof.capture``: one run folder.

    python tests/capture/ddp_capture_job.py OUT

Each rank trains a tiny SDPA model for five steps under ``attnprof.capture(out=OUT)`` and
writes what its capture made to ``OUT/rank-N.json`` (its folder, trace, record, stored run
id). The ranks are forked from this process after it imported torch (nothing has started
a thread yet) and rendezvous through a file, so no port is needed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import attnprof


class Attention(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.qkv, self.o_proj = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn, self.mlp = Attention(), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.mlp(x)


def run_rank(rank: int, world: int, out: str, rendezvous: str) -> None:
    torch.set_num_threads(1)  # the ranks share the machine's cores
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=world)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(Block(), Block()))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(2, 8, 16)
    with attnprof.capture(model, out=out, label="ddp") as cap:
        for _ in range(5):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
            cap.step()
    with open(os.path.join(out, f"rank-{rank}.json"), "w") as f:
        json.dump({"folder": str(cap.folder), "trace": str(cap.trace_path),
                   "record": str(cap.record_path), "stored_as": cap.stored_as,
                   "training": model.training}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        mp.start_processes(run_rank, args=(2, sys.argv[1], os.path.join(tmp, "rendezvous")),
                           nprocs=2, start_method="fork")
