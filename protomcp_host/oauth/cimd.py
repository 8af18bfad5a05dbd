"""Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client_id
that is an https URL names the JSON document describing the client, which protomcp fetches.

The fetch is an SSRF surface (any client makes this server request a URL of its choosing), so:
https only; every address the name resolves to must be a public one, checked after resolution
and on every redirect (followed here, a few at most), and the connection goes to the address
checked (no second lookup a rebinding DNS could answer differently); bounded time and size;
no proxy from the environment. --oauth-cimd-allow HOST lifts the address rule for HOST only."""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx2
import orjson

from protomcp_host.oauth.records import CIMD_MAX_TTL, CIMD_MIN_TTL
from protomcp_host.oauth.redirects import redirect_problem

FETCH_TIMEOUT = 5.0  # seconds for the whole fetch, redirects included
MAX_BYTES = 5 * 1024  # the draft's suggested limit for a document
MAX_REDIRECTS = 3
DEFAULT_TTL = 300.0  # seconds a document is cached without a Cache-Control max-age
_MAX_AGE = re.compile(r"max-age=(\d+)")


class CimdError(Exception):
    """The client_id's document cannot be used; the message says why (shown to the client)."""


@dataclass(frozen=True)
class Document:
    metadata: dict[str, Any]
    ttl: float  # seconds it may be cached


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a client_id document URL (the draft's §3 rules); None when it can."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018
    except ValueError:
        return "it is not a URL"
    if parts.scheme != "https":
        return "it is not an https URL"
    if not parts.hostname or parts.username is not None or parts.password is not None:
        return "it has no host, or has user information"
    if parts.path in ("", "/") or parts.fragment or "#" in url:
        return "it has no path, or has a fragment"
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        return "its path has a '.' or '..' segment"
    return None


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def _address_for(host: str, port: int, allowed: frozenset[str]) -> str:
    """The address to connect to for `host`: each one it resolves to must be public unless
    `host` is allowed."""
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise CimdError(f"cannot resolve {host}: {exc}") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise CimdError(f"{host} resolves to no address")
    if host.lower() not in allowed:
        refused = [a for a in addresses if not _public(a)]
        if refused:
            raise CimdError(
                f"{host} resolves to {refused[0]}, a loopback, private or link-local address "
                "(refused; the server's operator may allow it with --oauth-cimd-allow)"
            )
    return addresses[0]


def _pinned_url(url: str, address: str) -> str:
    parts = urlsplit(url)
    netloc = f"[{address}]" if ":" in address else address
    if parts.port is not None:
        netloc += f":{parts.port}"
    return parts._replace(netloc=netloc).geturl()


async def fetch(url: str, allowed: frozenset[str]) -> Document:
    """The metadata document at `url` (a client_id), checked. Raises CimdError."""
    problem = url_problem(url)
    if problem is not None:
        raise CimdError(f"the client_id {url!r} cannot name a metadata document: {problem}")
    try:
        with anyio.fail_after(FETCH_TIMEOUT):
            body, ttl = await _get(url, allowed)
    except TimeoutError:
        raise CimdError(f"{url} did not answer within {FETCH_TIMEOUT:g}s") from None
    try:
        metadata = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise CimdError(f"{url} is not a JSON document") from None
    return Document(checked(metadata, url), ttl)


async def _get(url: str, allowed: frozenset[str]) -> tuple[bytes, float]:
    context = ssl.create_default_context()  # (the system's CAs; SSL_CERT_FILE if set)
    async with httpx2.AsyncClient(verify=context, trust_env=False, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            parts = urlsplit(url)
            if parts.scheme != "https" or parts.username is not None or parts.password is not None:
                raise CimdError(
                    f"a redirect to {url!r} was refused: not an https URL without user information"
                )
            host = parts.hostname or ""
            address = await _address_for(host, parts.port or 443, allowed)
            request = client.build_request(
                "GET",
                _pinned_url(url, address),
                headers={"host": parts.netloc, "accept": "application/json"},
                extensions={"sni_hostname": host},
            )
            try:
                response = await client.send(request, stream=True)
            except httpx2.HTTPError as exc:
                raise CimdError(f"cannot fetch {url}: {exc}") from None
            try:
                if response.status_code in (301, 302, 303, 307, 308):
                    url = urljoin(url, response.headers.get("location", ""))
                    continue
                if response.status_code != 200:
                    raise CimdError(f"{url} answered HTTP {response.status_code}")
                return await _bounded_body(response, url), _ttl(response.headers.get("cache-control", ""))
            finally:
                await response.aclose()
    raise CimdError(f"{url}: more than {MAX_REDIRECTS} redirects")


async def _bounded_body(response: httpx2.Response, url: str) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BYTES:
        raise CimdError(f"{url} is larger than {MAX_BYTES} bytes")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_BYTES:
            raise CimdError(f"{url} is larger than {MAX_BYTES} bytes")
    return bytes(body)


def _ttl(cache_control: str) -> float:
    if "no-store" in cache_control or "no-cache" in cache_control:
        return CIMD_MIN_TTL
    match = _MAX_AGE.search(cache_control)
    seconds = float(match.group(1)) if match else DEFAULT_TTL
    return min(max(seconds, CIMD_MIN_TTL), CIMD_MAX_TTL)


def checked(metadata: Any, url: str) -> dict[str, Any]:
    """The document's metadata once it passes the draft's rules. Raises CimdError."""
    if not isinstance(metadata, dict):
        raise CimdError(f"{url} is not a JSON object")
    if metadata.get("client_id") != url:
        raise CimdError(f"the document's client_id is not its URL {url}")
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise CimdError(f"{url}: redirect_uris must be a non-empty list of URLs")
    for uri in uris:
        problem = redirect_problem(uri)
        if problem is not None:
            raise CimdError(f"{url}: redirect URI {problem}")
    if "client_secret" in metadata or "client_secret_expires_at" in metadata:
        raise CimdError(f"{url}: a metadata document must not hold a client secret")
    method = metadata.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise CimdError(f"{url}: token_endpoint_auth_method {method!r} is not supported here (use none)")
    name = metadata.get("client_name")
    if name is not None and not isinstance(name, str):
        raise CimdError(f"{url}: client_name must be a string")
    return metadata
