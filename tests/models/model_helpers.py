"""Constants and user factories shared by the model tests (imported by them by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnprof.record.model import ModelSettings
from attnprof.workload.settings import TimingPlan

#: As few samples as the runner allows: the tests check what is measured, not how well.
FAST = ModelSettings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=2,
                                     max_samples=2, min_warmup_calls=1, rounds=1),
                     trace_steps=1)
#: A built-in at a size that runs in milliseconds.
TINY = {"layers": 2, "hidden": 32, "heads": 4, "vocab": 64, "seq": 16}

#: Tiny configs of architectures that are not built-ins (config classes, keyword sizes).
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "t5": ("T5Config", {"d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2,
                        "num_decoder_layers": 2, "num_heads": 4, "vocab_size": 64,
                        "decoder_start_token_id": 0}),
    "mistral": ("MistralConfig", {"hidden_size": 32, "intermediate_size": 64,
                                  "num_hidden_layers": 2, "num_attention_heads": 4,
                                  "num_key_value_heads": 2, "vocab_size": 64}),
    "distilbert": ("DistilBertConfig", {"dim": 32, "hidden_dim": 64, "n_layers": 2,
                                        "n_heads": 4, "vocab_size": 64}),
}


def config_dir(root: Path, name: str, **changes: Any) -> Path:
    """A folder holding only the config.json of ``CONFIGS[name]`` (with ``changes``)."""
    import transformers

    cls, sizes = CONFIGS[name]
    folder = root / name
    getattr(transformers, cls)(**{**sizes, **changes}).save_pretrained(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]
    return folder


HAND_WRITTEN = '''
import math
import torch
from torch import nn


class ScratchAttention(nn.Module):
    """Attention written out by hand: no SDPA call, so only --attention-module finds it."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        out = scores.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, s, d))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = ScratchAttention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


def make():
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(32, 4) for _ in range(2)])
    return model, (torch.randn(2, 16, 32),)


def make_kwargs():
    torch.manual_seed(0)
    return nn.MultiheadAttention(32, 4, batch_first=True), {
        "query": torch.randn(2, 8, 32), "key": torch.randn(2, 8, 32),
        "value": torch.randn(2, 8, 32), "need_weights": False}


class PixelAttention(nn.Module):
    """Attention over an image's pixels: takes [batch, channels, height, width]."""

    def __init__(self, channels):
        super().__init__()
        self.qkv = nn.Linear(channels, 3 * channels)
        self.proj = nn.Linear(channels, channels)

    def forward(self, image):
        b, c, h, w = image.shape
        x = image.flatten(2).transpose(1, 2)
        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v).squeeze(1)
        return self.proj(out).transpose(1, 2).reshape(b, c, h, w)


def make_image():
    torch.manual_seed(0)
    return nn.Sequential(PixelAttention(2), PixelAttention(2)), torch.randn(1, 2, 8, 8)


def raises():
    raise RuntimeError("weights file is corrupt")


def exits():
    raise SystemExit(3)


def wrong():
    return torch.nn.Linear(2, 2)


def not_a_module():
    return "model", (torch.zeros(1),)


def no_attention():
    return torch.nn.Linear(4, 4), torch.zeros(2, 4)
'''
