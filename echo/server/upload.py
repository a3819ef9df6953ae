"""Uploads: a run directory as a gzip'd tar (echo/runformat/runfiles.py packs it), stored whole or not at all.

The archive is read into a temporary directory next to the storage; it must
hold run.json (whose run_id is the one uploaded) and plan; every member must
stay inside the directory. Then the files are moved into place and ingested in
one transaction; on any failure the previous state is put back. Uploading the
same run again replaces it (uploads are idempotent by run id).
"""

from __future__ import annotations

import fcntl
import gzip
import json
import shutil
import tarfile
import tempfile
import uuid
from pathlib import Path
from typing import IO

from sqlalchemy import Engine

from echo.runformat.runfiles import PLAN, RUN_JSON, RUN_META_KEYS, read_meta
from echo.store.ingest import ingest

# what an upload leaves in the storage while it is under way: the body as it streams in (UPLOAD_PREFIX*.tgz; older
# servers named it tmp*.tgz), the folder it is unpacked into (UPLOAD_PREFIX*), a stored run set aside while its
# replacement is moved in (replaced-*). A server killed meanwhile (SIGKILL, a power cut) leaves them behind.
UPLOAD_PREFIX = "upload-"
REPLACED_PREFIX = "replaced-"
LOCK = ".serving"  # held (shared) by every server of this storage while it runs


class UploadError(ValueError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def receive(data_path: Path, run_id: str, storage: Path, engine: Engine) -> str:
    """Store the upload in `data_path` as run `run_id`; raises UploadError (nothing stored) when it is bad."""
    storage.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX, dir=storage))
    try:
        _extract(data_path, tmp)
        meta = _check(tmp, run_id)
        final = storage / "runs" / run_id
        old = storage / f"{REPLACED_PREFIX}{uuid.uuid4().hex}"
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        try:
            ingest(final, engine)
        except Exception as e:
            shutil.rmtree(final, ignore_errors=True)
            if old.exists():
                old.rename(final)
            raise UploadError(422, f"the run could not be ingested: {e}") from e
        shutil.rmtree(old, ignore_errors=True)
        return meta["run_id"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract(data_path: Path, into: Path) -> None:
    try:
        with gzip.open(data_path) as gz:
            gz.read(1)
    except (OSError, EOFError) as e:
        raise UploadError(400, f"the upload is not a gzip'd tar ({e}); send `tar czf - -C RUN_DIR .`") from e
    try:
        with tarfile.open(data_path, mode="r:gz") as tar:
            members = tar.getmembers()
            root = into.resolve()
            for m in members:
                target = (into / m.name).resolve()
                inside = str(target).startswith(f"{root}/") or (target == root and m.isdir())  # `-C RUN_DIR .` has "."
                if not inside or m.issym() or m.islnk():
                    raise UploadError(400, f"the upload holds {m.name!r}, which points outside the run directory")
            tar.extractall(into, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError) as e:
        raise UploadError(400, f"the upload is truncated or corrupt ({e}); nothing was stored") from e


def _check(run_dir: Path, run_id: str) -> dict:
    for name in (RUN_JSON, PLAN):
        if not (run_dir / name).is_file():
            raise UploadError(422, f"wrong schema: the upload has no {name} (upload a whole echo run directory)")
    try:
        meta = read_meta(run_dir)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UploadError(422, f"wrong schema: run.json is not JSON ({e})") from e
    missing = [k for k in RUN_META_KEYS if k not in meta]
    if missing:
        raise UploadError(422, f"wrong schema: run.json lacks {', '.join(missing)}")
    if meta["run_id"] != run_id:
        raise UploadError(422, f"run.json names run {meta['run_id']!r}, the upload was for {run_id!r}")
    return meta


def claim_storage(storage: Path) -> tuple[IO[bytes], list[str]]:
    """Hold the storage for this server (a shared lock on LOCK, kept open for the server's life: returned) and,
    when no other server holds it, clean what uploads cut short by an earlier server's death left: their bodies
    and folders are removed; a stored run set aside for its replacement goes back where it was if the replacement
    never arrived (else the replacement is in place and the old one goes). Never touches a stored run in runs/.
    The second value: one line per thing done, for the server's log."""
    storage.mkdir(parents=True, exist_ok=True)
    lock = (storage / LOCK).open("ab")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another server of this storage is running: its uploads under way are its own
        fcntl.flock(lock, fcntl.LOCK_SH)
        return lock, []
    done = []
    for path in sorted(storage.iterdir()):
        if path.name.startswith(REPLACED_PREFIX) and path.is_dir():
            try:
                run_id = read_meta(path)["run_id"]
            except (OSError, ValueError, KeyError):
                run_id = None
            home = storage / "runs" / run_id if run_id else None
            if home is not None and not home.exists():
                home.parent.mkdir(parents=True, exist_ok=True)
                path.rename(home)
                done.append(f"put back run {run_id}, set aside by an upload that never finished")
                continue
        elif not (path.name.startswith(UPLOAD_PREFIX) or (path.name.startswith("tmp") and path.suffix == ".tgz")):
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        done.append(f"removed {path.name}, left by an upload that never finished")
    fcntl.flock(lock, fcntl.LOCK_SH)  # from now on other servers may share the storage (and clean nothing)
    return lock, done
