"""A Unix socket in front of the Docker engine that a test can close and open again: the engine "unreachable
mid-run" (its socket refuses connections) without stopping a real engine. DOCKER_HOST=unix://<gate.path> sends a
harness through it; closing it also cuts the connections already open (the Docker SDK keeps them alive)."""
from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlparse


def engine_socket() -> str:
    """The engine's own socket: DOCKER_HOST's when it names one, else Docker's default."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return urlparse(host).path if host.startswith("unix://") else "/var/run/docker.sock"


class DockerGate:
    def __init__(self, path: Path) -> None:
        self.path, self.engine = Path(path), engine_socket()
        self._server: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def docker_host(self) -> str:
        return f"unix://{self.path}"

    def open(self) -> DockerGate:
        self.path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.path))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()
        return self

    def close(self) -> None:
        """From now on a connect is refused (the socket file stays, nobody listens) and open connections end."""
        with self._lock:
            server, self._server = self._server, None
            cut, self._open = self._open, []
        if server is not None:
            server.close()
        for s in cut:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return  # closed
            engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            engine.connect(self.engine)
            with self._lock:
                if self._server is not server:
                    client.close(), engine.close()
                    return
                self._open += [client, engine]
            for a, b in ((client, engine), (engine, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
