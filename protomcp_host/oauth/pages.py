"""The two pages a person sees at protomcp: the consent page (which client, where it will send
them, through which provider they will sign in) and an error page for a request that cannot be
sent back to a client. Plain HTML; every value escaped; never framed (clickjacking)."""

from __future__ import annotations

from html import escape

PAGE_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'; default-src 'none'; style-src 'unsafe-inline'"),
    # same-origin, not no-referrer: under no-referrer a browser sends the consent form's POST with
    # `Origin: null`, which the guard refuses (403) as it must; other origins still learn nothing.
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.5}"
    "code{word-break:break-all;background:#f3f3f3;padding:0 .2rem}button{font-size:1rem;padding:.4rem 1.2rem;"
    "margin-right:.6rem}"
)


def _page(title: str, body: str) -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width"><style>{_STYLE}</style></head>'
        f"<body>{body}</body></html>"
    ).encode()


def consent(
    *,
    server: str,
    client_name: str,
    client_id: str,
    redirect_uri: str,
    provider: str,
    scope: str,
    pending: str,
) -> bytes:
    scopes = f"<p>Access asked for: <code>{escape(scope)}</code></p>" if scope else ""
    return _page(
        f"Allow {client_name}?",
        f"<h1>Allow {escape(client_name)} to use {escape(server)}?</h1>"
        f"<p>The client <code>{escape(client_id)}</code> asks to call the tools of "
        f"<code>{escape(server)}</code> as you.</p>"
        f"<p>After you sign in at {escape(provider)}, you will be sent to "
        f"<code>{escape(redirect_uri)}</code>. Allow it only if you started this sign-in and trust "
        f"that address.</p>{scopes}"
        '<form method="post" action="/oauth/authorize">'
        f'<input type="hidden" name="pending" value="{escape(pending)}">'
        '<button type="submit" name="decision" value="allow">Allow</button>'
        '<button type="submit" name="decision" value="deny">Deny</button></form>',
    )


def error(message: str) -> bytes:
    return _page(
        "Sign-in failed",
        f"<h1>This sign-in cannot go on</h1><p>{escape(message)}</p><p>Start again from your MCP client.</p>",
    )
