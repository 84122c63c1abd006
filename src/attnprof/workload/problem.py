"""The workload: one frozen description of the attention problem being measured.

A :class:`Workload` is plain data (no torch import): sizes, dtype, device, masking and mode.
It is a frozen ``msgspec.Struct``, so records embed it typed and validate it on load.
:meth:`Workload.validate` turns every impossible combination into a :class:`UsageError`
that names the bad value and the fix. Checks that need the device itself (is it present,
can it run bf16, how much memory does it have) live in :mod:`attnprof.measure.device` and are run by
:func:`check_against_device`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from attnprof.errors import UsageError
from attnprof.workload.lengths import documents, row_lengths
from attnprof.workload.masking import CAUSAL_COMPOSES, check_mask, check_mask_fields

Mode = Literal["forward", "forward+backward", "decode"]
MODES: tuple[str, ...] = ("forward", "forward+backward", "decode")

#: Element size in bytes of every dtype attnprof accepts, by its short name.
DTYPE_BYTES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
_DTYPE_ALIASES: dict[str, str] = {
    "fp32": "float32", "f32": "float32", "float": "float32",
    "fp16": "float16", "f16": "float16", "half": "float16",
    "bf16": "bfloat16",
    "fp64": "float64", "f64": "float64", "double": "float64",
}


def canonical_dtype(name: str) -> str:
    """Return the canonical dtype name for ``name`` (``bf16`` -> ``bfloat16``)."""
    key = name.strip().lower()
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        choices = ", ".join(sorted(DTYPE_BYTES))
        raise UsageError(f"unknown dtype {name!r}; use one of {choices} (or bf16/fp16/fp32)")
    return key


class Workload(msgspec.Struct, frozen=True, kw_only=True):
    """One attention problem: q is [batch, heads, seq, head_dim], k/v
    [batch, kv_heads, kv_seq, head_dim].

    ``kv_heads`` < ``heads`` is grouped-query attention (MQA when 1). ``kv_seq`` of ``None``
    means "same as ``seq``". In ``decode`` mode each measured step is one new query token
    attending over a KV cache of ``kv_seq`` (default ``seq``) tokens, so the query length is 1.
    ``window`` is the sliding-window size used by windowed variants (keys within ``window``
    positions of the query, looking back when causal).

    ``mask`` names the attention mask (:mod:`attnprof.workload.masking`: ``padding``,
    ``document``, ``bool``, ``bias``, ``alibi``, ``prefix``, ``window``, ...); ``lengths``
    gives a ragged batch's lengths (:mod:`attnprof.workload.lengths`: ``"32..256"`` drawn from
    ``lengths_dist``, or the lengths themselves), and every random part of the mask is
    seeded by ``mask_seed``.
    """

    batch: int = 2
    heads: int = 8
    kv_heads: int | None = None
    seq: int = 512
    kv_seq: int | None = None
    head_dim: int = 64
    dtype: str = "float32"
    #: Attention dropout probability (``--dropout``): outputs are random, so accuracy is
    #: checked at 0 (see :mod:`attnprof.run.precision`).
    dropout: float = 0.0
    #: ``torch.autocast`` dtype the calls run under (``--autocast bf16|fp16``), inputs
    #: staying ``dtype``; ``None``: no autocast.
    autocast: str | None = None
    device: str = "cpu"
    causal: bool = True
    mode: Mode = "forward"
    window: int = 128
    #: The attention mask (:data:`attnprof.workload.masking.MASKS`); ``None``: ``causal`` or
    #: ``none`` as the ``causal`` flag says (records before masks existed).
    mask: str | None = None
    #: Ragged lengths (:mod:`attnprof.workload.lengths`): a ``LO..HI`` range drawn from
    #: ``lengths_dist``, or the lengths themselves; ``None``: a seeded default draw.
    lengths: str | tuple[int, ...] | None = None
    lengths_dist: str = "uniform"
    #: Share of (query, key) pairs a ``bool`` mask admits (exactly, in every query row).
    mask_density: float = 0.5
    #: Tokens of the bidirectional prefix of a ``prefix`` (prefix-LM) mask (``None``: seq/4).
    prefix: int | None = None
    #: Seed of every random part of the mask (lengths, documents, ``bool``, ``bias``).
    mask_seed: int = 0

    # ----- derived sizes ---------------------------------------------------------------
    @property
    def num_kv_heads(self) -> int:
        """K/V heads (equal to ``heads`` unless grouped)."""
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def groups(self) -> int:
        """Query heads per K/V head (1 for plain multi-head attention)."""
        return self.heads // self.num_kv_heads

    @property
    def q_len(self) -> int:
        """Query length of one measured call (1 in decode mode)."""
        return 1 if self.mode == "decode" else self.seq

    @property
    def k_len(self) -> int:
        """Key/value length of one measured call (the KV-cache length in decode mode)."""
        return self.seq if self.kv_seq is None else self.kv_seq

    @property
    def mask_kind(self) -> str:
        """The mask by name: ``mask``, or ``causal``/``none`` from the ``causal`` flag."""
        if self.mask is not None:
            return self.mask
        return "causal" if self.causal else "none"

    @property
    def is_causal(self) -> bool:
        """Whether the measured call's mask includes the causal constraint (``causal``,
        and ``window``, ``padding``, ``document``, ``bias``, ``alibi`` unless
        ``causal`` is off).

        A single decode query sits at the end of the cache and may see every cached key,
        so causality does not constrain it.
        """
        return (self.causal and self.mode != "decode"
                and self.mask_kind in ("causal", *CAUSAL_COMPOSES))

    @property
    def plain_mask(self) -> bool:
        """True when the mask is ``none`` or plain ``causal``: what SDPA's ``is_causal``
        alone says; any other mask is a tensor (or a flex ``mask_mod``)."""
        return self.mask_kind in ("none", "causal")

    @property
    def mask_label(self) -> str:
        """The mask as a table says it: ``causal``, ``full``, or ``padding+causal``."""
        if self.plain_mask:
            return "causal" if self.is_causal else "full"
        return self.mask_kind + ("+causal" if self.is_causal else "")

    def row_lengths(self) -> tuple[int, ...]:
        """One real length per batch row of a ``padding`` mask (seeded when not given)."""
        return row_lengths(self.lengths, self.batch, self.k_len, self.lengths_dist,
                           self.mask_seed)

    def documents(self) -> tuple[tuple[int, ...], ...]:
        """Per batch row, the document lengths of a ``document`` mask (sum: the row)."""
        return documents(self.lengths, self.batch, self.k_len, self.lengths_dist,
                         self.mask_seed)

    @property
    def prefix_len(self) -> int:
        """The bidirectional prefix of a ``prefix`` mask (``seq/4`` when not given)."""
        return self.prefix if self.prefix is not None else max(1, self.k_len // 4)

    @property
    def element_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def device_type(self) -> str:
        return self.device.split(":", 1)[0]

    @property
    def compute_dtype(self) -> str:
        """The dtype attention computes in: the autocast dtype when set, else ``dtype``
        (it decides the accuracy tolerance)."""
        return canonical_dtype(self.autocast) if self.autocast else self.dtype

    # ----- construction ----------------------------------------------------------------
    def replace(self, **changes: Any) -> Workload:
        """A copy with ``changes`` applied (not validated; call :meth:`validate`)."""
        return msgspec.structs.replace(self, **changes)

    def resolved(self) -> Workload:
        """The same problem with ``kv_heads`` and ``kv_seq`` spelled out, as records keep it.

        Only for recording: the ``None`` defaults mean "follow ``heads``/``seq``", which a
        later :meth:`replace` of those fields relies on.
        """
        return self.replace(kv_heads=self.num_kv_heads, kv_seq=self.k_len)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields, resolved, with the query length spelled out for readers."""
        data: dict[str, Any] = msgspec.to_builtins(self.resolved())
        data["q_len"] = self.q_len
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Workload:
        """Rebuild from :meth:`to_dict` output (extra derived keys are ignored); raises
        ``msgspec.ValidationError`` for a field of the wrong type."""
        names = set(cls.__struct_fields__)
        return msgspec.convert({k: v for k, v in data.items() if k in names}, cls)

    def describe(self) -> str:
        """One line a human reads: ``B=2 H=8 (KV 2) S=512 D=64 float32 cpu causal forward``."""
        kv = f" (KV {self.num_kv_heads})" if self.num_kv_heads != self.heads else ""
        seq = f"S={self.seq}" if self.k_len == self.seq else f"Sq={self.seq} Sk={self.k_len}"
        if self.mode == "decode":
            seq = f"cache={self.k_len}"
        mask = self.mask_label
        return (f"B={self.batch} H={self.heads}{kv} {seq} D={self.head_dim} "
                f"{self.dtype} {self.device} {mask} {self.mode}")

    # ----- validation ------------------------------------------------------------------
    def validate(self) -> Workload:
        """Check the sizes against each other; return a normalised copy.

        Raises :class:`UsageError` naming the first impossible value and the fix.
        """
        for name in ("batch", "heads", "seq", "head_dim", "window"):
            _positive(name, getattr(self, name))
        if self.kv_heads is not None:
            _positive("kv_heads", self.kv_heads)
        if self.kv_seq is not None:
            _positive("kv_seq", self.kv_seq)
        _check_divides(self.heads, self.num_kv_heads)
        _check_mode(self.mode)
        dtype = canonical_dtype(self.dtype)
        _check_precision(self.dropout, self.autocast, dtype)
        _check_head_dim(self.head_dim)
        if self.causal and self.mode != "decode" and self.k_len != self.seq:
            raise UsageError(
                f"causal attention with --seq {self.seq} != --kv-seq {self.k_len} is ambiguous "
                "(PyTorch aligns the mask top-left, FlashAttention bottom-right); "
                "use equal lengths, --no-causal, or --mode decode for a KV cache")
        check_mask(self)
        return self.replace(dtype=dtype, device=self.device.strip().lower())


def check_given(**fields: Any) -> None:
    """The checks of :meth:`Workload.validate` that the given ``fields`` decide alone,
    whatever a device's defaults fill in around them: the CLI runs them before importing
    torch, so a mistake in a flag is said at once (``--seq 0`` took 2 s, torch's import,
    to be refused). :meth:`Workload.validate` still checks the whole workload."""
    given = {name: value for name, value in fields.items() if value is not None}
    for name in ("batch", "heads", "seq", "head_dim", "window", "kv_heads", "kv_seq"):
        if name in given:
            _positive(name, given[name])
    if "heads" in given and "kv_heads" in given:
        _check_divides(given["heads"], given["kv_heads"])
    if "dropout" in given or "autocast" in given:
        _check_precision(given.get("dropout", 0.0), given.get("autocast"),
                         canonical_dtype(given.get("dtype", "float32")))
    if "mode" in given:
        _check_mode(given["mode"])
    if "dtype" in given:
        canonical_dtype(given["dtype"])
    if "head_dim" in given:
        _check_head_dim(given["head_dim"])
    check_mask_fields(given)


#: Head counts up to which a refusal lists every divisor (a count of 10**12 took forever).
_LISTED_HEADS = 1 << 16


def _check_divides(heads: int, kv_heads: int) -> None:
    if heads % kv_heads:
        choices = ("one of " + ", ".join(str(d) for d in range(1, heads + 1) if heads % d == 0)
                   if heads <= _LISTED_HEADS else f"a divisor of {heads}")
        raise UsageError(f"--kv-heads {kv_heads} does not divide --heads {heads}; use "
                         f"{choices} (1 = MQA, {heads} = MHA)")


#: What ``--autocast`` takes: the 16-bit dtypes torch.autocast computes attention in.
AUTOCAST_DTYPES = ("bfloat16", "float16")


def _check_precision(dropout: object, autocast: str | None, dtype: str) -> None:
    """``dropout`` in [0, 1); ``autocast`` a 16-bit dtype over float32 inputs."""
    if (not isinstance(dropout, int | float) or isinstance(dropout, bool)
            or not 0.0 <= dropout < 1.0):
        raise UsageError(f"--dropout must be a probability in [0, 1), got {dropout!r}; "
                         "e.g. --dropout 0.1")
    if autocast is None:
        return
    try:
        name = canonical_dtype(autocast)
    except UsageError:
        name = ""
    if name not in AUTOCAST_DTYPES:
        raise UsageError(f"--autocast {autocast!r} is not a 16-bit dtype; use bf16 or fp16")
    if dtype != "float32":
        raise UsageError(f"--autocast {autocast} runs float32 inputs in 16 bits, but "
                         f"--dtype is {dtype}; drop --dtype or use --dtype float32")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")


def _check_head_dim(head_dim: int) -> None:
    if head_dim > 512:
        raise UsageError(f"--head-dim {head_dim} is larger than any attention kernel "
                         "supports; use a head dim of 512 or less (typically 64 or 128)")


def _positive(name: str, value: object) -> None:
    flag = "--" + name.replace("_", "-")
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UsageError(f"{flag} must be a positive integer, got {value!r}")
    if value >= 2**63:  # torch sizes and the record's integers are 64-bit
        raise UsageError(f"{flag} must be below 2**63, got {value}")


#: Query heads per K/V head in the default workloads, as in Llama 3 and Mistral.
DEFAULT_GROUP = 4


def default_kv_heads(heads: int) -> int | None:
    """K/V heads the defaults pair with ``heads``: grouped 4:1 when that divides, else MHA.

    Grouped-query attention is what current LLMs use, and it is what gives the GQA variants
    (``gqa-native`` vs ``gqa-repeat-kv``) something to compare. ``None`` means "= heads".
    """
    if heads % DEFAULT_GROUP == 0 and heads >= DEFAULT_GROUP:
        return heads // DEFAULT_GROUP
    return None


def default_workload(device_type: str, **fields: Any) -> Workload:
    """The default problem for a device, with ``fields`` (the user's flags) applied.

    On a 2-core CPU the whole default comparison (every variant, including the
    ``torch.compile`` of flex_attention) must finish in under a minute, so the CPU shape is
    small and fp32 (CPUs without AMX run 16-bit matmuls slower than fp32). On a GPU the shape
    is a realistic LLM layer in bf16. Both are grouped-query (see :func:`default_kv_heads`);
    a user who sets ``heads`` but not ``kv_heads`` gets that pairing for their head count.
    """
    if device_type == "cpu":
        base = Workload()
    else:
        base = Workload(batch=8, heads=16, seq=2048, head_dim=128, dtype="bfloat16",
                        device=device_type, window=512)
    workload = base.replace(**fields)
    if "kv_heads" not in fields and isinstance(workload.heads, int) and workload.heads > 0:
        workload = workload.replace(kv_heads=default_kv_heads(workload.heads))
    return workload
