"""A GitHub stand-in on a loopback port (starlette under uvicorn, in a thread): the OAuth web
application flow of an OAuth app as GitHub documents it, laid out as a GitHub Enterprise Server
(web at `{url}/login/oauth/...`, REST API at `{url}/api/v3`), so protomcp reaches it with
`--oauth-provider github:{url}`. What it answers, and why, is in tests/oauth/test_github.py."""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.support.ports import free_port

CODE_TTL = 600.0  # "The temporary code will expire after 10 minutes."
ERRORS = {  # GitHub's error_description for the token-request errors a test can provoke
    "bad_verification_code": "The code passed is incorrect or expired.",
    "incorrect_client_credentials": "The client_id and/or client_secret passed are incorrect.",
    "redirect_uri_mismatch": "The redirect_uri MUST match the registered callback URL for this application.",
}


@dataclass(frozen=True)
class GitHubUser:
    id: int  # stable for the account's life
    login: str  # the user may rename it
    name: str = ""


@dataclass
class GitHub:
    """One OAuth app (client_id, client_secret, callback) registered here; `user` is whoever is
    signed in to the stand-in's browser session (the authorization page is not scripted: it
    approves at once, as GitHub does for an app the user already authorized)."""

    client_id: str
    client_secret: str
    callback: str
    user: GitHubUser = field(default_factory=lambda: GitHubUser(583231, "octocat", "The Octocat"))
    refuse_next: str | None = None  # an ERRORS key: the next token request gets it (HTTP 200)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[str, GitHubUser] = field(default_factory=dict)
    exchanges: list[dict[str, str]] = field(default_factory=list)  # token requests seen

    def __post_init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        app = Starlette(
            routes=[
                Route("/login/oauth/authorize", self.authorize),
                Route("/login/oauth/access_token", self.access_token, methods=["POST"]),
                Route("/api/v3/user", self.api_user),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> GitHub:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:  # (uvicorn has no event to wait on)
            assert self.thread.is_alive() and time.monotonic() < deadline, "the GitHub stand-in did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    # GET /login/oauth/authorize: back to the callback with a code and the state
    async def authorize(self, request: Request) -> Response:
        query = request.query_params
        if query.get("client_id") != self.client_id:
            return PlainTextResponse("Not Found", 404)  # GitHub shows a 404 page for an unknown app
        redirect_uri = query.get("redirect_uri", self.callback)
        if redirect_uri != self.callback:
            # (authorization-request errors go back to the registered callback)
            back = {"error": "redirect_uri_mismatch", "state": query.get("state", "")}
            return RedirectResponse(f"{self.callback}?{urlencode(back)}", 302)
        code = secrets.token_hex(10)  # GitHub's codes are 20 hex digits
        self.codes[code] = {
            "user": self.user,
            "redirect_uri": redirect_uri,
            "challenge": query.get("code_challenge"),
            "expires": time.monotonic() + CODE_TTL,
        }
        back = {"code": code, "state": query.get("state", "")}
        return RedirectResponse(f"{redirect_uri}?{urlencode(back)}", 302)

    # POST /login/oauth/access_token: the code exchange
    async def access_token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        self.exchanges.append(form)
        error = self._refusal(form)
        if error is None:
            token = "gho_" + secrets.token_urlsafe(27)
            self.tokens[token] = self.codes.pop(form["code"])["user"]
            answer = {"access_token": token, "scope": "read:user,user:email", "token_type": "bearer"}
        else:
            answer = {"error": error, "error_description": ERRORS[error], "error_uri": "/apps/..."}
        # the response's format follows the Accept header: urlencoded by default; errors too are HTTP 200
        if "application/json" in request.headers.get("accept", ""):
            return JSONResponse(answer)
        return Response(urlencode(answer), media_type="application/x-www-form-urlencoded")

    def _refusal(self, form: dict[str, str]) -> str | None:
        if self.refuse_next is not None:
            error, self.refuse_next = self.refuse_next, None
            self.codes.pop(form.get("code", ""), None)
            return error
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return "incorrect_client_credentials"
        grant = self.codes.get(form.get("code", ""))
        if grant is None or grant["expires"] < time.monotonic():
            return "bad_verification_code"
        if form.get("redirect_uri", grant["redirect_uri"]) != grant["redirect_uri"]:
            return "redirect_uri_mismatch"
        if grant["challenge"] is not None and pkce_s256(form.get("code_verifier", "")) != grant["challenge"]:
            return "bad_verification_code"  # (the docs name no error of their own for a wrong verifier)
        return None

    # GET /api/v3/user: the signed-in user
    async def api_user(self, request: Request) -> Response:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        user = self.tokens.get(token) if scheme.lower() in ("bearer", "token") else None
        if user is None:
            return JSONResponse({"message": "Bad credentials", "status": "401"}, 401)
        return JSONResponse({"login": user.login, "id": user.id, "name": user.name or None, "type": "User"})


def pkce_s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
