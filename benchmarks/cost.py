"""The cost row (issue #36 point 3): one run of the paper's protocol, the official code's requests against
semgrad's, in the conformance harness's simulated world (``tests/conformance``), the same calls made.

Both sides train on the same items for the paper's iterations, each with its memo (the official ``chat``
memoises identical temperature-0 requests, semgrad's official protocol runs through ``memoized``), then
evaluate the final instructions on the test items. Every request's text and reply are recorded; tokens are
characters / 4 on both sides. Billed at the dated table's list prices (`semgrad.data/prices.json`) for two
providers, with each provider's own prompt-cache rule applied to both sides alike:

* OpenAI caches by itself a prefix of 1,024 tokens or more that an earlier request sent (in steps of 128);
* Anthropic caches only a marked prefix: the official code marks none; semgrad marks the system text, cached
  when at least the model's minimum (`semgrad.experiments._prices.prompt_cache`);
* semgrad's final evaluation at the batch rate (half price, ``--batch eval``).

The share of prompt tokens that fall in a prefix an earlier request already sent (what a provider could
serve from its cache with no minimum) is given per purpose, and the calls and tokens per phase (training,
test) and purpose. Two rows: `paper_row`, the paper's sizes (the official protocol's split of BBH navigate,
20 training items and 230 test items, seed 0, the paper's 4 iterations), and `cost_row`'s small run (the
first 8 items to train, the next 32 to test). Needs the official code (``../shared/reference`` or
``$SEMGRAD_REFERENCE``) and the BBH data; ``python -m benchmarks --cost`` prints both rows.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio

from semgrad.core import Example, LLMRequest
from semgrad.core.optim import evaluate
from semgrad.core.scoring import normalized_match
from semgrad.effects import Runner, fit, memoized
from semgrad.experiments._prices import CACHE_MIN_TOKENS, bundled_prices
from semgrad.topologies import paper_graph

#: The models priced: the paper's forward model's successor at OpenAI, and Anthropic's small model.
MODELS = ("gpt-4o-mini", "claude-haiku-4-5")
BATCH_DISCOUNT = 0.5


def tokens(text: str) -> int:
    """About four characters per token (the same measure on both sides)."""
    return max(1, len(text) // 4)


def shared_prefixes(texts: Sequence[str]) -> list[int]:
    """For each text, the characters of its longest prefix that an earlier text also starts with.

    Examples:
        >>> shared_prefixes(["abcd", "abxy", "abcz", "q"])
        [0, 2, 3, 0]
    """
    seen: list[str] = []
    found = []
    for text in texts:
        i = bisect.bisect_left(seen, text)
        best = 0
        for j in (i - 1, i):
            if 0 <= j < len(seen):
                other, n = seen[j], 0
                limit = min(len(other), len(text))
                while n < limit and other[n] == text[n]:
                    n += 1
                best = max(best, n)
        found.append(best)
        seen.insert(i, text)
    return found


def _bill(calls: list[dict[str, Any]], model: str, *, marked: bool, batch: str) -> float:
    """USD for `calls` at `model`'s list prices; `batch`: "" (none), "eval" (the test phase) or "all"."""
    price = bundled_prices().models[model]
    read_rate = price[2] if len(price) > 2 else price[0]
    write_rate = price[3] if len(price) > 3 else price[0]
    anthropic = model.startswith("claude")
    minimum = next((n for name, n in CACHE_MIN_TOKENS.items() if model.startswith(name)), 1024)
    seen_systems: set[str] = set()
    total = 0.0
    for call in calls:
        t_in, t_out = tokens(call["text"]), tokens(call["reply"])
        cached = written = 0
        if not anthropic:  # automatic: the shared prefix, from 1,024 tokens, in steps of 128
            shared = tokens(call["text"][: call["shared"]]) if call["shared"] else 0
            cached = shared // 128 * 128 if shared >= 1024 else 0
        elif marked and call["system"] and tokens(call["system"]) >= minimum:
            size = tokens(call["system"])
            cached, written = (size, 0) if call["system"] in seen_systems else (0, size)
            seen_systems.add(call["system"])
        cost = (t_in - cached - written) * price[0] + cached * read_rate + written * write_rate + t_out * price[1]
        batched = batch == "all" or (batch == "eval" and call["phase"] == "test")
        total += cost / 1e6 * (BATCH_DISCOUNT if batched else 1.0)
    return total


def _shares(calls: list[dict[str, Any]]) -> dict[str, float]:
    by_purpose: dict[str, list[int]] = {}
    for call in calls:
        row = by_purpose.setdefault(call["purpose"], [0, 0])
        row[0] += tokens(call["text"][: call["shared"]]) if call["shared"] else 0
        row[1] += tokens(call["text"])
    return {purpose: round(shared / total, 3) for purpose, (shared, total) in by_purpose.items()}


def _official(world: Any, train: Sequence[Any], test: Sequence[Any], iterations: int) -> tuple[list[dict], float]:
    from tests.conformance import _official as official

    stub = official.OfficialStub(world, list(train) + list(test), memo=True)
    mods, instance, saved = official._install(stub)
    random.seed(0)
    try:
        samples = official.bbh_samples(train)
        current = mods.solutions.get_mlp_solution(2, 2, False)
        preds, best = asyncio.run(mods.solutions.arun_evaluate(current, samples))
        for i in range(iterations):  # the official loop's steps, as tests/conformance/_official.py drives them
            stub.phase = f"iteration {i}"
            current.get_gradients(
                batch=samples, preds=preds, errors_per_gradient=2, include_grad=True, use_bad_samples=True, target=True
            )
            current.apply_gradients(use_bad_samples=True, short_prompt=False, via_feedback=False)
            candidate = current.get_full_update()
            new_preds, score = asyncio.run(mods.solutions.arun_evaluate(candidate, samples))
            if score > best:
                current, preds, best = candidate, new_preds, score
        stub.phase = "test"
        _, test_score = asyncio.run(mods.solutions.arun_evaluate(current, official.bbh_samples(test)))
    finally:
        official._uninstall(instance, saved)
    calls = [
        {"phase": c.phase, "purpose": c.purpose, "text": c.text, "reply": world.official_reply(c), "system": ""}
        for c in stub.calls
    ]
    return calls, float(test_score)


def _semgrad(world: Any, train: Sequence[Any], test: Sequence[Any], iterations: int) -> tuple[list[dict], float]:
    from semgrad.core import optim
    from tests.conformance._semgrad import SemgradSide

    side = SemgradSide(world, list(train) + list(test))
    calls: list[dict[str, Any]] = []

    def recorder(request: LLMRequest) -> str:
        reply = side(request)
        calls.append(
            {
                "phase": side.phase,
                "purpose": request.purpose,
                "text": "\n".join(m.content for m in request.messages),
                "reply": reply,
                "system": request.system,
            }
        )
        return reply

    def progress(event: Any) -> None:
        if event.phase == "forward" or event.phase == "scoring initial params":
            side.phase = f"iteration {max(event.iteration - 1, 0)}"

    graph, params = paper_graph()
    examples = [Example(dict(i.fields), i.target, id=i.key) for i in train]
    optimizer = optim.neighbor_sgd(2, draw="official", fallback=False, reuse=True)
    llm = memoized(recorder)
    result = anyio.run(
        lambda: fit(graph, params, optimizer, train=examples, llm=llm, iterations=iterations, on_progress=progress)
    )
    side.phase = "test"
    tests = [Example(dict(i.fields), i.target, id=i.key) for i in test]
    scored = Runner(llm).run_sync(evaluate(graph, result.params, tests, normalized_match()))
    return calls, sum(score.value for _, score in scored) / len(scored)


def _by_phase(calls: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """Calls, input tokens and output tokens per phase ("train" or "test") and purpose."""
    found: dict[str, dict[str, list[int]]] = {}
    for call in calls:
        row = found.setdefault(_phase(call), {}).setdefault(call["purpose"], [0, 0, 0])
        row[0] += 1
        row[1] += tokens(call["text"])
        row[2] += tokens(call["reply"])
    return found


def _phase(call: dict[str, Any]) -> str:
    return "test" if call["phase"] == "test" else "train"


def cost_row(train_items: int = 8, test_items: int = 32, iterations: int = 4) -> dict[str, Any]:
    """The cost row of BBH navigate on its first items: calls, tokens, dollars per model and prefix shares,
    official vs semgrad."""
    from tests.conformance.test_official_protocol import navigate_items

    items = navigate_items(train_items + test_items)
    return _row(items[:train_items], items[train_items:], iterations)


def paper_row(seed: int = 0) -> dict[str, Any]:
    """The cost row at the paper's sizes: the official protocol's split of BBH navigate (`official_split_bbh`,
    20 training items, the other 230 to test) and the paper's iterations.

    The simulated world is the small run's (``BBH_WORLD``) laid on the split's training order: the first six
    training items each need a skill, the next two are fragile, so the run has as many errors to learn from
    as the small one (``BBH_WORLD`` names the first items of the file, of which the split trains on one)."""
    from semgrad.tasks import load_bbh, official_split_bbh, paper_iterations
    from tests.conformance._official import DATA
    from tests.conformance._world import World
    from tests.conformance.test_official_protocol import navigate_items

    split = official_split_bbh(load_bbh(DATA, "navigate"), seed=seed)
    by_key = {item.key: item for item in navigate_items(len(split.train) + len(split.test))}
    train, test = [by_key[e.id] for e in split.train], [by_key[e.id] for e in split.test]
    keys = [item.key for item in train]
    world = World(needs={key: i % 3 + 1 for i, key in enumerate(keys[:6])}, fragile=frozenset(keys[6:8]))
    row = _row(train, test, paper_iterations("bbh:navigate"), world)
    return {**row, "split": f"official_split_bbh(seed={seed})"}


def _row(train: Sequence[Any], test: Sequence[Any], iterations: int, world: Any = None) -> dict[str, Any]:
    from tests.conformance.test_official_protocol import BBH_WORLD

    world = BBH_WORLD if world is None else world
    train_items, test_items = len(train), len(test)
    theirs, their_score = _official(world, train, test, iterations)
    ours, our_score = _semgrad(world, train, test, iterations)
    row: dict[str, Any] = {"task": "bbh:navigate", "train": train_items, "test": test_items, "iterations": iterations}
    for name, calls, marked, batch, score in (
        ("official", theirs, False, "", their_score),
        ("semgrad", ours, True, "eval", our_score),
    ):
        for call, shared in zip(calls, shared_prefixes([c["text"] for c in calls])):
            call["shared"] = shared
        row[name] = {
            "calls": len(calls),
            "test_accuracy": round(score, 4),
            "input_tokens": sum(tokens(c["text"]) for c in calls),
            "output_tokens": sum(tokens(c["reply"]) for c in calls),
            "usd": {m: round(_bill(calls, m, marked=marked, batch=batch), 6) for m in MODELS},
            "prefix_share": _shares(calls),
            "by_phase": _by_phase(calls),
        }
    # The same calls made: as many per phase and purpose on both sides (and so in all).
    row["same_calls"] = Counter((_phase(c), c["purpose"]) for c in theirs) == Counter(
        (_phase(c), c["purpose"]) for c in ours
    )
    row["semgrad"]["usd_batch_all"] = {m: round(_bill(ours, m, marked=True, batch="all"), 6) for m in MODELS}
    row["semgrad_over_official"] = {m: round(row["semgrad"]["usd"][m] / row["official"]["usd"][m], 3) for m in MODELS}
    row["semgrad_batch_all_over_official"] = {
        m: round(row["semgrad"]["usd_batch_all"][m] / row["official"]["usd"][m], 3) for m in MODELS
    }
    return row


def main() -> int:
    """Print the cost rows as JSON: the paper's sizes, then the small run."""
    print(json.dumps({"paper_sizes": paper_row(), "small": cost_row()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
