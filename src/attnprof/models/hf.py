"""transformers, imported here and only when a model needs it.

transformers is an optional extra (``pip install 'attnprof[hf]'``): attention variants,
traces and plain ``nn.Module`` factories need none of it, and importing it costs seconds.
:func:`require_transformers` turns its absence into one line saying what to install.

:func:`from_config_dir` builds any architecture transformers can build from a local
``config.json``: weights are loaded when the folder has them, random otherwise, and
nothing is ever downloaded (``local_files_only``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from attnprof.errors import UsageError
from attnprof.formatting import one_line
from attnprof.input_files import CONFIG, check_folder, check_input, read_input
from attnprof.install import install_command
from attnprof.models.sizes import check_config_sizes

if TYPE_CHECKING:
    import torch

__all__ = ["family_of", "from_config_dir", "model_inputs", "require_transformers"]

_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
            "pytorch_model.bin.index.json")
#: How save_pretrained names the shards of sharded weights (``model-00001-of-00002...``).
_SHARDS = ("model-", "pytorch_model-")


def require_transformers(what: str) -> ModuleType:
    """The transformers module; :class:`UsageError` naming ``what`` needs it when absent."""
    # No download, ever: a config folder or a built-in is all attnprof builds from.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        import transformers
    except ImportError:
        raise UsageError(f"{what} needs transformers, which is not installed; run "
                         f"{install_command('hf')} (or profile a plain nn.Module with "
                         "path/to/file.py:factory)") from None
    transformers.logging.set_verbosity_error()
    return transformers


def family_of(config: Any) -> str:
    """``encoder-decoder``, ``decoder`` (a causal LM) or ``encoder``."""
    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder"
    archs = getattr(config, "architectures", None) or []
    if getattr(config, "is_decoder", False) or any(a.endswith("ForCausalLM") or
                                                   a.endswith("LMHeadModel") for a in archs):
        return "decoder"
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not archs:
        # A bare config of a decoder family (llama, mistral, qwen2, gpt2 ...).
        return "decoder" if config.model_type not in _ENCODERS_WITH_LM else "encoder"
    return "encoder"


# Encoders transformers also lists as causal LMs (their decoder mode); a bare config of
# one of them is an encoder.
_ENCODERS_WITH_LM = frozenset({"bert", "roberta", "xlm-roberta", "camembert", "electra",
                               "ernie", "data2vec-text", "bert-generation", "rembert",
                               "roc_bert", "xlm-roberta-xl", "megatron-bert"})


def from_config_dir(path: str, *, seed: int,
                    check: Callable[[Any, Any], None] | None = None
                    ) -> tuple[torch.nn.Module, str]:
    """The model described by ``path/config.json`` and ``loaded``/``random`` (its weights).

    ``check(cls, config)`` runs before anything is allocated (sizes, memory)."""
    transformers = require_transformers(f"--model-path {path}")
    folder = Path(path)
    where = f"--model-path {path!r}"
    text = _config_text(path)
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: its config.json is not JSON ({one_line(str(exc), 200)})"
                         ) from None
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: its config.json holds a {type(raw).__name__}, not an "
                         "object of config keys")
    _check_model_type(raw, where, transformers)
    check_config_sizes(raw, where)  # before transformers divides by a head count of 0
    try:
        config = transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # a value transformers' own validation refuses: the user's file
        raise UsageError(f"{where}: transformers cannot read its config.json "
                         f"({type(exc).__name__}: {_cut(str(exc))})") from None
    check_config_sizes(config, where)
    cls = _model_class(transformers, config)
    if check is not None:
        check(cls, config)
    import torch

    has_weights = _holds_weights(folder, where)
    torch.manual_seed(seed)
    try:
        if has_weights:
            return cls.from_pretrained(str(folder), local_files_only=True), "loaded"
        return cls.from_config(config), "random"
    except Exception as exc:
        raise UsageError(f"{where}: transformers could not build {cls.__name__} "
                         f"({type(exc).__name__}: {_cut(str(exc))})") from None


def _holds_weights(folder: Path, where: str) -> bool:
    """Whether ``folder`` holds weights (a name save_pretrained writes), after checking
    each weights file there, shards included, is a regular file, else :class:`UsageError`
    saying what it is: a FIFO, a folder or a dangling link would otherwise read as "no
    weights", and the model would run on random ones without a word (or block on a read)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise UsageError(f"{where}: its folder cannot be listed ({exc.strerror or exc})"
                         ) from None
    found = [n for n in names if n in _WEIGHTS or (
        n.startswith(_SHARDS) and n.endswith((".safetensors", ".bin")))]
    for name in found:
        check_input(folder / name, f"the weights file {name!r} of {where}",
                    fix="give the file save_pretrained wrote, or remove it to run on "
                        "random weights")
    return any(n in _WEIGHTS for n in found)


def _check_model_type(raw: dict[str, Any], where: str, transformers: ModuleType) -> None:
    """:class:`UsageError` for a ``model_type`` this transformers does not know, said whole
    (transformers' own message runs to 400 characters before it names the fix)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    model_type = raw.get("model_type")
    if model_type is None:
        raise UsageError(f"{where}: its config.json has no model_type; add the "
                         "architecture's (e.g. \"model_type\": \"llama\"), as "
                         "save_pretrained writes it")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING_NAMES:
        raise UsageError(f"{where}: config.json's model_type {model_type!r} is not an "
                         f"architecture transformers {transformers.__version__} knows; fix "
                         "the name, or upgrade transformers if it is newer")


def _cut(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut at a word boundary with an ellipsis when too long."""
    line = one_line(text, limit=10**6)
    if len(line) <= limit:
        return line
    head = line[:limit]
    return (head.rsplit(" ", 1)[0] if " " in head else head).rstrip(",;:") + " …"


def _config_text(path: str) -> bytes:
    """The bytes of ``path/config.json``: ``path`` a folder, the file a regular one within
    :data:`~attnprof.input_files.CONFIG`'s cap, read in bounded memory (a FIFO, a folder or
    a loop of links, at either place, named as such); transformers then reads that same
    small file."""
    folder = Path(path)
    saved = "a folder written by save_pretrained (config.json, optionally weights)"
    check_folder(folder, f"--model-path {path!r}",
                 f"give its folder, {str(folder.parent)!r}" if folder.name == "config.json"
                 else f"give {saved}")
    config_file = folder / "config.json"
    if not os.path.lexists(config_file):
        raise UsageError(f"--model-path {path!r} has no config.json; give {saved}")
    return read_input(config_file, f"the config.json of --model-path {path!r}", cap=CONFIG,
                      fix=f"give {saved}")


def _model_class(transformers: ModuleType, config: Any) -> Any:
    """The class the config names (``architectures``), else the Auto class for its family."""
    for name in getattr(config, "architectures", None) or []:
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    family = family_of(config)
    if family == "encoder-decoder":
        return transformers.AutoModelForSeq2SeqLM
    if family == "decoder":
        return transformers.AutoModelForCausalLM
    return transformers.AutoModel


def model_inputs(model: torch.nn.Module, *, batch: int, seq: int, seed: int,
                 device: str, dtype: torch.dtype) -> dict[str, Any]:
    """Random inputs of one prefill step: token ids (``seq`` long), or an image whose
    patches number about ``seq`` for vision models; encoder-decoders get decoder ids too."""
    import torch

    config: Any = model.config
    gen = torch.Generator().manual_seed(seed)
    main = getattr(model, "main_input_name", "input_ids")
    if main == "pixel_values":
        size = int(getattr(config, "image_size", 224))
        channels = int(getattr(config, "num_channels", 3))
        pixels = torch.randn(batch, channels, size, size, generator=gen)
        return {"pixel_values": pixels.to(device=device, dtype=dtype)}
    if main != "input_ids":
        raise UsageError(f"{type(model).__name__} takes {main!r}, not token ids or an "
                         "image; profile it with a path/to/file.py:factory that returns "
                         "its inputs")
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    if vocab < 2:
        raise UsageError(f"{type(model).__name__}'s config has no vocab_size; profile it "
                         "with a factory that returns its inputs")
    ids = torch.randint(0, vocab, (batch, seq), generator=gen).to(device)
    inputs: dict[str, Any] = {"input_ids": ids}
    if getattr(config, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = torch.randint(0, vocab, (batch, seq),
                                                    generator=gen).to(device)
    return inputs
