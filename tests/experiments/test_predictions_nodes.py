"""A run's predictions record every node's output, and a resumed run reads them back from its ledger."""

from __future__ import annotations

from semgrad.backends.fake import FunctionLLM, reply_forward
from semgrad.core import Example, GraphBuilder
from semgrad.core.optim import evaluate
from semgrad.core.scoring import exact_match
from semgrad.effects import run_sync
from semgrad.experiments._ledger import Ledger
from semgrad.experiments._predictions import predictions_json


def _pipeline():
    """review -> extract -> judge -> answer, with a review -> judge shortcut."""
    b = GraphBuilder()
    review = b.input("review")
    extract = b.llm("extract", inputs=[review], instruction="Quote the claim.")
    judge = b.llm("judge", inputs=[extract, review], instruction="Is the claim supported?")
    b.function("answer", lambda verdict: verdict.strip().lower(), inputs=[judge])
    return b.build(output="answer")


def test_each_prediction_holds_every_llm_and_function_node_s_output(tmp_path):
    """predictions_json keeps extract's and judge's values (not the input's, not the output's twice), and the
    ledger of a run keeps and gives them back, so a resumed run still reports them."""
    graph, params = _pipeline()
    replies = {"extract": "the battery lasts", "judge": "YES"}
    llm = FunctionLLM(lambda request: reply_forward(request, replies[request.node]))
    examples = [Example({"review": "Great battery."}, "yes", id=0), Example({"review": "Meh."}, "no", id=1)]
    results = run_sync(evaluate(graph, params, examples, exact_match()), llm)
    predictions = predictions_json(examples, results)
    assert [p["nodes"] for p in predictions] == [{"extract": "the battery lasts", "judge": "YES"}] * 2
    assert [p["output"] for p in predictions] == ["yes", "yes"]
    ledger = Ledger(tmp_path)
    ledger.evaluated("mine", "test", params, 0.5, predictions)
    ledger.save()
    assert Ledger.load(tmp_path).predictions("mine", "test", params) == predictions
