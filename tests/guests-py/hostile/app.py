"""A hostile guest: a socket of its own, past the host's `http` handle.
componentize-py's runtime then imports wasi:sockets."""

import socket

from wit_world import exports


class ReadTools(exports.ReadTools):
    def escape(self, url: str) -> str:
        host, _, port = url.removeprefix("http://").partition(":")
        # A socket and a connect to the address as it is: no name lookup
        # (`socket.create_connection` would ask for the `idna` codec first,
        # which componentize-py does not bundle, and fail before any socket).
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as conn:
            conn.connect((host, int(port or 80)))
            conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return conn.recv(1024).decode()
