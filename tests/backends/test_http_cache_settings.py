"""The cache keys everything a request body holds: the backends' own settings (Anthropic's max_tokens) included."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import LLMRequest, Message
from semgrad.effects import cached
from semgrad.effects._cache import cache_key

URL = "http://127.0.0.1:9"
SETTINGS = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["m", "n"]),
        "forward": st.sampled_from(["m", "n"]),
        "max_tokens": st.sampled_from([5, 4096]),
    }
)
REQUESTS = st.builds(
    lambda text, engine, options: LLMRequest((Message("user", text),), engine=engine, options=options),
    st.sampled_from(["hi", "ho"]),
    st.sampled_from(["forward", "backward"]),
    st.sampled_from([{}, {"max_tokens": 5}, {"temperature": 0.5}, {"stop": "\n"}]),
)


def build(kind, settings):
    """A backend of `kind` with `settings` (OpenAI-compatible backends take no max_tokens of their own)."""
    models = {"forward": settings["forward"]}
    if kind == "anthropic":
        return anthropic(settings["model"], base_url=URL, api_key="k", max_tokens=settings["max_tokens"], models=models)
    return openai_compatible(URL + "/v1", model=settings["model"], models=models)


@given(st.sampled_from(["anthropic", "openai"]), SETTINGS, SETTINGS, REQUESTS)
def test_requests_whose_bodies_differ_never_share_a_cache_key(kind, settings_a, settings_b, request):
    """For both backends: two backends that would send the same request with different bodies (another model,
    another default max_tokens...) give it different cache keys."""
    llm_a, llm_b = build(kind, settings_a), build(kind, settings_b)
    body_a = llm_a.body(request, llm_a.model_for(request))
    body_b = llm_b.body(request, llm_b.model_for(request))
    if body_a != body_b:
        assert cache_key(request, llm_a) != cache_key(request, llm_b)


@pytest.mark.parametrize("which", ["anthropic", "openai"])
async def test_a_reply_made_with_other_settings_is_not_served_from_the_cache(provider, tmp_path, which):
    """A reply cached by a backend built with max_tokens=5 (or another model) is not served to one built
    otherwise: the second backend asks the server, with its own setting."""
    if which == "anthropic":
        small = anthropic("m", base_url=provider.base_url, api_key="k", max_tokens=5)
        large = anthropic("m", base_url=provider.base_url, api_key="k", max_tokens=4096)
    else:
        small = openai_compatible(provider.base_url + "/v1", model="m")
        large = openai_compatible(provider.base_url + "/v1", model="m", models={"forward": "big"})
    request = LLMRequest((Message("user", "Write an essay."),))
    path = tmp_path / "cache.sqlite"
    await cached(small, path=path)(request)
    await cached(large, path=path)(request)
    await cached(large, path=path)(request)
    assert provider.count == 2
    sent = provider.requests[1][2]
    assert sent.get("max_tokens") == 4096 if which == "anthropic" else sent["model"] == "big"
