"""LLM calls as values: requests, replies, failures and sampling options (public namespace).

Examples:
    >>> from semgrad.core.calls import PURPOSES, sampling
    >>> "backward" in PURPOSES
    True
"""

from ._requests import (
    ENGINES,
    PURPOSES,
    LLMError,
    LLMFailure,
    LLMRequest,
    LLMResponse,
    Message,
    Reply,
    SampleId,
    as_reply,
    request_key,
)
from ._sampling import OFFICIAL_OPTIONS, engine_options, sampling

__all__ = [
    "ENGINES",
    "OFFICIAL_OPTIONS",
    "PURPOSES",
    "LLMError",
    "LLMFailure",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "Reply",
    "SampleId",
    "as_reply",
    "engine_options",
    "request_key",
    "sampling",
]
