"""A remote MCP server built on the official Python SDK (`MCPServer`, mcp 2.x),
served over streamable HTTP at `/mcp`, protected with the SDK's own OAuth
support and its own authorization server on the same origin: the SDK's routes
serve the authorization server metadata (RFC 8414), dynamic client
registration (RFC 7591), `/authorize`, `/token`, `/revoke` and the protected
resource metadata (RFC 9728), and answer an unauthenticated `/mcp` with 401
and `WWW-Authenticate: Bearer ... resource_metadata="..."`. Only the
in-memory provider is this fixture's own: it approves every authorization at
once (standing in for a person clicking "Allow") and rotates refresh tokens,
refusing one that was rotated away or revoked.

Driven by the host's OAuth tests:

    python3 oauth_server.py --port-file FILE [--access-lifetime SECS]

Binds 127.0.0.1 on a free port and writes it to FILE once listening. Access
tokens live --access-lifetime seconds (default 3600; 2 forces refreshes);
--no-refresh issues access tokens alone (no refresh token); --cimd makes the
authorization server take client ID metadata documents (an https client_id is
fetched, path and all, from the origin POSTed to `/cimd-origin`: the test's host).
Tools: `whoami` names the client the token was issued to; `echo_authorization`
answers with the Authorization header it received (the host must scrub it).
Without auth it also answers `GET /stats` (registrations, authorizations, code
exchanges, refreshes, the `resource` each token request carried, refused
refreshes, access tokens issued and every token itself, how each token request
authenticated its client (`token_auth`), 401s answered on
`/mcp`, tool calls by name)
`POST /revoke-access` (revokes every access token, as a server that ends them
early does) and `POST /revoke-all` (revokes every access and refresh token).
"""

import argparse
import asyncio
import os
import secrets
import socket
import sys
import time
from urllib.parse import parse_qs

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--port-file", required=True)
ARGS.add_argument("--access-lifetime", type=int, default=3600, help="seconds an access token lives")
ARGS.add_argument("--no-refresh", action="store_true", help="issue access tokens without refresh tokens")
ARGS.add_argument(
    "--no-prm", action="store_true",
    help="publish no protected resource metadata and name none in the 401 (a 2025-03-26 server)",
)
ARGS.add_argument(
    "--call-scope",
    help="a scope tools/call needs: a token without it gets 403 insufficient_scope naming it (step-up)",
)
ARGS.add_argument(
    "--cimd", action="store_true",
    help="take client ID metadata documents: an https client_id is fetched from the origin POSTed to /cimd-origin",
)
OPTS = ARGS.parse_args()

STATS = {
    "registrations": [], "authorizations": [], "code_exchanges": 0, "exchange_resources": [],
    "refreshes": 0, "refresh_resources": [], "refused_refreshes": 0, "access_tokens_issued": 0,
    "unauthorized": 0, "calls": {}, "issued": [], "token_auth": [], "cimd_fetches": [],
    "insufficient_scope": 0,
}
CIMD_ORIGIN = {"origin": None}
PROVIDER = {}  # the provider, for the step-up check  # where an https client_id's document is really fetched (the test's host)


class Provider:
    """An `OAuthAuthorizationServerProvider` that keeps everything in memory."""

    def __init__(self):
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.partner: dict[str, str] = {}  # access token <-> the refresh token issued with it
        self.dead: set[str] = set()  # refresh tokens rotated away or revoked

    async def get_client(self, client_id: str):
        if OPTS.cimd and client_id.startswith("https://") and client_id not in self.clients:
            await self.fetch_metadata_document(client_id)
        return self.clients.get(client_id)

    async def fetch_metadata_document(self, client_id: str):
        """A client ID metadata document: fetched (from the test's host, standing in for
        the URL's own origin), its client_id must be its URL; a public client."""
        import json
        import urllib.error
        import urllib.request
        from urllib.parse import urlsplit

        url = f"{CIMD_ORIGIN['origin']}{urlsplit(client_id).path}"

        def fetch():
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    return answer.status, json.loads(answer.read())
            except urllib.error.HTTPError as e:
                return e.code, {}

        status, document = await asyncio.to_thread(fetch)
        STATS["cimd_fetches"].append({"client_id": client_id, "status": status, "document": document})
        if document.get("client_id") != client_id:
            return
        self.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            redirect_uris=document.get("redirect_uris"),
            grant_types=document.get("grant_types") or ["authorization_code"],
            response_types=document.get("response_types") or ["code"],
            token_endpoint_auth_method=document.get("token_endpoint_auth_method", "none"),
            client_name=document.get("client_name"),
        )

    async def register_client(self, client: OAuthClientInformationFull):
        self.clients[client.client_id] = client
        STATS["registrations"].append(
            {
                "client_id": client.client_id,
                "redirect_uris": [str(u) for u in client.redirect_uris or []],
                "token_endpoint_auth_method": client.token_endpoint_auth_method,
                "grant_types": client.grant_types,
            }
        )

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        STATS["authorizations"].append(
            {
                "client_id": client.client_id,
                "redirect_uri": str(params.redirect_uri),
                "scopes": params.scopes,
                "resource": params.resource,
                # The SDK requires a challenge and accepts only S256 (the default when no method is sent).
                "code_challenge": bool(params.code_challenge),
                "state_len": len(params.state or ""),
            }
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str):
        found = self.codes.get(code)
        return found if found and found.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode):
        del self.codes[code.code]
        STATS["code_exchanges"] += 1
        return self.issue(client.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, token: str):
        if token in self.dead:
            STATS["refused_refreshes"] += 1
            return None
        return self.refresh.get(token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, token: RefreshToken, scopes: list[str]):
        self.kill_refresh(token.token)
        STATS["refreshes"] += 1
        return self.issue(client.client_id, scopes, token.resource)

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        return found if found and found.expires_at > time.time() else None

    async def revoke_token(self, token: AccessToken | RefreshToken):
        for t in (token.token, self.partner.get(token.token)):
            self.access.pop(t, None)
            if t in self.refresh:
                self.kill_refresh(t)

    def kill_refresh(self, token: str):
        del self.refresh[token]
        self.dead.add(token)

    def issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        if OPTS.no_refresh:
            refresh = None
        expires_at = int(time.time()) + OPTS.access_lifetime
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires_at, resource=resource
        )
        if refresh:
            self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
            self.partner[access], self.partner[refresh] = refresh, access
        STATS["access_tokens_issued"] += 1
        # So a test can look for every token issued where none may be.
        STATS["issued"] += [t for t in (access, refresh) if t]
        scope = " ".join(scopes) or None
        return OAuthToken(access_token=access, expires_in=OPTS.access_lifetime, scope=scope, refresh_token=refresh)


def counted(name):
    STATS["calls"][name] = STATS["calls"].get(name, 0) + 1


def build(port: int) -> MCPServer:
    provider = Provider()
    PROVIDER["provider"] = provider
    origin = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "oauth-fixture",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=origin,
            resource_server_url=f"{origin}/mcp",
            client_registration_options=ClientRegistrationOptions(
                enabled=True,
                # A step-up scope is one a registered client may ask for.
                default_scopes=[OPTS.call_scope] if OPTS.call_scope else None,
            ),
            revocation_options=RevocationOptions(enabled=True),
            # A token issued without `resource` still works, so a test sees the omission in /stats.
            validate_token_resource=False,
        ),
    )

    @server.tool(description="Says which client the access token was issued to.")
    def whoami() -> str:
        counted("whoami")
        token = get_access_token()
        return f"signed in as client {token.client_id if token else 'nobody'}"

    @server.tool(description="Answers with the Authorization header it received.")
    def echo_authorization(ctx: Context) -> str:
        counted("echo_authorization")
        return (ctx.headers or {}).get("authorization", "nothing")

    @server.custom_route("/stats", methods=["GET"])
    async def stats(request: Request):
        return JSONResponse(STATS)

    @server.custom_route("/cimd-origin", methods=["POST"])
    async def cimd_origin(request: Request):
        CIMD_ORIGIN["origin"] = (await request.body()).decode().strip()
        return JSONResponse({"origin": CIMD_ORIGIN["origin"]})

    @server.custom_route("/revoke-access", methods=["POST"])
    async def revoke_access(request: Request):
        revoked = len(provider.access)
        provider.access.clear()
        return JSONResponse({"revoked": revoked})

    @server.custom_route("/revoke-all", methods=["POST"])
    async def revoke_all(request: Request):
        revoked = sum(t.expires_at > time.time() for t in provider.access.values()) + len(provider.refresh)
        provider.access.clear()
        for token in list(provider.refresh):
            provider.kill_refresh(token)
        return JSONResponse({"revoked": revoked})

    return server


def tapped(app):
    """Wraps the app to count the 401s `/mcp` answered and to record the
    `resource` each successful token request carried (the SDK parses it but
    does not hand it to the provider)."""

    async def wrapper(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        path, body = scope["path"], bytearray()

        async def tap_receive():
            message = await receive()
            body.extend(message.get("body", b""))
            return message

        async def tap_send(message):
            if OPTS.no_prm and message["type"] == "http.response.start" and message["status"] == 401:
                message = dict(message)
                message["headers"] = [
                    (k, b'Bearer error="invalid_token"' if k.lower() == b"www-authenticate" else v)
                    for k, v in message["headers"]
                ]
            if message["type"] == "http.response.start":
                if path == "/token":
                    # How the client authenticated: HTTP Basic, a secret in the form, or neither.
                    headers = dict(scope.get("headers") or [])
                    form = parse_qs(body.decode(errors="replace"))
                    basic = headers.get(b"authorization", b"").lower().startswith(b"basic ")
                    STATS["token_auth"].append(
                        "client_secret_basic" if basic else "client_secret_post" if "client_secret" in form else "none"
                    )
                if message["status"] == 401 and path.startswith("/mcp"):
                    STATS["unauthorized"] += 1
                if message["status"] == 200 and path == "/token":
                    form = parse_qs(body.decode(errors="replace"))
                    grant = form.get("grant_type", [""])[0]
                    key = {"authorization_code": "exchange_resources", "refresh_token": "refresh_resources"}.get(grant)
                    if key:
                        STATS[key].append(form.get("resource", [None])[0])
            await send(message)

        if OPTS.no_prm and path.startswith("/.well-known/oauth-protected-resource"):
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"not found"})
            return
        if OPTS.call_scope and path.startswith("/mcp") and scope["method"] == "POST":
            return await step_up(app, scope, receive, send)
        if OPTS.cimd and path == "/.well-known/oauth-authorization-server":
            return await with_cimd(app, scope, receive, send)
        await app(scope, tap_receive if path == "/token" else receive, tap_send)

    return wrapper


async def step_up(app, scope, receive, send):
    """A `tools/call` whose token lacks --call-scope: 403 insufficient_scope naming the scopes
    the token holds and that one (RFC 6750 §3.1), as a server asking for step-up does."""
    import json

    body, more = bytearray(), True
    while more:
        message = await receive()
        body.extend(message.get("body", b""))
        more = message.get("more_body", False)
    replayed = {"done": False}

    async def replay():
        if not replayed["done"]:
            replayed["done"] = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}
        return await receive()

    try:
        rpc = json.loads(body)
    except ValueError:
        rpc = {}
    auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
    token = PROVIDER["provider"].access.get(auth[7:]) if auth.startswith("Bearer ") else None
    if isinstance(rpc, dict) and rpc.get("method") == "tools/call" and token and OPTS.call_scope not in token.scopes:
        STATS["insufficient_scope"] += 1
        needed = " ".join(sorted(set(token.scopes) | {OPTS.call_scope}))
        challenge = f'Bearer error="insufficient_scope", scope="{needed}"'
        await send({"type": "http.response.start", "status": 403, "headers": [
            (b"content-type", b"application/json"), (b"www-authenticate", challenge.encode())]})
        await send({"type": "http.response.body", "body": b'{"error": "insufficient_scope"}'})
        return
    await app(scope, replay, send)


async def with_cimd(app, scope, receive, send):
    """The SDK's authorization server metadata, saying it takes client ID metadata documents."""
    import json

    start, body = {}, bytearray()

    async def keep(message):
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            body.extend(message.get("body", b""))

    await app(scope, receive, keep)
    metadata = json.loads(body)
    metadata["client_id_metadata_document_supported"] = True
    out = json.dumps(metadata).encode()
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(out)).encode()))
    await send({"type": "http.response.start", "status": start["status"], "headers": headers})
    await send({"type": "http.response.body", "body": out})


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = tapped(build(port).streamable_http_app())
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    srv = uvicorn.Server(config)

    async def serve():
        task = asyncio.create_task(srv.serve(sockets=[sock]))
        while not srv.started:
            await asyncio.sleep(0.02)
        tmp = OPTS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, OPTS.port_file)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
