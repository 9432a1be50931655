"""Ready-made graphs from the paper."""

from __future__ import annotations

from .core import Graph, GraphBuilder, Params

__all__ = ["HINT_INSTRUCTION", "SOLVE_INSTRUCTION", "paper_graph"]

HINT_INSTRUCTION = "Work out an intermediate step that helps solve the problem."
SOLVE_INSTRUCTION = "Solve the problem."


def paper_graph(
    *, hint_instruction: str = HINT_INSTRUCTION, solve_instruction: str = SOLVE_INSTRUCTION
) -> tuple[Graph, Params]:
    """The BBH / GSM8K graph: two parallel hint nodes read the question; a final
    node reads the question and both hints.

    Examples:
        >>> graph, params = paper_graph()
        >>> graph.predecessors("answer")
        ('question', 'hint_1', 'hint_2')
    """
    b = GraphBuilder()
    q = b.input("question", role="the problem to solve")
    h1 = b.llm("hint_1", inputs=[q], instruction=hint_instruction, role="an intermediate step")
    h2 = b.llm("hint_2", inputs=[q], instruction=hint_instruction, role="an intermediate step")
    b.llm("answer", inputs=[q, h1, h2], instruction=solve_instruction, role="the final answer")
    return b.build(output="answer")
