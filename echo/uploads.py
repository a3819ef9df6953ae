"""Sending runs to an echo server (`mpiecho serve`): the server and the token are checked before a job starts
(a wrong token or a server that is down is found before hours of computing, not after), the run is uploaded when
it ends, and `mpiecho upload RUN` sends a stored run again. The upload's format is echo/runformat/runfiles.py's (pack);
the server unpacks it (echo/server/upload.py)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from echo.progress import Progress, say
from echo.runformat.runfiles import pack

CHUNK = 1 << 20  # bytes sent at a time, so that the upload's progress can be said


class ServerError(RuntimeError):
    """The server cannot take uploads with this token; the message says why and what to do."""


def _request(server: str, path: str, token: str | None, method: str = "GET",
             body: bytes | Iterator[bytes] | None = None, timeout: float = 30, length: int | None = None) -> bytes:
    """`body` as bytes, or as chunks of `length` bytes in all (sent as they come: an upload's progress)."""
    headers = {"Authorization": f"Bearer {token or ''}"}
    if body is not None:
        headers["Content-Type"] = "application/gzip"
    if length is not None:
        headers["Content-Length"] = str(length)
    req = urllib.request.Request(f"{server.rstrip('/')}{path}", data=body, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as answer:
        return answer.read()


def _detail(e: urllib.error.HTTPError) -> str:
    text = e.read().decode(errors="replace")
    try:
        return str(json.loads(text)["detail"])
    except (ValueError, KeyError, TypeError):
        return text.strip()[:200]


def check_server(server: str, token: str | None) -> None:
    """Raise ServerError unless the server answers and takes this token for uploads."""
    if not token:
        raise ServerError(f"--server {server} needs an upload token: --token T or ECHO_TOKEN (the server's admin "
                          "creates one with `mpiecho token create`)")
    try:
        _request(server, "/api/token", token)
    except urllib.error.HTTPError as e:
        if e.code == 401:
            raise ServerError(f"the echo server at {server} refuses this token: {_detail(e)}") from None
        if e.code == 404:
            raise ServerError(f"{server} is not an echo server (no /api/token; is it `mpiecho serve`, and is the "
                              "URL its root?)") from None
        raise ServerError(f"the echo server at {server} answered {e.code}: {_detail(e)}") from None
    except (OSError, ValueError) as e:  # refused, unknown host, timeout, a malformed URL
        reason = getattr(e, "reason", e)
        raise ServerError(f"cannot reach the echo server at {server} ({reason}): start it, fix --server, or "
                          "leave --server out (the run is stored here anyway)") from None


def upload_run(run_dir: Path, server: str, token: str | None, run_id: str, tries: int = 5) -> bool:
    """PUT the run to the server, retrying with backoff; uploads are idempotent, so a retry is always safe."""
    body = pack(run_dir)

    def chunks(progress: Progress) -> Iterator[bytes]:
        for at in range(0, len(body), CHUNK):
            chunk = body[at:at + CHUNK]
            yield chunk
            progress.step(len(chunk))

    for attempt in range(tries):
        try:
            with Progress("upload", len(body), "MiB") as progress:
                _request(server, f"/api/runs/{run_id}", token, method="PUT", body=chunks(progress), timeout=300,
                         length=len(body))
            say(f"uploaded run {run_id} to {server}")
            return True
        except urllib.error.HTTPError as e:
            if e.code < 500:  # the server said no: retrying will not help
                say(f"the server refused the upload ({e.code}): {_detail(e)}")
                return False
            say(f"upload failed ({e.code}), retrying")
        except OSError as e:
            say(f"upload to {server} failed ({getattr(e, 'reason', e)}), retrying")
        if attempt + 1 < tries:
            time.sleep(min(30, 2 ** attempt))
    say(f"gave up uploading to {server}")
    return False


def not_uploaded(run_dir: Path, run_id: str, server: str) -> str:
    """What to tell the user when a run could not be uploaded: where it is, how to send it again."""
    return (f"run {run_id} was not uploaded; it is kept in {run_dir}: `mpiecho upload {run_id} --server {server}` "
            "sends it again")
