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
MODELS = st.sampled_from(["m", "n"])
BACKENDS = st.one_of(
    st.builds(
        lambda model, forward, max_tokens: anthropic(
            model, base_url=URL, api_key="k", max_tokens=max_tokens, models={"forward": forward}
        ),
        MODELS,
        MODELS,
        st.sampled_from([5, 6, 4096]),
    ),
    st.builds(lambda model, forward: openai_compatible(URL + "/v1", model=model, models={"forward": forward}), MODELS, MODELS),
)
REQUESTS = st.builds(
    lambda text, engine, options: LLMRequest((Message("user", text),), engine=engine, options=options),
    st.sampled_from(["hi", "ho"]),
    st.sampled_from(["forward", "backward"]),
    st.sampled_from([{}, {"max_tokens": 5}, {"temperature": 0.5}, {"stop": "\n"}]),
)


@given(BACKENDS, REQUESTS, BACKENDS, REQUESTS)
def test_requests_whose_bodies_differ_never_share_a_cache_key(llm_a, request_a, llm_b, request_b):
    """For both backends: two (backend, request) pairs that would send different bodies have different cache keys."""
    body_a = (type(llm_a), llm_a.url(), llm_a.body(request_a, llm_a.model_for(request_a)))
    body_b = (type(llm_b), llm_b.url(), llm_b.body(request_b, llm_b.model_for(request_b)))
    if body_a != body_b:
        assert cache_key(request_a, llm_a) != cache_key(request_b, llm_b)


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
