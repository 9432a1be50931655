"""The `RunConfig` that the flags of ``semgrad run`` (or ``semgrad compare``) describe."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["run_config"]


def run_config(args: argparse.Namespace, *, optimizer: str | None = None) -> Any:
    """The `RunConfig` of `run`'s flags (or `compare`'s, which lack a few: those keep their defaults)."""
    from ..experiments import RunConfig
    from ..experiments._user_code import canonical_code_spec, is_code_spec
    from ..tasks import paper_iterations

    task, data = args.task, getattr(args, "data", None)
    if data is not None:
        from ..experiments._custom import canonical_spec

        task, data = canonical_spec(task), str(Path(data).resolve())
    llm, metric = getattr(args, "llm", None), getattr(args, "metric", "exact")
    if llm is not None and args.backend != "simulated":
        raise ValueError(f"--llm replaces --backend: drop --backend {args.backend}, or --llm")
    if is_code_spec(metric):
        metric = canonical_code_spec(metric, "metric")
    return RunConfig(
        task=task,
        data_dir=args.data_dir,
        backend="custom" if llm else args.backend,
        optimizer=optimizer or args.optimizer,
        iterations=args.iterations if args.iterations is not None else 4 if data else paper_iterations(task),
        k=args.k,
        seed=args.seed,
        train=args.train,
        validation=args.validation,
        test=args.test,
        base_url=args.base_url,
        model=args.model,
        forward_model=args.forward_model,
        backward_model=args.backward_model,
        optimizer_model=args.optimizer_model,
        concurrency=args.concurrency,
        timeout=args.timeout,
        cache=args.cache,
        max_calls=args.max_calls,
        max_tokens=args.max_tokens,
        breadth=args.breadth,
        protocol=args.protocol,
        param=args.param,
        temperature=args.temperature,
        max_output_tokens=args.max_output_tokens,
        **{
            f"{role}_{option}": getattr(args, f"{role}_{option}")
            for role in ("forward", "backward", "optimizer")
            for option in ("temperature", "max_output_tokens")
        },
        data=data,
        metric=metric,
        max_items=args.max_items,
        llm=canonical_code_spec(llm, "make") if llm else None,
        **_flags_of_run_only(args),
    )


def _flags_of_run_only(args: argparse.Namespace) -> dict[str, Any]:
    """The `RunConfig` fields of flags `run` has and `compare` may lack (those keep their defaults)."""
    return {
        "simulated_latency": getattr(args, "simulated_latency", 0.0),
        "minibatch": getattr(args, "minibatch", 3),
        "max_metric_calls": getattr(args, "max_metric_calls", None),
        "gate_rule": getattr(args, "gate_rule", "sum"),
        "gate_alpha": getattr(args, "gate_alpha", 0.05),
        "criteria": getattr(args, "criteria", None),
        "batch": getattr(args, "batch", None),
        "batch_poll": getattr(args, "batch_poll", 5.0),
        "prompt_cache": getattr(args, "prompt_cache", "on") == "on",
    }
