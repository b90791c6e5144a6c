"""A fake of llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, 0.3.36):
its reply and error bodies, and the decisions it makes, for tests that must not need the real
one (CI never installs llama-cpp-python; `bench/bench_local_model.py` drives the real server).

    with llama_cpp_server(LlamaCpp(chat_format="template", judgment={...})) as server:
        base_url = server.url + "/v1"

What it does as the real server does (seen on the real one; the recorded bodies are in
`tests/models/fixtures/llama_cpp/`, which `tests/models/test_llama_cpp_fake.py` holds this fake
to):

- `response_format` must be `text` or `json_object`: anything else (OpenAI's `json_schema`)
  fails request validation inside its error handler and comes back as HTTP 500 with pydantic's
  message ("Input should be 'text' or 'json_object'"), the same bytes every time;
- `json_object` with a `schema` is a grammar: the reply is an object of that shape;
- a named `tool_choice` is a grammar too: the reply is a call of that tool, id
  `call__0_<name>_cmpl-<uuid>`, whatever the prompt says, and with or without the tools in it;
- the chat format decides whether the tools reach the prompt: `template` (the model's own
  template, the default without `--chat_format`) leaves them out, and with `tool_choice: auto`
  the model never calls one; `chatml-function-calling` puts them in, calls the tool the last user
  message names, and answers `tool_choice: "required"` with a 500;
- an assistant message with `content: null` is a 500;
- `usage` has the three totals only, counted here as one token per 4 characters of the prompt
  the chat format builds (so a prompt with the tool list in it is longer);
- `model` echoes the requested name; no key is checked; `GET /v1/models` lists the model.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from parquet_agent.models.fakes.server import FakeServer, RawResponse, ReceivedRequest

TEMPLATE = "template"  # the model's own chat template: no tools in the prompt
FUNCTION_CALLING = "chatml-function-calling"

APP = "/usr/lib/python3/site-packages/llama_cpp/server/app.py"  # where the real one runs
_TRACE = (f'\n\n  File "{APP}", line 376, in create_chat_completion\n'
          "    POST /v1/chat/completions")


def schema_rejected(kind: str) -> str:
    """The server's 500 message for a `response_format` type other than text / json_object."""
    return ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
            "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': "
            f"{kind!r}, 'ctx': {{'expected': \"'text' or 'json_object'\"}}}}" + _TRACE)


def null_content_rejected(index: int, message: dict[str, Any]) -> str:
    """The server's 500 message for an assistant message with `content: null` (pydantic tries
    every message type of the union, and says why each does not fit)."""
    seen = repr(message)
    errors = [
        f"{{'type': 'literal_error', 'loc': ('body', 'messages', {index}, "
        f"'ChatCompletionRequest{kind}Message', 'role'), 'msg': \"Input should be '{role}'\", "
        f"'input': 'assistant', 'ctx': {{'expected': \"'{role}'\"}}}}"
        for kind, role in (("System", "system"), ("User", "user"))]
    errors.append(f"{{'type': 'string_type', 'loc': ('body', 'messages', {index}, "
                  "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be "
                  "a valid string', 'input': None}")
    for kind, role, missing in (("Tool", "tool", "tool_call_id"), ("Function", "function", "name")):
        errors.append(f"{{'type': 'literal_error', 'loc': ('body', 'messages', {index}, "
                      f"'ChatCompletionRequest{kind}Message', 'role'), 'msg': \"Input should be "
                      f"'{role}'\", 'input': 'assistant', 'ctx': {{'expected': \"'{role}'\"}}}}")
        errors.append(f"{{'type': 'missing', 'loc': ('body', 'messages', {index}, "
                      f"'ChatCompletionRequest{kind}Message', '{missing}'), 'msg': 'Field "
                      f"required', 'input': {seen}}}")
    return f"{len(errors)} validation errors:\n  " + "\n  ".join(errors) + _TRACE


@dataclass
class LlamaCpp:
    """How the fake server behaves. `judgment`: the object a grammar (json_object schema, or a
    forced `record_judgment` call) produces; `text`: what the model says otherwise (a judge
    asked in plain text gets `text_judgment` when set); `arguments`: a named tool's arguments
    (default: `{"n": 7}` for `echo_number`)."""

    chat_format: str = TEMPLATE
    judgment: dict[str, Any] = field(default_factory=lambda: {
        "rationale": "The answer matches the reference.", "verdict": "correct",
        "correctness": 100, "citation_support": 50})
    text: str = "ok"
    text_judgment: str | None = None
    arguments: dict[str, dict[str, Any]] = field(default_factory=lambda: {"echo_number": {"n": 7}})
    alias: str | None = None  # --model_alias; default: the path of the model file

    def answer(self, req: ReceivedRequest) -> RawResponse:
        body = req.json or {}
        problem = self._rejects(body)
        if problem is not None:
            return _error(problem)
        prompt = _prompt_chars(body, tools_shown=self.chat_format == FUNCTION_CALLING)
        choice = body.get("tool_choice")
        tools = [t["function"]["name"] for t in body.get("tools") or ()]
        fmt = body.get("response_format") or {}
        spaced = self.chat_format == FUNCTION_CALLING  # its grammar writes `{ "n": 7 }`
        if isinstance(choice, dict):  # a grammar for the named tool's arguments
            name = choice["function"]["name"]
            return _call(body, name, self._arguments(name), prompt, spaced=spaced)
        if self.chat_format == FUNCTION_CALLING and tools and choice != "none":
            asked = _last_user(body)
            named = next((t for t in tools if t in asked), None)
            if named is not None:
                return _call(body, named, self._arguments(named), prompt, spaced=True,
                             chosen=True)
        if fmt.get("type") == "json_object":
            return _text(body, json.dumps(self.judgment), prompt)
        if self.text_judgment is not None and "JUDGE_INPUT_JSON" in _last_user(body):
            return _text(body, self.text_judgment, prompt)
        return _text(body, self.text, prompt)

    def _rejects(self, body: dict[str, Any]) -> str | None:
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") not in ("text", "json_object"):
            return schema_rejected(str(fmt.get("type")))
        for i, m in enumerate(body.get("messages") or ()):
            if m.get("role") == "assistant" and "content" in m and m["content"] is None:
                return null_content_rejected(i, m)
        if self.chat_format == FUNCTION_CALLING and body.get("tool_choice") == "required":
            return ""  # the real server's message is empty
        return None

    def _arguments(self, name: str) -> dict[str, Any]:
        if name == "record_judgment":
            return self.judgment
        return self.arguments.get(name, {})


def llama_cpp_server(behaviour: LlamaCpp | None = None) -> FakeServer:
    """A fake llama-cpp-python server; pass `server.url + "/v1"` as the base_url."""
    behaviour = behaviour or LlamaCpp()
    return FakeServer(LlamaCppWire(behaviour), behaviour.answer)


class LlamaCppWire:
    """The wire format the fake server speaks (the OpenAI routes, llama-cpp-python's bodies)."""

    name = "llama_cpp"

    def __init__(self, behaviour: LlamaCpp) -> None:
        self.behaviour = behaviour

    def is_model_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0].endswith("/chat/completions")

    def render(self, reply: Any, request: ReceivedRequest) -> dict:
        raise NotImplementedError("the llama.cpp fake answers from its behaviour, not a script")

    def render_empty(self, request: ReceivedRequest) -> dict:
        raise NotImplementedError("the llama.cpp fake answers from its behaviour, not a script")

    def render_error(self, status: int, message: str) -> dict:
        return json.loads(_error(message).body)

    def render_get(self, request: ReceivedRequest) -> tuple[int, dict]:
        if request.path.split("?")[0].endswith("/models"):
            alias = self.behaviour.alias or "/models/SmolLM2-135M-Instruct.Q4_1.gguf"
            return 200, {"object": "list", "data": [
                {"id": alias, "object": "model", "owned_by": "me", "permissions": []}]}
        return 404, {"detail": "Not Found"}

    def api_key(self, request: ReceivedRequest) -> str:
        return request.headers.get("authorization", "").removeprefix("Bearer ").strip()


def _json(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()  # FastAPI's JSONResponse


def _error(message: str) -> RawResponse:
    return RawResponse(500, _json({"error": {"message": message, "type": "internal_server_error",
                                             "param": None, "code": None}}))


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages") or () if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def _prompt_chars(body: dict[str, Any], *, tools_shown: bool) -> int:
    """The length of the prompt the chat format builds: every message, and the tool list only
    where the format shows it (chatml-function-calling drops tool results: not counted)."""
    chars = sum(len(str(m.get("content") or "")) + 20 for m in body.get("messages") or ()
                if not (tools_shown and m.get("role") == "tool"))
    if tools_shown and body.get("tools"):
        chars += len(json.dumps(body["tools"])) + 200
    return chars


def _usage(prompt_chars: int, completion: str) -> dict[str, int]:
    prompt, out = max(1, prompt_chars // 4), max(1, len(completion) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}


def _envelope(body: dict[str, Any], message: dict[str, Any], finish: str,
              usage: dict[str, int], uid: str) -> RawResponse:
    return RawResponse(200, _json({
        "id": f"chatcmpl-{uid}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage}))


def _text(body: dict[str, Any], text: str, prompt_chars: int) -> RawResponse:
    return _envelope(body, {"content": text, "role": "assistant"}, "stop",
                     _usage(prompt_chars, text), str(uuid.uuid4()))


def _call(body: dict[str, Any], name: str, arguments: dict[str, Any], prompt_chars: int, *,
          spaced: bool, chosen: bool = False) -> RawResponse:
    """A tool call as the server renders it: the arguments as its grammar writes them, the id
    from the completion's (`chosen`: the model picked the tool, a second completion wrote the
    arguments, so the ids differ and the legacy `function_call` name keeps the `:` the prompt
    format ends a name with)."""
    text = json.dumps(arguments, separators=(", ", ": "))
    text = "{ " + text[1:-1] + " }" if spaced else json.dumps(arguments, separators=(",", ":")) + " "
    uid = str(uuid.uuid4())
    call_uid = str(uuid.uuid4()) if chosen else uid
    message = {"content": None,
               "tool_calls": [{"id": f"call__0_{name}_cmpl-{call_uid}", "type": "function",
                               "function": {"name": name, "arguments": text}}],
               "role": "assistant",
               "function_call": {"name": name + (":" if chosen else ""), "arguments": text}}
    return _envelope(body, message, "tool_calls", _usage(prompt_chars, text), uid)
