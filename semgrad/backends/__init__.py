"""LLM backends behind one small protocol: real providers (over httpx) and fakes.

`fake` is always available. The HTTP backends import httpx only when used, so
``import semgrad`` stays light.
"""

from . import fake

__all__ = ["fake"]
