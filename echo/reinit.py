"""Reinit mode, the application's side: global restart without re-deploying the job.

`reinit(main)` is the Python form of C's MPI_Reinit: it calls `main(state)`
with "new" (or "restarted" in a process started again in place of a failed
one); when a process of the job fails, echo repairs the world and the MPI call
that saw the failure raises mpi4py's MPI.Exception with echo's error code:
`reinit` catches it and calls `main("reinited")`. Outside echorun's reinit
mode it just calls `main("new")`.

echorun's side of the mode (its options, plan lines, relaunch and verdict) is echo/modes/reinit.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
STATES = {0: "new", 1: "reinited", 2: "restarted"}


def _checked(call: Callable[[], int]) -> int:
    """Run a checkpoint call of the library; a repair during it is the failure Python sees as an exception."""
    from mpi4py import MPI

    from echo import lib

    _ffi, clib = lib._lib()
    before = clib.echo_reinit_repairs()
    result = call()
    if clib.echo_reinit_repairs() != before:
        raise MPI.Exception(clib.echo_reinit_error_code())
    return result


def checkpoint_store(name: str, data: bytes) -> None:
    """Keep `data` under `name` in the checkpoint version being prepared (local)."""
    from echo import lib

    if lib.available():
        lib._lib()[1].echo_ckpt_store(name.encode(), data, len(data))


def checkpoint_commit(version: int) -> None:
    """Make `version` this rank's checkpoint (collective over MPI.COMM_WORLD)."""
    from echo import lib

    if lib.available():
        _checked(lambda: lib._lib()[1].echo_ckpt_commit(version))


def checkpoint_latest() -> int:
    """The latest version every rank committed, -1 if none (collective)."""
    from echo import lib

    return _checked(lambda: lib._lib()[1].echo_ckpt_latest()) if lib.available() else -1


def checkpoint_load(name: str, size: int) -> bytes | None:
    """At most `size` bytes of `name` from the latest version (after checkpoint_latest), None if it has none."""
    from echo import lib

    if not lib.available():
        return None
    ffi, clib = lib._lib()
    buf = ffi.new("char[]", size)
    if clib.echo_ckpt_load(name.encode(), buf, size) != 0:
        return None
    return ffi.buffer(buf, size)[:]


def reinit(main: Callable[[str], T]) -> T:
    """Run `main(state)` and run it again, state "reinited", each time the world is repaired."""
    from echo import lib

    if not lib.available():
        return main("new")
    from mpi4py import MPI

    ffi, clib = lib._lib()
    state = STATES[clib.echo_reinit_begin()]
    try:
        while True:
            try:
                return main(state)
            except MPI.Exception as e:
                if e.Get_error_code() != clib.echo_reinit_error_code():
                    raise
                state = "reinited"
    finally:
        clib.echo_reinit_end()
