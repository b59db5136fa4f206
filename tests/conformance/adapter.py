"""The conformance suite's client adapter: the host as the suite's MCP client, driven the way
an operator and a person drive it. The suite runs `python3 adapter.py URL` for each client
scenario, with MCP_CONFORMANCE_SCENARIO (and, where the scenario has one,
MCP_CONFORMANCE_CONTEXT: client_id, client_secret, ...) in the environment. Standard library
only; the `scout-host` binary is $SCOUT_HOST.

What it does, step by step (each a function, so an authorization scenario can add its own):
  1. write a config with one remote connector `conf` for URL and start `serve`;
  2. for auth/* scenarios, Connect through the admin API with the host's own OAuth client, and
     play the person: open the authorization URL (the suite's authorization server approves at
     once with a redirect) and land on the host's callback;
  3. wait for the host's listing of the server, review every candidate as `read`;
  4. open a person-chat session and, on its MCP endpoint, initialize, list and call every tool.
`serve` is killed at the end, whatever happened. Exit 0 only when every step worked.

To extend it for a scenario, add a function to STEPS_BEFORE_REVIEW, ON_REFUSED_CALL or
AFTER_CALLS keyed by the scenario's name or a prefix ending in "/" (see `steps_for`); CONTEXT
holds the scenario's MCP_CONFORMANCE_CONTEXT."""
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

URL = sys.argv[-1]
SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
SCOUT_HOST = os.environ.get("SCOUT_HOST", "scout-host")
ADMIN_TOKEN = "admin-token-for-conformance-0123456789"
CONNECTOR = "conf"
PROTOCOL = "2025-11-25"
# Every wait is bounded well inside the suite's own timeout, so a stuck step fails the
# scenario with a message rather than a kill.
WAIT_SECS = float(os.environ.get("SCOUT_ADAPTER_WAIT_SECS", "25"))
# Arguments for the tools the suite's servers offer; any other tool is called with `{}`.
ARGUMENTS = {"add_numbers": {"a": 2, "b": 3}}


def log(*parts):
    print("[adapter]", *parts, file=sys.stderr, flush=True)


class Failed(Exception):
    """A step that did not work: the message says which and why."""


def is_auth():
    return SCENARIO.startswith("auth/")


# --- serve ---------------------------------------------------------------------------------

def start_serve(workdir):
    credential = "bearer" if is_auth() else "none"
    # The client ID metadata document's URL the suite's authorization servers expect
    # (the operator's `oauth_client_metadata_url`, where the host's document is served).
    cimd = 'oauth_client_metadata_url = "https://conformance-test.local/client-metadata.json"\n' if is_auth() else ""
    with open(os.path.join(workdir, "serve.toml"), "w") as f:
        f.write(
            'listen = "127.0.0.1:0"\ndatabase = "scout.db"\ndeployment_owner_brand = "acme"\n' + cimd + '\n'
            f'[connectors.{CONNECTOR}]\nmcp = "{URL}"\ncredential = "{credential}"\n'
            "allow_private_network = true\ndiscover_every_secs = 1\n"
        )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", workdir),
        "SCOUT_ADMIN_TOKEN": ADMIN_TOKEN,
        "SCOUT_STORE_KEY": "5c" * 32,
        "SCOUT_LOG": os.environ.get("SCOUT_LOG", "warn"),
    }
    serve = subprocess.Popen(
        [SCOUT_HOST, "serve", "--config", "serve.toml"],
        cwd=workdir, env=env, stdout=subprocess.PIPE, preexec_fn=die_with_parent,
        stderr=open(os.path.join(workdir, "serve.err"), "w"), text=True,
    )
    line = serve.stdout.readline().strip()
    if not line:
        raise Failed(f"serve did not start: {tail(workdir)}")
    return serve, line.split()[-1]


def die_with_parent():
    """`serve` gets SIGKILL when the adapter dies, however it dies (the suite kills a client
    command at its timeout): PR_SET_PDEATHSIG."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def tail(workdir, n=2000):
    try:
        with open(os.path.join(workdir, "serve.err")) as f:
            return f.read()[-n:]
    except OSError:
        return ""


# --- the admin API ---------------------------------------------------------------------------

class Admin:
    def __init__(self, base):
        self.base = base

    def request(self, method, path, body=None):
        request = urllib.request.Request(
            self.base + path, method=method,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"},
            data=None if body is None else json.dumps(body).encode(),
        )
        try:
            with urllib.request.urlopen(request, timeout=WAIT_SECS) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def connect_oauth(admin):
    """The person's part of Connect: start it, open the authorization URL, follow the
    authorization server's redirect to the host's callback."""
    if SCENARIO in CONNECTS_OTHERWISE:
        return
    body = {}
    if CONTEXT.get("client_id"):
        body["client"] = {"client_id": CONTEXT["client_id"], "client_secret": CONTEXT.get("client_secret", "")}
    status, started = admin.request("POST", f"/v1/brands/acme/connections/{CONNECTOR}/authorize", body)
    log("authorize", status, json.dumps(started)[:800])
    if status != 200:
        raise Failed(f"Connect refused ({status}): {started}")
    browser = urllib.request.build_opener(NoRedirect)
    location = None
    try:
        with browser.open(started["authorization_url"], timeout=WAIT_SECS) as r:
            raise Failed(f"the authorization page answered {r.status} without a redirect")
    except urllib.error.HTTPError as e:
        location = e.headers.get("location")
        log("authorization redirect", e.code, location)
    if not location:
        raise Failed("the authorization server sent no redirect")
    try:
        with browser.open(location, timeout=WAIT_SECS) as r:
            log("callback", r.status, r.read().decode(errors="replace")[:300])
    except urllib.error.HTTPError as e:
        raise Failed(f"the host's callback answered {e.code}: {e.read().decode(errors='replace')[:500]}")


def connect_by_identity_assertion(admin):
    """Enterprise-managed authorization: the person's identity assertion (the ID token the
    scenario's identity provider issued) given to the host, which exchanges it at the identity
    provider for an ID-JAG and presents that to the server's authorization server."""
    body = {
        "identity_assertion": CONTEXT["idp_id_token"],
        "identity_provider": {
            "issuer": CONTEXT["idp_issuer"],
            "token_endpoint": CONTEXT["idp_token_endpoint"],
            "client_id": CONTEXT["idp_client_id"],
        },
        "client": {"client_id": CONTEXT["client_id"], "client_secret": CONTEXT.get("client_secret", "")},
    }
    status, answer = admin.request("POST", f"/v1/brands/acme/connections/{CONNECTOR}/identity-assertion", body)
    log("identity-assertion", status, json.dumps(answer)[:800])
    if status != 200:
        raise Failed(f"the identity assertion was refused ({status}): {answer}")


# How the host's admin API says a connection needs more scope than its token holds.
STEP_UP = "the connection needs more scope"


def connection_state(admin):
    status, body = admin.request("GET", "/v1/brands/acme/connections")
    for c in (body.get("connections", []) if isinstance(body, dict) else []):
        if c.get("connector") == CONNECTOR:
            return c.get("state") or ""
    return ""


def step_up_until_listed(admin):
    """The person connects again while the host says the server needs more scope (its
    listing refused the token), until the host lists the server or stops asking (it bounds
    the step-ups for one scope set)."""
    deadline = time.time() + WAIT_SECS
    while time.time() < deadline:
        status, reviews = admin.request("GET", "/v1/reviews")
        if isinstance(reviews, dict) and (reviews.get("remote", {}).get(CONNECTOR, {}).get("listed_at_ms") or 0) > 0:
            return
        state = connection_state(admin)
        if state.startswith(STEP_UP):
            log("step-up:", state)
            try:
                connect_oauth(admin)
            except Failed as e:
                log("the host stops asking:", e)
                return
        time.sleep(0.2)


def reauthorize_for_scope(admin, tool, answer):
    """A call refused for want of scope: the person connects again (the host asks for the
    scopes held and those the server named); the call is sent once more."""
    text = json.dumps(answer)
    if STEP_UP not in text:
        return False
    log("step-up for", tool)
    try:
        connect_oauth(admin)
    except Failed as e:
        log("the host stops asking:", e)
        return False
    return True


def connect_client_credentials(admin):
    """The deployment's own client (client credentials): its secret, or its private key for
    `private_key_jwt`, given to the host for the deployment owner's connection."""
    body = {"client_id": CONTEXT["client_id"]}
    if CONTEXT.get("client_secret"):
        body["client_secret"] = CONTEXT["client_secret"]
    if CONTEXT.get("private_key_pem"):
        body["private_key_pem"] = CONTEXT["private_key_pem"]
        body["signing_algorithm"] = CONTEXT.get("signing_algorithm", "ES256")
    status, answer = admin.request("POST", f"/v1/brands/acme/connections/{CONNECTOR}/client-credentials", body)
    log("client-credentials", status, json.dumps(answer)[:800])
    if status != 200:
        raise Failed(f"the client credentials were refused ({status}): {answer}")


def review_everything(admin):
    """Waits for the host's listing of the server, then reviews every candidate as `read`."""
    deadline = time.time() + WAIT_SECS
    while True:
        status, reviews = admin.request("GET", "/v1/reviews")
        listed = isinstance(reviews, dict) and (reviews.get("remote", {}).get(CONNECTOR, {}).get("listed_at_ms") or 0) > 0
        if listed:
            break
        if time.time() > deadline:
            raise Failed(f"the host never listed the server: {json.dumps(reviews)[:600]}")
        time.sleep(0.2)
    candidates = reviews.get("connectors", {}).get(CONNECTOR, [])
    for c in candidates:
        status, answer = admin.request("POST", "/v1/reviews", {"connector": CONNECTOR, "tool": c["tool"], "digest": c["digest"], "effect": "read"})
        log("review", c["tool"], status)
        if status != 200:
            raise Failed(f"review of {c['tool']} refused ({status}): {answer}")


# --- the session's MCP endpoint ------------------------------------------------------------

class Session:
    """An agent's side of a session: JSON-RPC over the session's streamable HTTP endpoint, its
    client taking form elicitation (a question of the server's reaches the person, see
    `answer_elicitation`)."""

    def __init__(self, admin):
        status, view = admin.request("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
        if status != 201:
            raise Failed(f"no session ({status}): {view}")
        self.url, self.token, self.mcp_session, self.next_id = view["mcp"][CONNECTOR], view["token"], None, 1

    def open(self, message):
        headers = {"Authorization": f"Bearer {self.token}", "content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.mcp_session:
            headers["mcp-session-id"] = self.mcp_session
            headers["mcp-protocol-version"] = PROTOCOL
        request = urllib.request.Request(self.url, data=json.dumps(message).encode(), headers=headers, method="POST")
        answer = urllib.request.urlopen(request, timeout=WAIT_SECS + 15)
        self.mcp_session = self.mcp_session or answer.headers.get("mcp-session-id")
        return answer

    def messages(self, answer):
        """Every JSON-RPC message of an answer, as it arrives (an event stream is read event by
        event, so a question can be answered while the call waits)."""
        with answer:
            if not (answer.headers.get("content-type") or "").startswith("text/event-stream"):
                text = answer.read().decode()
                if text.strip():
                    yield json.loads(text)
                return
            data = []
            for raw in answer:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif not line and data:
                    text = "\n".join(data).strip()
                    data = []
                    if text:
                        yield json.loads(text)

    def request(self, method, params):
        self.next_id += 1
        sent = self.next_id
        seen = []
        for message in self.messages(self.open({"jsonrpc": "2.0", "id": sent, "method": method, "params": params})):
            if message.get("id") == sent and "method" not in message:
                return message
            if "method" in message and "id" in message:
                self.answer_server_request(message)
            seen.append(message)
        raise Failed(f"{method}: no answer in {seen}")

    def answer_server_request(self, message):
        handler = SERVER_REQUESTS.get(message["method"])
        if handler is None:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"the adapter takes no {message['method']}"}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": handler(message.get("params") or {})}
        log("answer", message["method"], json.dumps(reply)[:300])
        for _ in self.messages(self.open(reply)):
            pass

    def notify(self, method, params):
        for _ in self.messages(self.open({"jsonrpc": "2.0", "method": method, "params": params})):
            pass


def answer_elicitation(params):
    """The person accepts the server's form as shown, typing nothing: whatever the form's
    defaults are is for the host to apply (SEP-1034)."""
    log("asked", json.dumps(params)[:500])
    return {"action": "accept", "content": {}}


# The requests the session's client answers, by method.
SERVER_REQUESTS = {"elicitation/create": answer_elicitation}
CLIENT_CAPABILITIES = {"elicitation": {"form": {}}}


def call_every_tool(admin):
    session = Session(admin)
    answer = session.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": CLIENT_CAPABILITIES, "clientInfo": {"name": "scout-conformance-adapter", "version": "1"}})
    if "error" in answer:
        raise Failed(f"initialize: {answer}")
    session.notify("notifications/initialized", {})
    listed = session.request("tools/list", {})
    tools = listed.get("result", {}).get("tools", [])
    log("tools", [t["name"] for t in tools])
    for tool in tools:
        call = {"name": tool["name"], "arguments": ARGUMENTS.get(tool["name"], {})}
        answer = session.request("tools/call", call)
        log("call", tool["name"], json.dumps(answer)[:500])
        # A refused call may be retried once after a scenario's step (a re-authorization).
        if refused(answer) and any([retry(admin, tool["name"], answer) for retry in steps_for(ON_REFUSED_CALL)]):
            answer = session.request("tools/call", call)
            log("call again", tool["name"], json.dumps(answer)[:500])
        if "error" in answer:
            raise Failed(f"tools/call {tool['name']}: {answer['error']}")


def refused(answer):
    return "error" in answer or bool(answer.get("result", {}).get("isError"))


# --- the scenario's steps ----------------------------------------------------------------------

# Steps run after serve starts and before the review, by scenario name or prefix ending in "/".
STEPS_BEFORE_REVIEW = {
    "auth/": [connect_oauth, step_up_until_listed],
    "auth/cross-app-access-complete-flow": [connect_by_identity_assertion],
    "auth/client-credentials-basic": [connect_client_credentials],
    "auth/client-credentials-jwt": [connect_client_credentials],
}
# Authorization scenarios connected by a step of their own, not by Connect.
CONNECTS_OTHERWISE = {
    "auth/cross-app-access-complete-flow",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
}
# Steps run after every tool was called.
AFTER_CALLS = {}
# Steps run when a call is refused (an error, or a result with isError), each given
# (admin, tool name, answer); the call is sent once more when any returns True (for example
# after a re-authorization with more scopes).
ON_REFUSED_CALL = {"auth/": [reauthorize_for_scope]}


def steps_for(table):
    steps = []
    for key, more in table.items():
        if SCENARIO == key or (key.endswith("/") and SCENARIO.startswith(key)):
            steps.extend(more)
    return steps


def main():
    # The suite ends a client command with SIGTERM: run the cleanup below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    workdir = tempfile.mkdtemp(prefix="scout-conformance-")
    serve = None
    try:
        serve, base = start_serve(workdir)
        log("scenario", SCENARIO, "serve at", base, "in", workdir)
        admin = Admin(base)
        for step in steps_for(STEPS_BEFORE_REVIEW):
            step(admin)
        review_everything(admin)
        call_every_tool(admin)
        for step in steps_for(AFTER_CALLS):
            step(admin)
        return 0
    except Failed as e:
        log("FAILED:", e)
        return 1
    except Exception as e:  # an unexpected answer: the scenario fails, saying what happened
        log("FAILED:", type(e).__name__, e)
        return 1
    finally:
        if serve is not None:
            serve.kill()
            serve.wait()
        log("serve stderr tail:", tail(workdir, 1500))


if __name__ == "__main__":
    sys.exit(main())
