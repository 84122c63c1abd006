"""A small training loop profiled the usual way (torch.profiler.schedule, chrome trace
export, batches from a DataLoader), run by the tests as a script so that each capture is its
own process:

    python training_loop.py OUT.json [--model gpt2|block] [--seq N [N ...]] [--inference]
                            [--busy] [--own-group]

With several ``--seq`` lengths, one capture per length is written, each to OUT with
``{seq}`` in it replaced by the length (one process: torch and transformers load once).

``--busy`` starts a spinning process pinned to the loop's CPU for the active steps (the
loop is pinned to that one CPU and runs one torch thread): contention as large and as
certain as it gets. ``--own-group`` puts the loop in a scheduling group of its own with
the highest weight where the system allows it (Linux autogroups; root), so that other
jobs on a shared machine do not contend with a capture meant to be quiet. The script
prints, as JSON, the run-queue wait of the loop's thread over the active steps as a
fraction of their wall time (Linux's own count, the truth the trace is judged against),
and each active step's wall time by the loop's own clock.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import time


def _spin(cpu: int, stop: mp.synchronize.Event) -> None:
    os.sched_setaffinity(0, {cpu})
    while not stop.is_set():
        pass


def _own_group() -> bool:
    """A new session (hence autogroup) of the highest weight; False where not allowed."""
    with contextlib.suppress(OSError):
        os.setsid()
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-20")
    except OSError:
        return False
    return True


def _wait_ns() -> int | None:
    try:
        with open(f"/proc/self/task/{os.getpid()}/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _model(kind: str, seq: int, inference: bool):
    import torch

    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=max(seq, 32),
                            vocab_size=256, attn_implementation="sdpa", attn_pdrop=0.0,
                            resid_pdrop=0.0, embd_pdrop=0.0, bos_token_id=0, eos_token_id=0)
        model = GPT2LMHeadModel(config)
        return model, lambda x: model(x).logits
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        """Embedding, SDPA self-attention, an MLP, a head: a step of tens of ms."""

        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(256, 128)
            self.qkv = torch.nn.Linear(128, 384)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.GELU(),
                                           torch.nn.Linear(512, 128))
            self.head = torch.nn.Linear(128, 256)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.emb(x)
            for _ in range(4):
                q, k, v = self.qkv(h).view(*h.shape[:2], 3, 4, 32).permute(2, 0, 3, 1, 4)
                a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                h = h + a.transpose(1, 2).reshape(h.shape)
                h = h + self.mlp(h)
            return self.head(h)

    model = Block()
    return model, model


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--model", default="block", choices=("block", "gpt2"))
    p.add_argument("--seq", type=int, nargs="+", default=[32])
    p.add_argument("--inference", action="store_true")
    p.add_argument("--busy", action="store_true")
    p.add_argument("--own-group", action="store_true")
    args = p.parse_args()
    own = _own_group() if args.own_group else False
    cpu = sorted(os.sched_getaffinity(0))[0]
    os.sched_setaffinity(0, {cpu})
    import torch

    torch.set_num_threads(1)
    said = {}
    for seq in args.seq:
        said = _capture(args, args.out.replace("{seq}", str(seq)), seq, cpu)
    print(json.dumps({**said, "own_group": own, "cpu": cpu}))


def _capture(args: argparse.Namespace, out: str, seq: int, cpu: int) -> dict:
    """Train (or run) the model for a few steps, profiling the last ones into ``out``."""
    import torch

    torch.manual_seed(0)
    model, call = _model(args.model, seq, args.inference)
    model.train(not args.inference)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = 4 if args.model == "gpt2" else 8
    x = torch.randint(0, 256, (batch, seq))
    # Batches come from a DataLoader, as in a real loop: torch labels each fetch
    # ``enumerate(DataLoader)#...``, the step's data phase.
    data = torch.utils.data.TensorDataset(torch.randint(0, 256, (batch * 8, seq)))
    batches = iter(torch.utils.data.DataLoader(data, batch_size=batch))
    wait, warmup, active = 1, 1, 3
    for _ in range(5):  # the heap and the pages it holds settle before anything is timed
        if args.inference:
            with torch.no_grad():
                call(x)
        else:
            loss = torch.nn.functional.cross_entropy(call(x).reshape(-1, 256), x.reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad()
    stop = mp.get_context("fork").Event()
    spinner = None
    waited = wall = 0.0
    steps: list[float] = []
    schedule = torch.profiler.schedule(wait=wait, warmup=warmup, active=active)
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    schedule=schedule, record_shapes=True,
                                    on_trace_ready=lambda prof: prof.export_chrome_trace(out)
                                    ) as prof:
            for step in range(wait + warmup + active):
                measured = step >= wait + warmup
                (x,) = next(batches)
                if measured and args.busy and spinner is None:
                    # A daemon: whatever happens to the loop, the spinner ends with it.
                    spinner = mp.get_context("fork").Process(target=_spin, args=(cpu, stop),
                                                             daemon=True)
                    spinner.start()
                    time.sleep(0.05)  # let it take its share before the step starts
                before, t0 = _wait_ns(), time.perf_counter()
                if args.inference:
                    with torch.no_grad():
                        call(x)
                else:
                    logits = call(x).reshape(-1, 256)
                    loss = torch.nn.functional.cross_entropy(logits, x.reshape(-1))
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                after = _wait_ns()
                if measured and before is not None and after is not None:
                    waited += (after - before) / 1e9
                    wall += time.perf_counter() - t0
                if measured:
                    steps.append(time.perf_counter() - t0)
                prof.step()
    finally:
        if spinner is not None:
            stop.set()
            spinner.join()
    return {"wait_fraction": waited / wall if wall else None, "step_s": steps}


if __name__ == "__main__":
    main()
