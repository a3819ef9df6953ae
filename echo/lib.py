"""The preload library seen from Python (cffi, ABI mode on preload/echo.h).

In a process started by echorun the library is already loaded (LD_PRELOAD), so
its functions are found in the process itself; elsewhere `available()` is False.
"""

from __future__ import annotations

import functools

from cffi import FFI

from echo.resources import PRELOAD_DIR


@functools.cache
def _lib():  # noqa: ANN202 (a cffi library object)
    ffi = FFI()
    decls = [
        line.split("/*")[0].replace("ECHO_API", "").strip()
        for line in (PRELOAD_DIR / "echo.h").read_text().splitlines()
        if line.startswith("ECHO_API")
    ]
    ffi.cdef("\n".join(decls))
    return ffi, ffi.dlopen(None)


def available() -> bool:
    """True in a process that runs under echorun."""
    try:
        _ffi, lib = _lib()
        lib.echo_app_rank  # noqa: B018 (looking the symbol up is the test)
    except AttributeError:
        return False
    return True


def copy_index() -> int:
    """0 for the representative of a rank, 1.. for its copies."""
    return _lib()[1].echo_copy_index()


def app_rank() -> int:
    return _lib()[1].echo_app_rank()


def copies() -> int:
    return _lib()[1].echo_copies()


def role() -> str:
    ffi, lib = _lib()
    return ffi.string(lib.echo_role()).decode()
