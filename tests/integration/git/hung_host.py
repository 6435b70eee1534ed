"""A Git host that hangs: it accepts TCP connections and never answers (the reliability probe's
"freeze" proxy). It records each connection and when the client gave up on it."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field


@dataclass
class HungHost:
    """Listening on 127.0.0.1; ``url(name)`` is an HTTP repository URL on it."""

    listener: socket.socket = field(init=False)
    accepted: int = 0
    #: Set each time a client closes its connection (git gave up, or was killed).
    closed: threading.Event = field(default_factory=threading.Event)
    _conns: list[socket.socket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}.git"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.accepted += 1
            self._conns.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    def _drain(self, conn: socket.socket) -> None:
        try:
            while conn.recv(65536):
                pass  # read the request, answer nothing
        except OSError:
            pass
        self.closed.set()

    def close(self) -> None:
        self.listener.close()
        for conn in self._conns:
            conn.close()
