"""Hello in Python: the read tools of `wit/hello.wit`."""

import random
import time

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import http, log, types


class ReadTools(exports.ReadTools):
    def greet(self, name: str) -> str:
        # The guest's own check: refused before anything is sent.
        if any("0" <= c <= "9" for c in name):
            raise Err(types.ToolError_InvalidInput("name: letters only, no digits"))
        client = http.connect()
        response = client.send(
            http.Request(method=http.Method.GET, path=f"/hello/{name}", query=[], headers=[], body=None)
        )
        if response.status != 200:
            raise Err(types.ToolError_Upstream(types.UpstreamError(status=response.status, message="not 200")))
        # Built with --stub-wasi: no stdout; the contract's log is the way.
        log.log(log.Level.INFO, f"greeted {name}")
        return bytes(response.body).decode()

    def now(self) -> str:
        return f"{int(time.time() * 1000)} {random.random()}"
