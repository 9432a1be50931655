"""The sweep spec format, as shown by ``semgrad sweep --help`` and the README (one text, so they agree)."""

from __future__ import annotations

__all__ = ["SPEC_EXAMPLE", "SPEC_HELP"]

#: A complete sweep spec: 2 tasks x 2 seeds x 2 optimizers = 8 runs, offline.
SPEC_EXAMPLE = """\
name = "navigate-vs-tgd"                # the sweep's name (default: the file's stem)
tasks = ["bbh:navigate", "gsm8k"]       # task names; "bbh:all" is the 27 BBH tasks
seeds = [0, 1]                          # one run per seed
optimizers = ["neighbor-sgd", "tgd"]    # see `semgrad run --help` for the names

[models]                                # the model per role; or several [[models]] tables, each with a `name`
forward = "gpt-4o-mini"
backward = "gpt-4-turbo"
optimizer = "gpt-4-turbo"

[settings]                              # options of `semgrad run`, shared by every run
data_dir = "data"                       # relative paths are relative to this file
backend = "simulated"                   # or "openai-compatible", "anthropic"
iterations = 2
max_concurrent_calls = 16               # calls in flight across the whole sweep, per backend

[resources]                             # scheduling (Ray); all optional
cpus_per_run = 1
max_retries = 3                         # retries of a run whose worker died; it resumes
"""

SPEC_HELP = f"""\
The spec is a TOML file. Every combination of tasks x seeds x optimizers (x model sets)
is one run, in its own folder DIR/<task>__seed<seed>__<optimizer> with the files of
`semgrad run`; DIR/sweep.html links to each run's report. Re-running skips finished runs
and resumes interrupted ones. Settings keys: data_dir, backend, iterations, k, train,
validation, test, base_url, concurrency, timeout, cache, max_calls, max_tokens,
max_concurrent_calls, protocol, temperature, max_output_tokens, forward_temperature,
backward_temperature, optimizer_temperature, forward_max_output_tokens,
backward_max_output_tokens, optimizer_max_output_tokens, breadth (COPRO's candidates per
round), minibatch and max_metric_calls (gepa's and pareto-sgd's training items per proposal
and budget in items scored), max_items (the most items one data file may hold; --max-items
overrides it). The
one-parameter ablation names its parameter in optimizers: "one-parameter:answer.instruction".
Resources keys: num_cpus, cpus_per_run, max_retries, max_parallel, lease_seconds.

Your own system: instead of tasks, give system = "my_system.py:build" and data =
"items.jsonl" (paths relative to the spec); metric = "exact" (or numeric, judge with
criteria = "...", or your own "my_metric.py:fn") and llm = "my_llm.py:make" (your own LLM,
in place of the backend) are optional. The spec is yours, so it may name code; run folders
are DIR/<file>-<function>__seed<seed>__<optimizer>. See docs/your-own-system.md.

Example:

{SPEC_EXAMPLE}"""
