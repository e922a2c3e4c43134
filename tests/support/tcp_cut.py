"""A database that stops answering, for one process only: a TCP relay in front of the shared test cluster.

Stopping the cluster would take it from every other test running beside; instead the process under test
reaches PostgreSQL through this relay, and `cut()` closes the relay's listening socket and every relayed
connection: new connections are refused (`Connection refused`, as when the server is down) and open ones see
the server close them. `restore()` listens again on the same port.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit


class TcpCut:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            if self._listener is not listener:  # accepted as the relay was being cut: refused too
                client.close()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._conns.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
        if listener is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone would leave the socket listening
            # until that accept() returned, and let one more connection through.
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def restore(self) -> None:
        self._listen()


@contextlib.contextmanager
def relayed(dsn: str) -> Iterator[tuple[str, TcpCut]]:
    """`dsn` rewritten to go through a relay (its host and port replaced), and the relay."""
    parts = urlsplit(dsn)
    relay = TcpCut(parts.hostname or "127.0.0.1", parts.port or 5432)
    relay.restore()
    userinfo = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    try:
        yield urlunsplit(parts._replace(netloc=f"{userinfo}127.0.0.1:{relay.port}")), relay
    finally:
        relay.cut()
