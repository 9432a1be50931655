"""Composable optimizers over semantic gradients (optax-style transforms).

A transform is ``init(params) -> state`` and ``update(step, state, params) ->
Program[(step, state)]``; `chain` composes them; `neighbor_sgd` (the paper) and the
baselines -- `textgrad` (TextGrad 0.1.8), `optoprime` (Trace), `copro` (DSPy) and `gepa` (GEPA 0.1.4) --
are just chains; `tgd` is the formal per-edge special case. Write one small
transform, never a subclass.
"""

from .._deprecated import moved_names
from ._alias import ABLATIONS, ablation, neighbor_sgd, tgd
from ._base import (
    EmptyState,
    InstructionExample,
    ParamGradient,
    Proposal,
    StageReport,
    Step,
    Transform,
    apply_updates,
    identity,
    require,
    stateless,
)
from ._bounds import paired_lower_bound
from ._combining import EveryKState, apply_if, chain, every_k, masked, named_chain
from ._copro import CoproState, copro
from ._gepa import gepa
from ._guard import memorization_guard
from ._optoprime import optoprime, optoprime_update
from ._pareto import ParetoState
from ._pareto_sgd import PARETO_ABLATIONS, pareto_sgd
from ._stages import (
    DRAWS,
    GATE_RULES,
    BackwardState,
    GateState,
    MomentumState,
    SelectState,
    SwitchState,
    after_first_accept,
    aggregate,
    backpropagate,
    critique,
    evaluate,
    full_update,
    mean_score,
    momentum,
    official_generator,
    one_at_a_time,
    propose_rewrite,
    sample_update,
    select_error_samples,
    validation_gate,
)
from ._textgrad import TEXTGRAD_BATCH, sample_batch, textgrad, textgrad_gradients, textgrad_update

__all__ = [
    "ABLATIONS",
    "DRAWS",
    "GATE_RULES",
    "BackwardState",
    "CoproState",
    "EmptyState",
    "EveryKState",
    "GateState",
    "InstructionExample",
    "MomentumState",
    "ParetoState",
    "PARETO_ABLATIONS",
    "ParamGradient",
    "Proposal",
    "SelectState",
    "TEXTGRAD_BATCH",
    "StageReport",
    "SwitchState",
    "Step",
    "Transform",
    "ablation",
    "after_first_accept",
    "aggregate",
    "apply_if",
    "apply_updates",
    "backpropagate",
    "chain",
    "copro",
    "critique",
    "evaluate",
    "every_k",
    "full_update",
    "gepa",
    "identity",
    "masked",
    "mean_score",
    "memorization_guard",
    "momentum",
    "named_chain",
    "neighbor_sgd",
    "official_generator",
    "pareto_sgd",
    "one_at_a_time",
    "optoprime",
    "optoprime_update",
    "paired_lower_bound",
    "propose_rewrite",
    "require",
    "sample_batch",
    "sample_update",
    "select_error_samples",
    "stateless",
    "textgrad",
    "textgrad_gradients",
    "textgrad_update",
    "tgd",
    "validation_gate",
]

#: ``optim.backward`` (a transform) clashed with ``core.backward`` (a program): the transform is
#: `backpropagate`, and the old name resolves to it with a warning for one release.
__getattr__ = moved_names(__name__, {"backward": ("semgrad.core.optim.backpropagate", backpropagate)})
del moved_names
