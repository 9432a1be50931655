"""Ready-made graphs: the paper's BBH / GSM8K and LIAR graphs, and generic layered ones."""

from __future__ import annotations

from collections.abc import Sequence

from .core import FrozenMap, Graph, GraphBuilder, GraphError, Params

__all__ = [
    "HINT_INSTRUCTION",
    "LIAR_ANALYSIS_FORMAT",
    "LIAR_ANALYSIS_INSTRUCTIONS",
    "LIAR_DECIDE_FORMAT",
    "LIAR_DECIDE_INSTRUCTION",
    "LIAR_FIELDS",
    "SOLVE_INSTRUCTION",
    "layered_graph",
    "liar_graph",
    "paper_graph",
]

HINT_INSTRUCTION = "Work out an intermediate step that helps solve the problem."
SOLVE_INSTRUCTION = "Solve the problem."

#: The input fields of the LIAR graph, one analysis node each.
LIAR_FIELDS: tuple[str, ...] = ("statement", "party", "job_title", "source", "state")

#: The starting instruction of each LIAR analysis node, by the field it is about. Every
#: analysis reads the whole record; each looks at it from one angle. They say what the
#: official starting instructions say, in our words; the length limit is not part of them
#: (it is `LIAR_ANALYSIS_FORMAT`, fixed).
LIAR_ANALYSIS_INSTRUCTIONS: FrozenMap[str, str] = FrozenMap(
    {
        "statement": "Look at the statement by itself.",
        "party": "How would the speaker's party regard the statement?",
        "job_title": "Does the statement fit the speaker's job title?",
        "source": "Why might this source have put the statement out?",
        "state": "How would the speaker's state regard the statement?",
    }
)

#: The final node's starting instruction (the official one's content, in our words); the
#: Yes/No form of its answer is `LIAR_DECIDE_FORMAT`, fixed.
LIAR_DECIDE_INSTRUCTION = (
    "From the record and the other information, decide whether the statement is a lie (Yes) or not (No)."
)

#: The fixed form of each analysis's output, outside its trainable instruction (as the
#: official template's output-format line); analyses are not asked to reason first.
LIAR_ANALYSIS_FORMAT = "Reply in at most two sentences."

#: The fixed form of the final node's answer, outside its trainable instruction.
LIAR_DECIDE_FORMAT = "Reply Yes or No."

_LIAR_ROLES: FrozenMap[str, str] = FrozenMap(
    {
        "statement": "the statement to judge",
        "party": "the speaker's political party",
        "job_title": "the speaker's job title",
        "source": "where the statement was made",
        "state": "the speaker's state",
    }
)


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


def liar_graph(*, decide_instruction: str = LIAR_DECIDE_INSTRUCTION) -> tuple[Graph, Params]:
    """The LIAR graph as the official code builds it: five analysis nodes, one per
    field of `LIAR_FIELDS`, feed a final ``answer`` node that decides Yes (a lie) or No.

    Every node reads the whole record (the five fields); each analysis node
    ``<field>_analysis`` looks at it from its field's angle, starting from
    `LIAR_ANALYSIS_INSTRUCTIONS`; ``answer`` reads the record and the five analyses.

    Args:
        decide_instruction: The final node's starting instruction.

    Examples:
        >>> graph, params = liar_graph()
        >>> graph.inputs
        ('statement', 'party', 'job_title', 'source', 'state')
        >>> graph.predecessors("party_analysis")
        ('statement', 'party', 'job_title', 'source', 'state')
        >>> graph.predecessors("answer")[5:]
        ('statement_analysis', 'party_analysis', 'job_title_analysis', 'source_analysis', 'state_analysis')
        >>> params.value("answer.instruction").endswith("a lie (Yes) or not (No).")
        True
        >>> graph.nodes["party_analysis"].output_format, graph.nodes["party_analysis"].reason
        ('Reply in at most two sentences.', False)
    """
    b = GraphBuilder()
    fields = [b.input(field, role=_LIAR_ROLES[field]) for field in LIAR_FIELDS]
    analyses = [
        b.llm(
            f"{field}_analysis",
            inputs=fields,
            instruction=LIAR_ANALYSIS_INSTRUCTIONS[field],
            role=f"an analysis from the angle of {_LIAR_ROLES[field]}",
            output_format=LIAR_ANALYSIS_FORMAT,
            reason=False,
        )
        for field in LIAR_FIELDS
    ]
    b.llm(
        "answer",
        inputs=[*fields, *analyses],
        instruction=decide_instruction,
        role="Yes if the statement is a lie, else No",
        output_format=LIAR_DECIDE_FORMAT,
    )
    return b.build(output="answer")


def layered_graph(
    width: int,
    depth: int,
    *,
    skip: bool = False,
    inputs: Sequence[str] = ("question",),
    instruction: str = HINT_INSTRUCTION,
    final_instruction: str = SOLVE_INSTRUCTION,
) -> tuple[Graph, Params]:
    """A generic layered graph: `depth` layers of `width` LLM nodes, then ``final``.

    Node ``l{layer}_{i}`` of layer 0 reads the inputs; of a later layer, every
    node of the layer before. ``final`` reads the last layer (the inputs when
    `depth` is 0). With `skip`, every node, ``final`` included, also reads the
    inputs, so ``layered_graph(2, 1, skip=True)`` has the paper graph's shape.

    Args:
        width: Nodes per layer (at least 1).
        depth: Number of layers before ``final`` (at least 0).
        skip: Also feed the inputs to every layer after the first and to ``final``.
        inputs: The input fields' names.
        instruction: The starting instruction of the layer nodes.
        final_instruction: The starting instruction of ``final``.

    Returns:
        ``(graph, params)`` with output ``final``.

    Raises:
        GraphError: `width` < 1, `depth` < 0, or no inputs.

    Examples:
        >>> graph, params = layered_graph(2, 2)
        >>> graph.topological_order
        ('question', 'l0_0', 'l0_1', 'l1_0', 'l1_1', 'final')
        >>> graph.predecessors("l1_0"), graph.predecessors("final")
        (('l0_0', 'l0_1'), ('l1_0', 'l1_1'))
        >>> layered_graph(2, 2, skip=True)[0].predecessors("l1_0")
        ('question', 'l0_0', 'l0_1')
        >>> len(layered_graph(4, 4)[1])
        17
    """
    sources = _layer_inputs(width, depth, inputs)
    b = GraphBuilder()
    for name in sources:
        b.input(name)
    previous = sources
    for layer in range(depth):
        reads = previous if layer == 0 or not skip else (*sources, *previous)
        previous = tuple(
            b.llm(f"l{layer}_{i}", inputs=reads, instruction=instruction, role=f"a step of layer {layer}")
            for i in range(width)
        )
    reads = (*sources, *previous) if skip and depth else previous
    b.llm("final", inputs=reads, instruction=final_instruction, role="the final answer")
    return b.build(output="final")


def _layer_inputs(width: int, depth: int, inputs: Sequence[str]) -> tuple[str, ...]:
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise GraphError(f"layered_graph needs width >= 1 nodes per layer, got {width!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise GraphError(f"layered_graph needs depth >= 0 layers, got {depth!r}")
    if isinstance(inputs, str) or not inputs:
        raise GraphError(f"layered_graph needs a non-empty list of input names, got {inputs!r}")
    return tuple(inputs)
