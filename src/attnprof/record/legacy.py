"""Older record files, read by today's attnprof: each upgraded one version at a time.

Schema 2 to 3 (:func:`upgrade_v2`): a sweep record that carries a recommendation (what
``recommend --json`` wrote) becomes a ``recommend`` record; every other kind is the same.

Schema 1 to 2 (:func:`upgrade_v1`):
schema 1 had two shapes: the compare record (``kind: "compare"``, ``workload`` and
``settings`` as free dicts, the settings flat, no run id) and ``attnprof analyze --json``
(``kind: "analyze"`` with only ``reports``). The upgrade is a pure dict-to-dict function;
the typed decode that follows validates the result like any other file.
"""

from __future__ import annotations

from typing import Any

__all__ = ["upgrade", "upgrade_v1", "upgrade_v2"]

_PLAN_KEYS = ("warmup_s", "min_time_s", "min_samples", "max_samples", "min_warmup_calls",
              "rounds")
_SETTINGS_KEYS = ("seed", "measure_memory", "check_accuracy", "measure_ceilings", "trace_dir")


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a schema-1 record) in schema-2 form; unknown shapes are left for the
    typed decode to refuse."""
    out = dict(data, schema_version=2)
    created = out.get("created")
    out.setdefault("created", "unknown")
    # A stable id: the same old file always upgrades to the same run id. hashlib is
    # imported here, not at the top: this module is loaded by every command that reads
    # records (analyze among them), and hashlib's OpenSSL binding costs 3 ms to load.
    import hashlib

    digest = hashlib.sha1(repr(sorted(data.items(), key=str)).encode()).hexdigest()[:6]
    out.setdefault("run_id", f"v1-{created or 'unknown'}-{digest}")
    if out.get("kind") == "analyze":
        out.setdefault("status", "complete")  # schema 1 wrote it only once finished
    if out.get("kind") == "compare":
        if isinstance(out.get("workload"), dict):
            out["workload"] = {k: v for k, v in out["workload"].items() if k != "q_len"}
        if isinstance(out.get("settings"), dict):
            out["settings"] = _settings(out["settings"])
        env = out.get("environment")
        if isinstance(env, dict):
            out.setdefault("attnprof", env.get("attnprof", "0.1.0"))
    return out


def upgrade_v2(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a schema-2 record) in schema-3 form."""
    out = dict(data, schema_version=3)
    if out.get("kind") == "sweep" and out.get("recommendation") is not None:
        out["kind"] = "recommend"
    return out


#: Each older version's upgrade to the next.
_UPGRADES = {1: upgrade_v1, 2: upgrade_v2}


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` upgraded step by step from its ``schema_version`` to the current one; a
    version this attnprof does not know is left for the caller to refuse."""
    while True:
        version = data.get("schema_version")
        if type(version) is not int or version not in _UPGRADES:  # true is not 1
            return data
        data = _UPGRADES[version](data)


def _settings(flat: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {k: flat[k] for k in _SETTINGS_KEYS if k in flat}
    nested["plan"] = {k: flat[k] for k in _PLAN_KEYS if k in flat}
    # attnprof 0.1 left the C allocator as the process found it (measure.allocator).
    nested["cpu_allocator"] = "system"
    if "trace_steps" in flat:
        nested["trace"] = {"steps": flat["trace_steps"]}
    return nested
