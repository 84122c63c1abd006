"""From a :class:`~attnprof.workload.model_spec.ModelSpec` to a :class:`LoadedModel`: a
built-in, a config folder, or a user's factory.

Every mistake a user can make here — transformers missing, a folder without config.json, a
factory that raises, exits or returns the wrong thing — is one :class:`UsageError` naming
the bad value, raised before anything is measured or written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attnprof.errors import UsageError
from attnprof.formatting import one_line
from attnprof.models.fits import check_fits
from attnprof.models.loaded import LoadedModel, as_call_inputs, input_sizes
from attnprof.models.sizes import config_sizes
from attnprof.signals import reraise_stop
from attnprof.workload.model_spec import ModelSpec

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_PATH_SEQ", "config_sizes", "load_model", "torch_dtype"]

#: Prompt length for --model-path models when --seq is not given.
DEFAULT_PATH_SEQ = 128


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a canonical dtype name."""
    import torch

    dtype: torch.dtype = getattr(torch, name)
    return dtype


def load_model(spec: ModelSpec, *, seed: int = 0) -> LoadedModel:
    """Build the model ``spec`` names, on its device and in its dtype, with its inputs."""
    loaded = _from_factory(spec) if spec.kind == "factory" else _from_transformers(spec, seed)
    loaded.model.eval()  # dropout off: runs are repeatable and implementations comparable
    return loaded


def _from_transformers(spec: ModelSpec, seed: int) -> LoadedModel:
    import torch

    from attnprof.models.hf import family_of, from_config_dir, model_inputs, require_transformers

    dtype = torch_dtype(spec.dtype)
    if spec.kind == "builtin":
        from attnprof.models.builtin import builtin_config, builtin_model_class, sizes_of

        assert spec.source is not None
        transformers = require_transformers(f"the built-in model {spec.source!r}")
        seq = sizes_of(spec)["seq"]
        config = builtin_config(spec, transformers)
        cls = builtin_model_class(spec.source, transformers)
        check_fits(cls, config, spec, seq)
        torch.manual_seed(seed)
        model = cls(config)
        source, weights = f"{spec.source} (built-in, from a config)", "random"
    else:
        assert spec.model_path is not None
        seq = spec.seq or DEFAULT_PATH_SEQ
        model, weights = from_config_dir(spec.model_path, seed=seed,
                                         check=lambda cls, config: check_fits(cls, config, spec,
                                                                              seq))
        config = model.config
        source = f"--model-path {spec.model_path}"
    model = model.to(device=spec.device, dtype=dtype)
    kwargs = model_inputs(model, batch=spec.batch, seq=seq, seed=seed, device=spec.device,
                          dtype=dtype)
    sizes = config_sizes(config)
    sizes.update(batch=spec.batch, seq=_tokens(kwargs, config, seq))
    family = family_of(config)
    vocab = int(getattr(config, "vocab_size", 0) or 0)

    def token_inputs(n: int) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(seed + 1)
        return {"input_ids": torch.randint(0, max(vocab, 2), (spec.batch, n),
                                           generator=gen).to(spec.device)}

    return LoadedModel(model=model, args=(), kwargs=kwargs, source=source,
                       family=family,  # type: ignore[arg-type]
                       weights=weights, sizes=sizes,
                       token_inputs=token_inputs if vocab else None, dtype=spec.dtype,
                       device=spec.device)


def _tokens(kwargs: dict[str, Any], config: Any, seq: int) -> int:
    """Tokens per sequence the inputs hold (patches + class token for images)."""
    ids = kwargs.get("input_ids")
    if ids is not None:
        return int(ids.shape[-1])
    pixels = kwargs.get("pixel_values")
    patch = getattr(config, "patch_size", None)
    if pixels is not None and isinstance(patch, int) and patch > 0:
        return (int(pixels.shape[-1]) // patch) * (int(pixels.shape[-2]) // patch) + 1
    return seq


def _from_factory(spec: ModelSpec) -> LoadedModel:
    import torch

    from attnprof.variants.user import load_callable

    assert spec.source is not None
    source = spec.source
    factory = load_callable(source, what="model factory")
    try:
        made = factory()
    except BaseException as exc:  # the user's code: its failure, in one line (any type;
        reraise_stop(exc)  # only a real stop signal ends the run)
        if isinstance(exc, SystemExit):
            raise UsageError(f"model factory {source!r} called exit({exc.code!r}); return "
                             "(model, inputs) instead") from None
        raise UsageError(f"model factory {source!r} raised {type(exc).__name__}: "
                         f"{one_line(str(exc), 300)}") from None
    if not isinstance(made, (tuple, list)) or len(made) != 2:
        raise UsageError(f"model factory {source!r} returned {type(made).__name__}; return "
                         "a pair (model, inputs) with model an nn.Module")
    model, inputs = made
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"model factory {source!r} returned {type(model).__name__} as the "
                         "model; return (model, inputs) with model an nn.Module")
    args, kwargs = as_call_inputs(inputs, source)
    dtype = next((p.dtype for p in model.parameters()), torch.float32)
    device = next((str(p.device) for p in model.parameters()), "cpu")
    sizes = config_sizes(model.config) if hasattr(model, "config") else {}
    read, shape = input_sizes(args, kwargs)
    return LoadedModel(model=model, args=args, kwargs=kwargs, source=source,
                       family="module", weights="factory", sizes={**sizes, **read},
                       dtype=str(dtype).removeprefix("torch."), device=device,
                       input_shape=shape)
