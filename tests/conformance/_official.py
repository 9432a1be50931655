"""The paper's official code, imported by path and driven with a stub in place of its LLM call.

The official package lives in ``../shared/reference/semantic_backprop`` (read its README).
It imports ``openai`` (only to build clients it never uses here) and ``datasets`` (its data
loaders fetch from the internet): both are stubbed in ``sys.modules`` while it is imported,
and the loaders are fed rows read from ``../shared/data`` instead. Its ``llm.chat`` is replaced by
`OfficialStub`, which classifies each prompt by the official templates' structure, records it
with the phase it belongs to, and answers from a shared `World`.

Nothing here copies the official code: the loops in `run_official_bbh` and
`run_official_liar` drive the official engine's own methods in the order its experiment
scripts call them (evaluate, gradients, rewrites, full update, gate on the training items).
"""

from __future__ import annotations

import asyncio
import csv
import importlib
import os
import random
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from .._data import data_dir
from ._world import Call, Item, World

#: The paper's official code (commit aad0c72, MIT): ``$SEMGRAD_REFERENCE`` when set (a checkout of that commit), else
#: ``../shared/reference/semantic_backprop`` beside the repository. It is run, never copied into the project.
_BESIDE = Path(__file__).parents[2] / ".." / "shared" / "reference" / "semantic_backprop"
REFERENCE = Path(os.environ.get("SEMGRAD_REFERENCE") or _BESIDE).resolve()
#: How a clone without ``../shared`` gets the official code, said in every skip that needs it.
FETCH_REFERENCE = (
    "git clone https://github.com/HishamAlyahya/semantic_backprop DIR && git -C DIR checkout aad0c72, "
    "then SEMGRAD_REFERENCE=DIR"
)
DATA = data_dir()

#: The label numbers of the ``datasets`` hub's LIAR (ClassLabel order), which the official loader filters on.
HF_LIAR_LABELS = {"false": 0, "half-true": 1, "mostly-true": 2, "true": 3, "barely-true": 4, "pants-fire": 5}


class _NoClient:
    """Stands in for ``openai.AsyncOpenAI``: built at import, never used (chat is stubbed)."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


def _no_hub(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the datasets hub is not reachable here; feed rows with official_datasets()")


def skip_module_without_official() -> None:
    """Skip the calling test module when the official code is absent (a user's clone has no ``../shared``):
    every test of such a module runs that code, so the module is one skip with its reason, not one per test."""
    if not REFERENCE.is_dir():
        pytest.skip(
            f"the official code is absent: {REFERENCE} (every test of this module runs it): {FETCH_REFERENCE}",
            allow_module_level=True,
        )


def official() -> types.SimpleNamespace:
    """The official modules (engine, prompts, data loaders); skips when the reference is absent."""
    if not REFERENCE.is_dir():
        pytest.skip(f"the official code is absent: {REFERENCE}: {FETCH_REFERENCE}")
    pytest.importorskip("numpy")
    pytest.importorskip("tqdm")
    for path in (REFERENCE, REFERENCE / "experiments"):
        if str(path) not in sys.path:
            sys.path.append(str(path))
    # The official modules bind `openai.AsyncOpenAI` and `datasets.load_dataset` at import: they
    # import against stubs (a real openai client would refuse to start without a key), and the
    # real modules, if any, are put back afterwards.
    stubs = {
        "openai": types.SimpleNamespace(AsyncOpenAI=_NoClient),
        "datasets": types.SimpleNamespace(load_dataset=_no_hub),
    }
    saved = {name: sys.modules.get(name) for name in stubs}
    try:
        sys.modules.update(stubs)  # type: ignore[arg-type]
        return types.SimpleNamespace(
            llm=importlib.import_module("semantic_backprop.llm"),
            solutions=importlib.import_module("semantic_backprop.engine.solutions"),
            liar_data=importlib.import_module("data_utils.liar"),
            bbh_data=importlib.import_module("data_utils.bbh"),
            gsm8k_data=importlib.import_module("data_utils.gsm8k"),
        )
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@contextmanager
def official_datasets(rows: Callable[..., Any]) -> Iterator[None]:
    """Make the official loaders' ``load_dataset(...)`` return ``rows(*args)`` for the duration."""
    mods = official()
    saved = {m: m.load_dataset for m in (mods.liar_data, mods.bbh_data, mods.gsm8k_data)}
    try:
        for module in saved:
            module.load_dataset = rows
        yield
    finally:
        for module, value in saved.items():
            module.load_dataset = value


def hub_liar_rows(file: str = "train") -> list[dict[str, Any]]:
    """LIAR rows as the ``datasets`` hub gives them (its field names, numeric labels), from the TSV."""
    path = DATA / "liar" / f"{file}.tsv"
    if not path.is_file():
        pytest.skip(f"LIAR data is absent: {path}")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    names = ("id", "label", "statement", "subject", "speaker", "job_title", "state_info", "party_affiliation")
    result = []
    for row in rows:
        record: dict[str, Any] = dict(zip(names, row[:8]))
        record["label"] = HF_LIAR_LABELS[row[1]]
        record["context"] = row[13]
        result.append(record)
    return result


# --- the stub -------------------------------------------------------------------------------------


def classify(prompt: Any) -> tuple[str, str]:
    """``(purpose, node kind)`` of an official prompt, from its templates' structure.

    Node kinds: ``hint`` (a BBH hint node or a LIAR analysis node), ``final`` and, for
    optimizer prompts, ``param`` (the rewrite does not say which node it is for).
    """
    text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
    if text.startswith("Context:\n"):
        return "forward", "final" if "Consider the following hints:" in text else "hint"
    if text.startswith("# Task\n"):
        return "forward", "final" if "\n# Hints" in text else "hint"
    if text.startswith("A task is performed given"):
        return "backward", "final"
    if text.startswith("I'm trying to write"):
        return ("critique" if text.rstrip().endswith("pros and cons of the prompt.") else "rewrite"), "param"
    raise AssertionError(f"unrecognised official prompt: {text[:80]!r}")


@attrs.define
class OfficialStub:
    """Replaces ``semantic_backprop.llm.llm.chat``: records each call and answers from `world`."""

    world: World
    items: Sequence[Item]
    phase: str = "initial"
    calls: list[Call] = attrs.Factory(list)
    options: list[dict[str, Any]] = attrs.Factory(list)
    #: Answer an identical temperature-0 request again from memory, as the official ``chat`` does
    #: (its memo is replaced with the chat): such a request is no call, and is not recorded.
    memo: bool = False
    memo_hits: int = 0
    _seen: dict[str, str] = attrs.Factory(dict)

    async def chat(
        self,
        messages: Any,
        temperature: float = 0,
        n: int = 1,
        top_p: float = 1,
        max_tokens: int = 1024,
        is_opt: bool = False,
    ) -> list[str]:
        """Answer one official call (the signature of the official ``LLM.chat``)."""
        text = messages if isinstance(messages, str) else "\n".join(m["content"] for m in messages)
        key = f"{is_opt}\n{text}"
        if self.memo and temperature == 0 and key in self._seen:
            self.memo_hits += 1
            return [self._seen[key]]
        purpose, kind = classify(messages)
        item = None if kind == "param" else self.world.find_item(text, self.items)
        call = Call(self.phase, purpose, kind, item, text)
        self.calls.append(call)
        self.options.append({"temperature": temperature, "max_tokens": max_tokens, "n": n, "is_opt": is_opt})
        reply = self._seen[key] = self.world.official_reply(call)
        return [reply]


def _install(stub: OfficialStub) -> Any:
    mods = official()
    instance = mods.llm.llm
    saved = instance.__dict__.get("chat")
    instance.chat = stub.chat
    return mods, instance, saved


def _uninstall(instance: Any, saved: Any) -> None:
    if saved is None:
        del instance.chat
    else:
        instance.chat = saved


@attrs.frozen
class OfficialRun:
    """What the official loop did: every call with its phase, each candidate's score and the gate's decisions."""

    calls: tuple[Call, ...]
    options: tuple[dict[str, Any], ...]
    initial_score: float
    scores: tuple[float, ...]
    accepted: tuple[bool, ...]
    final_instructions: tuple[str, ...]
    #: The error samples each iteration drew (item texts, in the order drawn).
    selected: tuple[tuple[str, ...], ...] = ()


def bbh_samples(items: Sequence[Item]) -> list[dict[str, Any]]:
    """Items as the official BBH loader shapes them."""
    return [
        {"text": i.text, "label": i.target, "output_format": "", "question_id": i.text, "expected_output": i.target}
        for i in items
    ]


@contextmanager
def _recording_draws(mods: Any, drawn: list[tuple[str, ...]]) -> Iterator[None]:
    """Record what the official ``sample_error_batch`` draws (it is called by name, so it is swapped)."""
    original = mods.solutions.sample_error_batch

    def recorded(batch: Any, preds: Any, n: int = 4) -> Any:
        found = original(batch, preds, n)
        drawn.append(tuple(sample["text"] for sample, _ in found))
        return found

    mods.solutions.sample_error_batch = recorded
    try:
        yield
    finally:
        mods.solutions.sample_error_batch = original


def run_official_bbh(
    world: World, items: Sequence[Item], iterations: int, *, k: int = 2, seed: int = 0, memo: bool = False
) -> OfficialRun:
    """The official BBH loop (bbh.sh's options: gradients, error samples, full update, targeted feedback).

    `memo`: the stub answers identical temperature-0 requests from memory, as the official chat does."""
    stub = OfficialStub(world, items, memo=memo)
    mods, instance, saved = _install(stub)
    drawn: list[tuple[str, ...]] = []
    random.seed(seed)
    with _recording_draws(mods, drawn):
        return _bbh_loop(stub, mods, instance, saved, items, iterations, k, drawn)


def _bbh_loop(
    stub: OfficialStub,
    mods: Any,
    instance: Any,
    saved: Any,
    items: Sequence[Item],
    iterations: int,
    k: int,
    drawn: list[tuple[str, ...]],
) -> OfficialRun:
    try:
        samples = bbh_samples(items)
        current = mods.solutions.get_mlp_solution(2, 2, False)
        preds, best = asyncio.run(mods.solutions.arun_evaluate(current, samples))
        initial, scores, accepted = best, [], []
        for i in range(iterations):
            stub.phase = f"iteration {i}"
            current.get_gradients(
                batch=samples, preds=preds, errors_per_gradient=k, include_grad=True, use_bad_samples=True, target=True
            )
            current.apply_gradients(use_bad_samples=True, short_prompt=False, via_feedback=False)
            candidate = current.get_full_update()
            new_preds, score = asyncio.run(mods.solutions.arun_evaluate(candidate, samples))
            scores.append(score)
            accepted.append(bool(score > best))
            if score > best:
                current, preds, best = candidate, new_preds, score
        final = tuple(node.instruction.instruciton_str for node in current.nodes)
    finally:
        _uninstall(instance, saved)
    assert all(c.item is not None or c.purpose == "rewrite" for c in stub.calls), "a call named no known item"
    run = OfficialRun(tuple(stub.calls), tuple(stub.options), initial, tuple(scores), tuple(accepted), final)
    return attrs.evolve(run, selected=tuple(drawn))


#: The official LIAR ablations as liar.sh runs them: (include_grad, no_include_sibling, opt_keys, no_select).
LIAR_VARIANTS: dict[str, tuple[bool, bool, tuple[str, ...] | None, bool]] = {
    "full": (True, False, None, False),
    "no-gradients": (False, False, None, False),
    "no-neighbors": (True, True, None, False),
    "no-gate": (True, False, None, True),
    **{f"one-parameter:{key}": (True, False, (key,), False) for key in ("Statement", "Final")},
}


def liar_samples(items: Sequence[Item]) -> list[dict[str, Any]]:
    """Items as the official LIAR loader shapes them (text = the record, label 1 for a lie)."""
    return [
        {
            "text": i.text,
            "label": 1 if i.target == "Yes" else 0,
            "question_id": i.text,
            "expected_output": i.target,
            "output_format": "Answer Yes or No as labels",
        }
        for i in items
    ]


def run_official_liar(
    world: World,
    items: Sequence[Item],
    iterations: int,
    variant: str,
    *,
    k: int = 2,
    seed: int = 0,
    memo: bool = False,
    as_run: bool = False,
) -> OfficialRun:
    """The official LIAR loop for one ablation of `LIAR_VARIANTS`.

    One official defect is corrected, as semgrad must not copy it: a full update there
    builds the new solution without its ``include_sibling`` flag, which turns the
    no-neighbours ablation back into the full method after the first accepted update
    (`as_run`: left as it is, as the paper's run had it). `memo`: as `run_official_bbh`'s.
    """
    include_grad, no_sibling, opt_keys, no_select = LIAR_VARIANTS[variant]
    stub = OfficialStub(world, items, memo=memo)
    mods, instance, saved = _install(stub)
    drawn: list[tuple[str, ...]] = []
    random.seed(seed)
    with _recording_draws(mods, drawn):
        run = _liar_loop(
            stub, mods, instance, saved, items, iterations, k, no_sibling, include_grad, opt_keys, no_select, as_run
        )
    return attrs.evolve(run, selected=tuple(drawn))


def _liar_loop(
    stub: OfficialStub,
    mods: Any,
    instance: Any,
    saved: Any,
    items: Sequence[Item],
    iterations: int,
    k: int,
    no_sibling: bool,
    include_grad: bool,
    opt_keys: tuple[str, ...] | None,
    no_select: bool,
    as_run: bool,
) -> OfficialRun:
    try:
        samples = liar_samples(items)
        current = mods.solutions.LiarSolution(include_sibling=not no_sibling)
        preds, best = asyncio.run(mods.solutions.arun_evaluate(current, samples))
        initial, scores, accepted = best, [], []
        for i in range(iterations):
            stub.phase = f"iteration {i}"
            current.get_gradients(
                batch=samples,
                preds=preds,
                n=1,
                errors_per_gradient=k,
                gradients_per_error=None,
                include_grad=include_grad,
            )
            current.apply_gradients(opt_keys=list(opt_keys) if opt_keys else None)
            candidate = current.get_full_update()
            if not as_run:
                candidate.include_sibling = current.include_sibling  # the defect above, corrected
            new_preds, score = asyncio.run(mods.solutions.arun_evaluate(candidate, samples))
            scores.append(score)
            accepted.append(bool(score > best or no_select))
            if score > best or no_select:
                current, preds, best = candidate, new_preds, score
        final = tuple(current.tasks.values())
    finally:
        _uninstall(instance, saved)
    return OfficialRun(tuple(stub.calls), tuple(stub.options), initial, tuple(scores), tuple(accepted), final)
