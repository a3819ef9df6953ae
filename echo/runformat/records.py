"""Reading record files (layout: preload/core/echo_records.h, docs/records.md), and the summaries of the calls a
process made that its record file does not hold (<real>.lost, written by preload/core/echo_records.c): those after its
records stopped, or those its ring of the last calls let go (the default without echorun --trace).

A file is read in bulk into a numpy structured array. A damaged file is
rejected with a clear message, but every whole record before the damage is
kept: `RecordFile.damage` says what was wrong and where, `records` holds what
came before it.
"""

from __future__ import annotations

import functools
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from echo.runformat.constants import RECORD_MAX_SLOTS, RECORD_VERSION
from echo.runformat.runfiles import lost_file, read_if_there, record_files, restart_lost_files

if TYPE_CHECKING:  # numpy is imported where records are read: a run whose records nobody reads never loads it
    import numpy as np

MAGIC = b"ECHOREC\0"
VERSION = RECORD_VERSION  # versions 1 (no record count: the file held exactly its records) and 2 (no ring) are read too
MAX_SLOTS = RECORD_MAX_SLOTS
FIELDS = [
    ("seq", "<u8"), ("fn", "<u2"), ("flags", "<u2"), ("comm", "<i4"), ("peer", "<i4"), ("tag", "<i4"),
    ("bytes", "<u8"), ("t_start", "<u8"), ("t_end", "<u8"),
]
# magic, version, header_size, record_size, nfunctions, app_rank, copy, ncopies, real_rank, pid, nslots,
# start_time, tick_origin, calibration (ns, ticks), nrecords (version 2), ring and first (version 3)
FIXED_BY_VERSION = {1: struct.Struct("<8s4I5iIdQQQ"), 2: struct.Struct("<8s4I5iIdQQQQ"),
                    3: struct.Struct("<8s4I5iIdQQQQQQ")}
FIXED = FIXED_BY_VERSION[VERSION]
FLAG_ERROR = 1


@functools.cache  # a handful of layouts; asked once per record file
def record_dtype(nslots: int) -> np.dtype:
    """The record of a file with `nslots` role-data slots."""
    import numpy as np

    return np.dtype(FIELDS + ([("slot", "<u8", (nslots,))] if nslots else []))


def __getattr__(name: str) -> object:
    """RECORD, the record of a file without slots: made when asked (it needs numpy)."""
    if name == "RECORD":
        return record_dtype(0)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RecordsError(ValueError):
    """A record file that cannot be read at all (not a record file, wrong version)."""


@dataclass
class RecordFile:
    path: str | Path
    app_rank: int
    copy: int
    ncopies: int
    real_rank: int
    pid: int
    start_time: float
    run_id: str
    host: str
    role: str
    slot_names: list[str]
    mpi_library: str
    functions: list[str]
    records: np.ndarray  # of record_dtype(len(slot_names)); times in clock ticks
    seconds_per_tick: float
    damage: str | None = None
    calls: int = 0  # calls the process made (the header's count): more than `records` when a ring let some go
    ring: int = 0  # 0: `records` are every call; else call 0's record and the last `ring` calls at most

    @property
    def windowed(self) -> bool:
        """Whether calls are missing between call 0 and the ring's first (their totals are in the .lost file)."""
        return len(self.records) > 1 and int(self.records["seq"][1]) > 1

    def window_text(self) -> str:
        """What the records hold of the calls, for a page or an export that shows calls one by one."""
        kept = len(self.records) - 1
        return (f"records hold call 0 and the last {kept} of its {self.calls} calls (the default ring; the "
                f"{self.calls - kept - 1} calls between are per-function totals only: run echorun --trace for "
                "every call)")

    def function_names(self) -> np.ndarray:
        import numpy as np

        return np.asarray(self.functions, dtype=object)[self.records["fn"]]

    def seconds(self, field: str) -> np.ndarray:
        """`t_start` or `t_end` in seconds since the process's clock origin."""
        return self.records[field] * self.seconds_per_tick

    def durations(self) -> np.ndarray:
        """Seconds each call took."""
        return (self.records["t_end"] - self.records["t_start"]) * self.seconds_per_tick


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


@functools.lru_cache(maxsize=16)
def function_table(raw: bytes, nfun: int) -> list[str]:
    """The header's NUL-separated function names, decoded once per table: every process of a run has the same
    (the MPI's), and a run of thousands of processes would decode it thousands of times. Shared: never modify."""
    return [f.decode() for f in raw.split(b"\0")[:nfun]]


def read(path: str | Path) -> RecordFile:
    path = Path(path)
    return parse(path, path.read_bytes())


def read_all(paths: list[str], sizes: list[int], buffer: np.ndarray | None = None) -> list[RecordFile | RecordsError]:
    """Many record files of `sizes` bytes (one listing of their folder says them) read into one buffer, each file's
    records a view of it: a run of 16,384 processes reads them without a Python object or a copy per file (bytes
    of each file's own would cost a fresh allocation, and its page faults, per file). `buffer`: bytes to read them
    into when it is large enough (the caller's, reused from one batch of files to the next: the files read before
    are no longer valid; else a new bytearray: into a new numpy array instead, the two 229 MiB files of
    bench/run_ingest.py's real run ingested about 1.5x slower here). A file shorter than its size (cut after the
    listing) is read as far as it goes."""
    total = sum(sizes)
    buf = memoryview(buffer if buffer is not None and buffer.nbytes >= total else bytearray(total))
    out: list[RecordFile | RecordsError] = []
    off = 0
    for path, size in zip(paths, sizes, strict=True):
        fd = os.open(path, os.O_RDONLY)
        try:
            got = os.readv(fd, [buf[off:off + size]])
        finally:
            os.close(fd)
        try:
            out.append(parse(path, buf[off:off + got]))  # its path as given: a Path per file costs more than its parse
        except RecordsError as e:
            out.append(e)
        off += size
    return out


def parse(path: str | Path, data: bytes | memoryview) -> RecordFile:
    """The record file `path` whose bytes are `data` (its records are a view of them, not a copy)."""
    import numpy as np

    if not data:  # the disk refused even its header: its calls are summarized in its .lost file, if it could be
        raise RecordsError(f"{path}: not an echo record file (empty: what a process leaves when the disk refuses "
                           "its records)")
    if len(data) < FIXED_BY_VERSION[1].size or bytes(data[:8]) != MAGIC:
        raise RecordsError(f"{path}: not an echo record file (no ECHOREC header); was it written by echorun?")
    version = struct.unpack_from("<I", data, 8)[0]
    if version not in FIXED_BY_VERSION:
        raise RecordsError(f"{path}: record layout version {version}; this echo reads versions 1 to {VERSION} "
                           "(read it with the echo that wrote it)")
    fixed = FIXED_BY_VERSION[version]
    if len(data) < fixed.size:
        raise RecordsError(f"{path}: header cut short ({len(data)} bytes): the file is truncated")
    (magic, version, header_size, record_size, nfun, app, copy, ncopies, real, pid, nslots, t0, _tick_origin,
     cal_ns, cal_ticks, *count) = fixed.unpack_from(data)
    count, ring, first = (count + [0, 0])[:3] if count else (None, 0, 0)
    dtype = record_dtype(nslots) if nslots <= MAX_SLOTS else None
    if dtype is None or record_size != dtype.itemsize:
        raise RecordsError(f"{path}: records of {record_size} bytes with {nslots} slots do not match the layout: "
                           "the file is corrupt")
    if len(data) < header_size:
        raise RecordsError(f"{path}: header cut short ({len(data)} of {header_size} bytes): the file is truncated")
    head = bytes(data[:header_size])  # its texts decoded from bytes: `data` may be a view of a larger buffer
    off = fixed.size
    run_id, off = _text(head[off:off + 64]), off + 64
    host, off = _text(head[off:off + 64]), off + 64
    role, off = _text(head[off:off + 64]), off + 64
    slot_names = [_text(head[off + 32 * i:off + 32 * (i + 1)]) for i in range(nslots)]
    off += 32 * MAX_SLOTS
    mpi_library, off = _text(head[off:off + 256]), off + 256
    functions = function_table(head[off:header_size], nfun)

    body = len(data) - header_size
    whole = body // dtype.itemsize
    damage = None
    if ring and count is not None and count > ring + 1:  # a ring that wrapped: call 0, then calls first.. in turn
        records, expected, slots, damage = _ring(path, data, header_size, dtype, whole, count, ring, first)
    else:
        if count is not None and count <= whole:  # a process that died leaves its mapping's unused tail
            whole = count
        elif count is not None:
            damage = (f"{path}: truncated: the header counts {count} records, the file holds {whole} "
                      f"(kept the {whole} whole records)")
        elif body % dtype.itemsize:
            damage = (f"{path}: truncated: {body % dtype.itemsize} bytes of a partial record after record "
                      f"{whole - 1} (kept the {whole} whole records before it)")
        records = np.frombuffer(data, dtype=dtype, count=whole, offset=header_size)
        expected = slots = np.arange(whole, dtype=np.uint64)
    bad = np.flatnonzero((records["seq"] != expected) | (records["fn"] >= len(functions)))
    if bad.size:
        k = int(bad[0])
        damage = (f"{path}: corrupt record {k} at byte {header_size + int(slots[k]) * dtype.itemsize} "
                  f"(kept the {k} records before it)")
        records = records[:k]
    # ticks -> seconds as last measured by the writer (1 ns per tick if it never did)
    seconds_per_tick = 1e-9 * (cal_ns / cal_ticks if cal_ticks else 1.0)
    return RecordFile(path, app, copy, ncopies, real, pid, t0, run_id, host, role, slot_names, mpi_library,
                      functions, records, seconds_per_tick, damage, len(records) if count is None else count, ring)


def _ring(path: str | Path, data: bytes | memoryview, header_size: int, dtype: np.dtype, whole: int, count: int,
          ring: int, first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, str | None]:
    """A wrapped ring's records in call order (call 0's, then calls `first` to `count` - 1, call n in slot
    1 + (n - 1) % ring), the calls they should be, their slots, and what damage cut them short."""
    import numpy as np

    start = max(first, count - ring, 1)
    calls = np.concatenate(([0], np.arange(start, count, dtype=np.uint64))).astype(np.uint64)
    slots = np.where(calls == 0, 0, 1 + (calls.astype(np.int64) - 1) % ring)
    if whole < ring + 1:
        cut = f"{path}: truncated: a ring of {ring} records, the file holds {whole} (kept none)"
        return np.zeros(0, dtype), calls[:0], slots[:0], cut
    table = np.frombuffer(data, dtype=dtype, count=ring + 1, offset=header_size)
    return table[slots], calls, slots, None


def read_run(run_dir: str | Path) -> list[RecordFile]:
    """Every record file of a run, by real rank."""
    return [read(p) for p in record_files(Path(run_dir))]


@dataclass
class LostCalls:
    """The calls a process made that its record file does not hold: after it stopped (its bound, or a disk that
    refused more), or, with `ring`, those between call 0 and the ring of the last calls (the default without
    echorun --trace). Summarized per function, not call by call."""

    stopped_at: int  # the first call the record file does not hold; a ring: the first call it holds after call 0
    reason: str
    functions: dict[str, tuple[int, int, int, float, float]]  # calls, errors, bytes, seconds in total, longest
    ring: bool = False

    @property
    def calls(self) -> int:
        return sum(f[0] for f in self.functions.values())

    def text(self) -> str:
        """What was kept and what was lost, as echorun and the store say it."""
        totals = "kept as per-function totals only (calls, bytes, time)"
        if self.ring:
            return (f"records kept for call 0 and its calls from {self.stopped_at} on ({self.reason}); its "
                    f"{self.calls} calls between are {totals}")
        if not self.stopped_at:
            return f"no call recorded ({self.reason}); its {self.calls} calls are {totals}"
        return (f"records kept for its first {self.stopped_at} calls, then stopped ({self.reason}); its "
                f"{self.calls} calls after are {totals}")


LOST_MAGIC = b"ECHOLST\0"
LOST_FIXED = struct.Struct("<8s2I4Q256s")  # magic, version, nentries, stopped, stopped_at, ns, ticks, reason
LOST_ENTRY = struct.Struct("<40s5Q")  # name, calls, errors, bytes, ticks in total, longest ticks
LOST_RING = 2  # `stopped`: 1 the records stopped, 2 a ring let the calls go


def read_lost(run_dir: str | Path, real: int) -> LostCalls | None:
    """The process's lost-call summaries; None when its records never stopped."""
    return read_lost_file(lost_file(Path(run_dir), real))


def read_restart_lost(run_dir: str | Path) -> list[tuple[int, int, LostCalls | RecordsError]]:
    """The lost-call summaries of the processes Reinit restarted whose records stopped, as (application rank, pid,
    summary), or the error that made one unreadable in its place."""
    out: list[tuple[int, int, LostCalls | RecordsError]] = []
    for rank, pid, path in restart_lost_files(Path(run_dir)):
        try:
            lost = read_lost_file(path)
        except (RecordsError, OSError, ValueError) as e:
            out.append((rank, pid, e if isinstance(e, RecordsError) else RecordsError(f"{path}: {e}")))
            continue
        if lost is not None:
            out.append((rank, pid, lost))
    return out


def read_lost_file(path: str | Path) -> LostCalls | None:
    """A .lost file: the mapped one the library reserves before the first call (layout 2, docs/records.md), or
    the text one of echo before it (layout 1); None when there is none or its records never stopped."""
    data = read_if_there(path)
    if data is None:
        return None
    if data.startswith(b"echo-lost 1\n"):
        return _read_lost_text(path, data.decode("utf-8", "replace"))
    if len(data) < LOST_FIXED.size or not data.startswith(LOST_MAGIC):
        raise RecordsError(f"{path}: not a summary of lost calls that this echo reads")
    _magic, version, nentries, stopped, stopped_at, ns, ticks, reason = LOST_FIXED.unpack_from(data)
    if version != 2 or len(data) < LOST_FIXED.size + nentries * LOST_ENTRY.size:
        raise RecordsError(f"{path}: lost-call summary of layout {version} or cut short; this echo reads layouts "
                           "1 and 2 (read it with the echo that wrote it)")
    if not stopped:  # the process died (or is still running) with its records whole
        return None
    seconds_per_tick = 1e-9 * (ns / ticks if ticks else 1.0)
    functions = {}
    for i in range(nentries):
        raw, calls, errors, nbytes, total, longest = LOST_ENTRY.unpack_from(data, LOST_FIXED.size + i * LOST_ENTRY.size)
        if calls:
            functions[_text(raw)] = (calls, errors, nbytes, total * seconds_per_tick, longest * seconds_per_tick)
    return LostCalls(stopped_at, _text(reason), functions, stopped == LOST_RING)


def _read_lost_text(path: Path, text: str) -> LostCalls:
    lines = text.splitlines()
    if len(lines) < 3 or not lines[1].startswith("stopped_at "):
        raise RecordsError(f"{path}: not a summary of lost calls that this echo reads")
    functions = {}
    for line in lines[3:]:
        name, calls, errors, nbytes, total, longest = line.split()
        functions[name] = (int(calls), int(errors), int(nbytes), float(total), float(longest))
    return LostCalls(int(lines[1].split()[1]), lines[2].removeprefix("reason "), functions)


def write(path: str | Path, *, app_rank: int, copy: int, ncopies: int, real_rank: int, pid: int, start_time: float,
          run_id: str, host: str, role: str, mpi_library: str, functions: list[str], records: np.ndarray) -> None:
    """A record file as the preload library writes it (version VERSION, no slots, 1 ns per tick), for the
    benchmarks and tests that need runs of thousands of ranks this machine cannot run: records of RECORD's
    dtype, numbered 0, 1, 2..."""
    names = b"\0".join(f.encode() for f in functions) + b"\0"
    header_size = FIXED.size + 64 * 3 + 32 * MAX_SLOTS + 256 + len(names)
    header_size += -header_size % 8  # records start 8-aligned, as the library maps them
    fixed = FIXED.pack(MAGIC, VERSION, header_size, record_dtype(0).itemsize, len(functions), app_rank, copy,
                       ncopies, real_rank, pid, 0, start_time, 0, 1, 1, len(records), 0, 1)

    def field(text: str, size: int) -> bytes:
        return text.encode()[:size - 1].ljust(size, b"\0")

    head = fixed + field(run_id, 64) + field(host, 64) + field(role, 64) + bytes(32 * MAX_SLOTS) \
        + field(mpi_library, 256) + names
    import numpy as np

    with open(path, "wb") as out:
        out.write(head.ljust(header_size, b"\0"))
        out.write(np.ascontiguousarray(records, dtype=record_dtype(0)).tobytes())
