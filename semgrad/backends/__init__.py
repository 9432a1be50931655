"""LLM backends behind one small protocol: real providers (over httpx) and fakes.

`fake` is always available. The HTTP backends import httpx only when used, so
``import semgrad`` stays light:

* `openai_compatible`: OpenAI chat completions and compatible servers (vLLM,
  Ollama, llama.cpp server, LM Studio...);
* `anthropic`: the Anthropic Messages API.

Keys come from arguments or the environment (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``) and never appear in a repr, an error, a cache or a cassette.
"""

from . import fake, simulated
from ._anthropic import anthropic
from ._openai import openai_compatible

__all__ = ["anthropic", "fake", "openai_compatible", "simulated"]
