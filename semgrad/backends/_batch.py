"""The providers' batch APIs: OpenAI's Batch API and Anthropic's Message Batches, as codecs and a transport mixin.

OpenAI (``{base_url}`` is the API root, ``.../v1``):

* ``POST /files`` (multipart: ``purpose=batch`` and a JSONL file, one line per request:
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``), then
  ``POST /batches`` ``{"input_file_id", "endpoint": "/v1/chat/completions", "completion_window": "24h"}``;
* ``GET /batches/{id}``: ``status`` (validating, in_progress, finalizing, cancelling; ended:
  completed, expired, cancelled, failed) and ``output_file_id`` / ``error_file_id``;
* ``GET /files/{id}/content``: JSONL, ``{"custom_id", "response": {"status_code", "body"}, "error"}``;
* ``POST /batches/{id}/cancel``.

Anthropic:

* ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params"}]}``;
* ``GET /v1/messages/batches/{id}``: ``processing_status`` (in_progress, canceling; ended);
* ``GET /v1/messages/batches/{id}/results``: JSONL, ``{"custom_id", "result": {"type": succeeded |
  errored | canceled | expired, ...}}`` (read from that path under the base URL, never from a
  ``results_url`` the server names: the key goes only where ``base_url`` says);
* ``POST /v1/messages/batches/{id}/cancel``.

A line's reply is decoded by the provider's own codec, as a call's would be (its status
gives the kind, its body the text or the failure); a line the provider says expired or was
cancelled is ``batch_expired`` / ``batch_cancelled`` (retryable). What a server sends is
hostile input: ids must be short plain tokens (they go into paths), result files are read
up to `MAX_RESULTS` bytes and `MAX_LINE` per line, a line that is not one is skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from returns.result import Failure, Result

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse
from ..effects._batching import BatchStatus
from ._codec import Codec, HttpRequest, encode_json, malformed, status_error

__all__ = ["MAX_LINE", "MAX_RESULTS", "AnthropicBatches", "OpenAIBatches", "batch_ids_ok"]

Outcome = Result[LLMResponse, LLMError]

#: The most bytes of results read for one batch, and of one line of them.
MAX_RESULTS = 512 * 2**20
MAX_LINE = 16 * 2**20

_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
_OPENAI_ENDED = ("completed", "expired", "cancelled", "failed")
#: Anthropic's error types, as the HTTP status their call would have had.
_ANTHROPIC_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def batch_ids_ok(*ids: Any) -> bool:
    """Whether each of `ids` is a plain id a path may hold (letters, digits, ``_`` and ``-``; 200 at most).

    Examples:
        >>> batch_ids_ok("batch_abc-1"), batch_ids_ok("../files"), batch_ids_ok(None)
        (True, False, False)
    """
    return all(isinstance(i, str) and _ID.fullmatch(i) is not None for i in ids)


def _checked_id(value: Any, what: str) -> str:
    if not batch_ids_ok(value):
        raise malformed(f"the server named a {what} that is not a plain id ({str(value)[:80]!r})")
    return str(value)


def _json(content: bytes) -> Any:
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        raise malformed("the batch API's reply is not JSON") from None


def jsonl(content: bytes) -> list[Any]:
    """The JSON values of a JSONL body (a line that is not JSON, or too long, is skipped).

    Examples:
        >>> jsonl(b'{"a": 1}\\nnot json\\n\\n[2]\\n')
        [{'a': 1}, [2]]
    """
    if len(content) > MAX_RESULTS:
        raise malformed(f"the batch's results are larger than {MAX_RESULTS:,} bytes")
    found = []
    for raw in content.split(b"\n"):
        if not raw.strip() or len(raw) > MAX_LINE:
            continue
        try:
            found.append(json.loads(raw))
        except (ValueError, RecursionError):
            continue
    return found


def _decoded(codec: Codec, status: Any, body: Any, scrub: Callable[[str], str]) -> Outcome:
    """A line's reply decoded as a call's would be, by its status and body."""
    code = status if type(status) is int and 100 <= status <= 599 else 200
    try:
        raw = encode_json(body if isinstance(body, Mapping) else {})
    except LLMFailure as failure:
        return Failure(failure.error)
    return codec.decode(code, {}, raw, scrub=scrub)


class _BatchTransport:
    """What the batch mixins need of `semgrad.backends._http.HTTPBackend` (its codec, scrub, deadline and send)."""

    codec: Codec
    deadline: float
    provider: str

    if TYPE_CHECKING:  # HTTPBackend's, which the backends mix these into

        def scrub(self, text: str) -> str: ...

        async def _send(self, sent: HttpRequest) -> tuple[int, Mapping[str, str], bytes]: ...

    async def _exchange(self, method: str, path: str, body: bytes = b"", content_type: str = "") -> bytes:
        """One request of the batch API; the reply's body, or an LLMFailure (its status's kind, scrubbed)."""
        headers = {**self.codec.headers(), **({"Content-Type": content_type} if content_type else {})}
        try:
            with anyio.fail_after(self.deadline):
                status, got, content = await self._send(HttpRequest(method, path, headers, body))
        except TimeoutError:
            raise LLMFailure(LLMError("timeout", f"no reply from the batch API in {self.deadline:g} s", True)) from None
        if status >= 300:
            text = content[: 2**20].decode("utf-8", "replace")
            error = status_error(
                max(status, 400), got, text, key_env=self.codec.key_env, has_key=self.codec.keyed, scrub=self.scrub
            )
            raise LLMFailure(LLMError(error.kind, f"batch API {method} {path}: {error.message}", error.retryable))
        return content

    async def probe_batches(self) -> None:
        """Ask the batch API for its latest batch (one cheap GET): an LLMFailure when the server has none (a
        vLLM or Ollama server answers 404), before a run pays for anything it would then not evaluate."""
        await self._exchange("GET", self._list_path)

    _list_path = "/batches?limit=1"

    @property
    def batch_provider(self) -> str:
        """The provider the batches are kept under (a ledger's records name it)."""
        return self.provider


class OpenAIBatches(_BatchTransport):
    """OpenAI's Batch API for an `semgrad.backends.openai_compatible` backend (mixed into it)."""

    async def submit_batch(self, lines: Sequence[tuple[str, LLMRequest]]) -> str:
        """Upload the lines as a JSONL file and create a batch of it; the batch's id."""
        rows = [
            {
                "custom_id": line,
                "method": "POST",
                "url": "/v1" + self.codec.path,
                "body": self.codec.body(r, self.codec.model_for(r)),
            }
            for line, r in lines
        ]
        file = b"".join(encode_json(row) + b"\n" for row in rows)
        boundary = "semgrad-" + hashlib.sha256(file).hexdigest()[:32]
        form = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="semgrad-batch.jsonl"\r\n'
                "Content-Type: application/jsonl\r\n\r\n"
            ).encode()
            + file
            + f"\r\n--{boundary}--\r\n".encode()
        )
        uploaded = _json(await self._exchange("POST", "/files", form, f"multipart/form-data; boundary={boundary}"))
        file_id = _checked_id(uploaded.get("id") if isinstance(uploaded, dict) else None, "file")
        create = {"input_file_id": file_id, "endpoint": "/v1" + self.codec.path, "completion_window": "24h"}
        made = _json(await self._exchange("POST", "/batches", encode_json(create), "application/json"))
        return _checked_id(made.get("id") if isinstance(made, dict) else None, "batch")

    async def batch_status(self, batch_id: str) -> BatchStatus:
        """The batch's status, and its output and error files once it has ended."""
        data = _json(await self._exchange("GET", f"/batches/{_checked_id(batch_id, 'batch')}"))
        state = data.get("status") if isinstance(data, dict) else None
        if not isinstance(state, str):
            raise malformed("the batch API's status has no 'status'")
        files = {k: data[k] for k in ("output_file_id", "error_file_id") if batch_ids_ok(data.get(k))}
        return BatchStatus(batch_id, state, state in _OPENAI_ENDED, FrozenMap(files))

    async def batch_results(self, status: BatchStatus) -> dict[str, Outcome]:
        """Each line's outcome, from the batch's output and error files."""
        found: dict[str, Outcome] = {}
        for name in ("output_file_id", "error_file_id"):
            if name in status.where:
                content = await self._exchange("GET", f"/files/{_checked_id(status.where[name], 'file')}/content")
                for row in jsonl(content):
                    line, outcome = self._line(row)
                    if line is not None and line not in found:
                        found[line] = outcome
        return found

    def _line(self, row: Any) -> tuple[str | None, Outcome]:
        if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
            return None, Failure(LLMError("malformed", "not a result line"))
        response, error = row.get("response"), row.get("error")
        if isinstance(response, dict) and "status_code" in response:
            return row["custom_id"], _decoded(self.codec, response.get("status_code"), response.get("body"), self.scrub)
        code = str(error.get("code", "")) if isinstance(error, dict) else ""
        said = self.scrub(str(error.get("message", "")) if isinstance(error, dict) else "")[:300]
        if code in ("batch_expired", "batch_cancelled"):
            return row["custom_id"], Failure(LLMError(code, f"the line did not run ({code}: {said})", retryable=True))
        return row["custom_id"], Failure(LLMError("server", f"the line failed ({code or 'no code'}: {said})", True))

    async def cancel_batch(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch (its unfinished lines end cancelled)."""
        await self._exchange("POST", f"/batches/{_checked_id(batch_id, 'batch')}/cancel", b"{}", "application/json")


class AnthropicBatches(_BatchTransport):
    """Anthropic's Message Batches for an `semgrad.backends.anthropic` backend (mixed into it)."""

    _list_path = "/v1/messages/batches?limit=1"

    async def submit_batch(self, lines: Sequence[tuple[str, LLMRequest]]) -> str:
        """Create a batch of the lines; its id."""
        requests = [{"custom_id": line, "params": self.codec.body(r, self.codec.model_for(r))} for line, r in lines]
        made = _json(
            await self._exchange(
                "POST", "/v1/messages/batches", encode_json({"requests": requests}), "application/json"
            )
        )
        return _checked_id(made.get("id") if isinstance(made, dict) else None, "batch")

    async def batch_status(self, batch_id: str) -> BatchStatus:
        """The batch's processing status (ended, or not yet)."""
        data = _json(await self._exchange("GET", f"/v1/messages/batches/{_checked_id(batch_id, 'batch')}"))
        state = data.get("processing_status") if isinstance(data, dict) else None
        if not isinstance(state, str):
            raise malformed("the batch API's status has no 'processing_status'")
        return BatchStatus(batch_id, state, state == "ended")

    async def batch_results(self, status: BatchStatus) -> dict[str, Outcome]:
        """Each line's outcome, from the batch's results."""
        content = await self._exchange("GET", f"/v1/messages/batches/{_checked_id(status.id, 'batch')}/results")
        found: dict[str, Outcome] = {}
        for row in jsonl(content):
            if isinstance(row, dict) and isinstance(row.get("custom_id"), str) and row["custom_id"] not in found:
                found[row["custom_id"]] = self._line(row.get("result"))
        return found

    def _line(self, result: Any) -> Outcome:
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded":
            return _decoded(self.codec, 200, result.get("message"), self.scrub)
        if kind in ("canceled", "expired"):
            name = "batch_cancelled" if kind == "canceled" else "batch_expired"
            return Failure(LLMError(name, f"the line did not run ({kind})", retryable=True))
        if kind == "errored":
            outer = result.get("error")
            inner = outer.get("error") if isinstance(outer, dict) and isinstance(outer.get("error"), dict) else outer
            error_type = inner.get("type") if isinstance(inner, dict) else None
            status = _ANTHROPIC_STATUS.get(error_type, 500) if isinstance(error_type, str) else 500
            return _decoded(self.codec, status, {"error": inner if isinstance(inner, dict) else {}}, self.scrub)
        return Failure(LLMError("malformed", f"a result line of unknown type {str(kind)[:40]!r}", retryable=True))

    async def cancel_batch(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch (its unfinished lines end canceled)."""
        await self._exchange("POST", f"/v1/messages/batches/{_checked_id(batch_id, 'batch')}/cancel", b"", "")
