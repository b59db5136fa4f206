"""A hostile guest: a socket of its own, past the host's `http` handle.
componentize-py's runtime then imports wasi:sockets."""

import socket

from wit_world import exports


class ReadTools(exports.ReadTools):
    def escape(self, url: str) -> str:
        host, _, port = url.removeprefix("http://").partition(":")
        with socket.create_connection((host, int(port or 80))) as conn:
            conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return conn.recv(1024).decode()
