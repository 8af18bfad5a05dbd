"""Serving resources, prompts and completions in the tool process: the Envelope requests
31-51 answered from the registry. User functions run like tools: async ones as tasks, sync
ones in the call threads, so a slow read never blocks anything else."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

import orjson

from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.completions import limited
from protomcp_sdk.authoring.functions import AuthorFunction
from protomcp_sdk.authoring.messages import to_messages
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.resources import INTERNAL_ERROR, RESOURCE_NOT_FOUND, ResourceNotFound
from protomcp_sdk.runtime.context import Ask, Context
from protomcp_sdk.runtime.threads import CallThreads
from protomcp_sdk.runtime.writer import FrameWriter
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import framing

INVALID_PARAMS = -32602
_MAX_DETAIL = 1000

Finish = Callable[[object, BaseException | None], None]  # (what the function returned, or what it raised)


class FeatureRequests:
    """Answers the host's resource, prompt and completion requests (the MCP server features
    other than tools) from the registry."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        writer: FrameWriter,
        ask: Ask,
        call_threads: CallThreads,
    ) -> None:
        self.loop = loop
        self.send = writer.send
        self.send_payload = writer.send_payload
        self.ask = ask  # a request to the host (see Context)
        self.call_threads = call_threads
        self.requests: dict[str, asyncio.Task[object]] = {}  # async ones running, by request id: cancellable
        self.handlers: dict[str, Callable[[pb.Envelope], None]] = {
            "list_resources_request": self._list_resources,
            "list_resource_templates_request": self._list_templates,
            "list_prompts_request": self._list_prompts,
            "read_resource_request": self._read,
            "get_prompt_request": self._get_prompt,
            "completion_request": self._complete,
        }

    def fail(self, kind: str | None, request_id: str, message: str) -> None:
        """Answer a request whose handling failed: an error where the answer can hold one, an
        empty answer otherwise (resource and prompt lists, completions), so the host need not wait
        for its timeout. Not list_tools: an empty tool list would read as "no tools" (the host's
        timeout answers that one, as a failure)."""
        if kind == "read_resource_request":
            self._read_failed(request_id, INTERNAL_ERROR, message)
        elif kind == "get_prompt_request":
            self._prompt_failed(request_id, INTERNAL_ERROR, message)
        elif kind == "completion_request":
            reply = pb.CompletionResponse(values=[], total=0, has_more=False)
            self.send(pb.Envelope(request_id=request_id, completion_response=reply))
        elif kind == "list_resources_request":
            self.send(pb.Envelope(request_id=request_id, resource_list_response=pb.ResourceListResponse()))
        elif kind == "list_resource_templates_request":
            empty = pb.ResourceTemplateListResponse()
            self.send(pb.Envelope(request_id=request_id, resource_template_list_response=empty))
        elif kind == "list_prompts_request":
            self.send(pb.Envelope(request_id=request_id, prompt_list_response=pb.PromptListResponse()))

    # -- lists (whole, in one page: the host merges and pages) ----------------------------
    def _list_resources(self, envelope: pb.Envelope) -> None:
        resources = [spec.resource_definition() for spec in REGISTRY.resources.values()]
        reply = pb.ResourceListResponse(resources=resources)
        self.send(pb.Envelope(request_id=envelope.request_id, resource_list_response=reply))

    def _list_templates(self, envelope: pb.Envelope) -> None:
        templates = [spec.template_definition() for spec in REGISTRY.templates.values()]
        reply = pb.ResourceTemplateListResponse(templates=templates)
        self.send(pb.Envelope(request_id=envelope.request_id, resource_template_list_response=reply))

    def _list_prompts(self, envelope: pb.Envelope) -> None:
        reply = pb.PromptListResponse(prompts=[spec.definition() for spec in REGISTRY.prompts.values()])
        self.send(pb.Envelope(request_id=envelope.request_id, prompt_list_response=reply))

    # -- resources/read ---------------------------------------------------------------------
    def _read(self, envelope: pb.Envelope) -> None:
        request_id, uri = envelope.request_id, envelope.read_resource_request.uri
        spec = REGISTRY.resources.get(uri) or REGISTRY.template_for(uri)
        if spec is None:
            self._read_failed(request_id, RESOURCE_NOT_FOUND, f"Resource not found: {uri}")
            return

        def finish(value: object, error: BaseException | None) -> None:
            if error is None:
                try:
                    contents = orjson.dumps(spec.contents(value, uri))
                except (TypeError, orjson.JSONEncodeError) as exc:
                    error = exc
                else:
                    self.send_payload(
                        request_id,
                        contents,
                        framing.RAW_RESOURCE_JSON,
                        lambda inline: pb.Envelope(
                            request_id=request_id,
                            read_resource_response=pb.ReadResourceResponse(contents_json=inline),
                        ),
                    )
                    return
            if isinstance(error, (ResourceNotFound, FileNotFoundError)):
                self._read_failed(request_id, RESOURCE_NOT_FOUND, f"Resource not found: {uri} ({error})")
            elif isinstance(error, ArgumentError):
                self._read_failed(request_id, INVALID_PARAMS, str(error))
            else:
                self._read_failed(request_id, INTERNAL_ERROR, _describe(error, f"resource {spec.uri}"))

        request = envelope.read_resource_request
        self._run(
            f"resource {spec.uri}",
            request_id,
            spec.fn,
            spec.is_async,
            spec.context_param,
            lambda: spec.arguments(uri),
            finish,
            "read_resource_request",
            (request.client_capabilities_json, request.input_answers_json, request.auth_json),
        )

    def _read_failed(self, request_id: str, code: int, message: str) -> None:
        reply = pb.ReadResourceResponse(is_error=True, error=message, error_code=code)
        self.send(pb.Envelope(request_id=request_id, read_resource_response=reply))

    # -- prompts/get ------------------------------------------------------------------------
    def _get_prompt(self, envelope: pb.Envelope) -> None:
        request_id, request = envelope.request_id, envelope.get_prompt_request
        spec = REGISTRY.prompts.get(request.name)
        if spec is None:
            self._prompt_failed(request_id, INVALID_PARAMS, f"Unknown prompt: {request.name}")
            return

        def arguments() -> dict[str, object]:
            given = orjson.loads(request.arguments_json) if request.arguments_json else {}
            if not isinstance(given, dict):
                raise ArgumentError(f"Arguments for prompt '{spec.name}' must be an object")
            try:
                return spec.converter(given)
            except ArgumentError as exc:
                raise ArgumentError(
                    str(exc).replace(f"tool '{spec.name}'", f"prompt '{spec.name}'")
                ) from None

        def finish(value: object, error: BaseException | None) -> None:
            if error is None:
                try:
                    messages = orjson.dumps(to_messages(value, f"prompt '{spec.name}'"))
                except (TypeError, orjson.JSONEncodeError) as exc:
                    error = exc
                else:
                    reply = pb.GetPromptResponse(
                        description=spec.description, messages_json=messages.decode()
                    )
                    self.send(pb.Envelope(request_id=request_id, get_prompt_response=reply))
                    return
            if isinstance(error, ArgumentError):
                self._prompt_failed(request_id, INVALID_PARAMS, str(error))
            else:
                self._prompt_failed(request_id, INTERNAL_ERROR, _describe(error, f"prompt '{spec.name}'"))

        self._run(
            f"prompt {spec.name}",
            request_id,
            spec.fn,
            spec.is_async,
            spec.context_param,
            arguments,
            finish,
            "get_prompt_request",
            (request.client_capabilities_json, request.input_answers_json, request.auth_json),
        )

    def _prompt_failed(self, request_id: str, code: int, message: str) -> None:
        reply = pb.GetPromptResponse(is_error=True, error=message, error_code=code)
        self.send(pb.Envelope(request_id=request_id, get_prompt_response=reply))

    # -- completion/complete ----------------------------------------------------------------
    def _complete(self, envelope: pb.Envelope) -> None:
        request_id, request = envelope.request_id, envelope.completion_request
        spec = REGISTRY.completions.get((request.ref_type, request.ref_name, request.argument_name))

        def reply(values: list[str], total: int, has_more: bool) -> None:
            answer = pb.CompletionResponse(values=values, total=total, has_more=has_more)
            self.send(pb.Envelope(request_id=request_id, completion_response=answer))

        if spec is None:
            reply([], 0, False)  # nothing to suggest for this argument
            return
        context = orjson.loads(request.context_arguments_json) if request.context_arguments_json else {}
        what = f"completion for {request.argument_name!r} of {request.ref_name!r}"

        def finish(value: object, error: BaseException | None) -> None:
            if error is None:
                try:
                    reply(*limited(value, what))
                    return
                except TypeError as exc:
                    error = exc
            print(f"protomcp tool process: {_describe(error, what)}", file=sys.stderr, flush=True)
            reply([], 0, False)

        args = (request.argument_value, context) if spec.takes_context else (request.argument_value,)
        self._run(
            f"completion {spec.ref}",
            request_id,
            lambda: spec.fn(*args),
            spec.is_async,
            None,
            dict,
            finish,
            "completion_request",
        )

    # -- running user functions -------------------------------------------------------------
    def _run(
        self,
        key: str,  # what runs, for the call threads' fairness (like a tool name)
        request_id: str,
        fn: AuthorFunction,
        is_async: bool,
        context_param: str | None,
        arguments: Callable[[], dict[str, object]],
        finish: Finish,
        kind: str,  # the request's frame kind, to answer it if even `finish` fails
        client: tuple[str, str, str] = ("", "", ""),  # what the client declared; answers known;
        # the caller's verified claims (JSON)
    ) -> None:
        def settle(value: object, error: BaseException | None) -> None:
            """Exactly one answer: finish's, or an error answer when finish itself fails."""
            try:
                finish(value, error)
            except BaseException as exc:
                self.fail(kind, request_id, _describe(exc, key))

        def kwargs() -> dict[str, object]:
            values = arguments()
            if context_param:
                values[context_param] = Context(
                    request_id, "", self.send, "", self.ask, "", client[2], client[0], client[1]
                )
            return values

        if is_async:

            async def run_async() -> None:
                try:
                    value = await fn(**kwargs())
                except asyncio.CancelledError as exc:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise  # cancelled by the host (which has answered) or by the process ending
                    settle(None, exc)  # the function's own code raised it
                except BaseException as exc:  # SystemExit...: still one answer
                    settle(None, exc)
                else:
                    settle(value, None)

            task = self.loop.create_task(run_async())
            self.requests[request_id] = task
            task.add_done_callback(lambda _: self.requests.pop(request_id, None))
        else:

            def run_sync() -> None:
                try:
                    value = fn(**kwargs())
                except BaseException as exc:  # SystemExit, KeyboardInterrupt...: still one answer
                    settle(None, exc)
                else:
                    settle(value, None)

            self.call_threads.submit(key, run_sync)


def _describe(error: BaseException | None, what: str) -> str:
    detail = str(error)
    if len(detail) > _MAX_DETAIL:
        detail = detail[:_MAX_DETAIL] + "..."
    kind = type(error).__name__
    return f"Error in {what}: {kind}: {detail}" if detail else f"Error in {what}: {kind}"
