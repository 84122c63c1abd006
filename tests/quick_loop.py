"""Which test files are out of the quick loop, and why (read by tests/conftest.py)."""

from __future__ import annotations

#: What keeps a test file out of the quick loop (``pytest -m quick``, docs/development.md):
#: it starts processes (CLI subprocesses, worker executors, DDP ranks), drives Chromium,
#: starts Ray, builds the manual, builds transformers models, or is otherwise slow (flex
#: compiles, session-wide fixtures of every record kind). Paths are relative to tests/;
#: tests/test_quick_loop.py checks each still exists. A test marked ``slow`` itself, or
#: using the shared Ray instance, is out too. Every other test is ``quick``.
OUT_OF_QUICK: dict[str, tuple[str, ...]] = {
    "analysis/test_capture_noise.py": ("hf",),
    "capture/test_capture_ddp.py": ("subprocess", "hf"),
    "capture/test_capture_lifecycle.py": ("hf",),
    "capture/test_capture_transformers.py": ("hf",),
    "capture/test_known_cost.py": ("slow",),
    "cli/test_analyze_beside.py": ("subprocess",),
    "cli/test_analyze_hardening.py": ("subprocess",),
    "cli/test_analyze_startup.py": ("subprocess",),
    "cli/test_input_files.py": ("subprocess", "hf"),
    "cli/test_mistakes_before_torch.py": ("subprocess",),
    "cli/test_output_encoding.py": ("subprocess",),
    "cli/test_signals.py": ("subprocess",),
    "cli/test_stop_every_command.py": ("subprocess", "hf"),
    "cli/test_trace_names.py": ("subprocess",),
    "compare/test_allocator_state.py": ("subprocess",),
    "compare/test_cli.py": ("subprocess",),
    "compare/test_rows_never_lost.py": ("subprocess",),
    "compare/test_threads.py": ("subprocess",),
    "compare/test_variant_guards.py": ("subprocess",),
    "compare/test_variants.py": ("slow",),
    "diff/test_process_diff.py": ("subprocess",),
    "diff/test_trace_diff.py": ("subprocess",),
    "docs/test_readme_examples.py": ("subprocess", "slow"),
    "docs/test_site.py": ("docs",),
    "expectations/test_check.py": ("subprocess",),
    "models/test_contention.py": ("hf",),
    "models/test_ground_truth.py": ("slow",),
    "models/test_model_calls.py": ("hf",),
    "models/test_model_cli.py": ("subprocess", "hf"),
    "models/test_model_decode.py": ("subprocess", "hf"),
    "models/test_model_executor.py": ("subprocess", "hf"),
    "models/test_model_implementations.py": ("hf",),
    "models/test_model_path.py": ("hf",),
    "models/test_model_run.py": ("hf",),
    "models/test_structure.py": ("hf",),
    "models/test_trace_noise.py": ("subprocess", "hf"),
    "ranks/test_public_rank_set.py": ("subprocess",),
    "ranks/test_ray_ranks.py": ("ray",),
    "report/test_escaping.py": ("browser",),
    "report/test_hostile_file_names.py": ("browser",),
    "report/test_headline.py": ("browser",),
    "report/test_html_report.py": ("browser",),
    "report/test_record_commands.py": ("slow",),
    "report/test_report_polish.py": ("browser",),
    "report/test_show.py": ("subprocess",),
    "run/test_executors.py": ("subprocess",),
    "run/test_native_hang.py": ("subprocess",),
    "run/test_scratch.py": ("subprocess",),
    "store/test_concurrency.py": ("subprocess",),
    "store/test_env_and_startup.py": ("subprocess",),
    "store/test_history_cli.py": ("subprocess",),
    "sweep/test_isolation.py": ("subprocess",),
    "sweep/test_limits.py": ("subprocess",),
    "sweep/test_modes.py": ("subprocess",),
    "sweep/test_ray.py": ("ray",),
    "sweep/test_ray_cluster.py": ("ray", "subprocess"),
    "sweep/test_recommend.py": ("subprocess",),
    "sweep/test_resume.py": ("subprocess",),
    "sweep/test_sweep_command.py": ("subprocess",),
    "sweep/test_worker_memory.py": ("subprocess",),
    "test_terminal_safety.py": ("subprocess",),
    "trace/test_envelope.py": ("subprocess",),
    "trace/test_scan.py": ("slow",),
}
#: The markers that keep a test out of the quick loop.
OUT_OF_QUICK_MARKERS = ("slow", "subprocess", "browser", "ray", "docs", "hf")
#: Tests kept in the quick loop although their file is out of it: cheap ones that are the
#: quick loop's only reach into their package (``file::test``, relative to tests/).
QUICK_ANYWAY: frozenset[str] = frozenset({
    "run/test_executors.py::test_unknown_executor_is_a_usage_error",
    "run/test_scratch.py::test_only_folders_of_parents_that_are_gone_are_removed",
})
