"""OTF2 archive (for Vampir and other OTF2 readers), written with the `otf2` package (which carries the OTF2 C
library): one location group per copy of each rank ("rank R copy C", with its role as a location property), one
location in it, a region per MPI function (paradigm MPI), and an Enter/Leave pair per call with its communicator,
peer, tag and bytes as attributes. Timestamps in nanoseconds from the run's earliest clock origin. Reads the
record files (every call) and the store (roles)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.export.chrome import PEERS, communicator
from echo.export.source import ExportError, counter_sets, iter_with_progress, procs_of, record_processes
from echo.store.models import Metric, Run

ARCHIVE = "traces"  # the archive's name: <output>/traces.otf2 is the anchor file readers open


def region_role(function: str) -> object:
    """What OTF2 calls the kind of an MPI function, so that viewers group and colour them."""
    import otf2

    name = function.lower()
    if any(k in name for k in ("send", "recv", "probe")):
        return otf2.RegionRole.POINT2POINT
    if any(k in name for k in ("barrier",)):
        return otf2.RegionRole.BARRIER
    if any(k in name for k in ("bcast", "reduce", "gather", "scatter", "alltoall", "scan")):
        return otf2.RegionRole.COLL_OTHER
    if name.startswith("mpi_file"):
        return otf2.RegionRole.FILE_IO
    if any(k in name for k in ("put", "get", "accumulate", "win_")):
        return otf2.RegionRole.RMA
    return otf2.RegionRole.FUNCTION


def write(session: Session, run: Run, output: Path | None) -> str:
    try:
        import otf2
    except ImportError:
        raise ExportError("--format otf2 needs the otf2 package: pip install otf2") from None
    assert output is not None  # a directory format: the command line insists on --output
    procs = procs_of(session, run)
    processes, _origin = record_processes(run, procs)
    sets = counter_sets(session.scalars(select(Metric).where(Metric.run_id == run.id)).all())
    ns = 1_000_000_000
    with otf2.writer.open(str(output), archive_name=ARCHIVE, timer_resolution=ns) as trace:
        trace.description = f"echo run {run.id}: {' '.join(run.argv)}"
        trace.creator = "echo (mpiecho export --format otf2)"
        defs = trace.definitions
        attrs = {
            "communicator": defs.attribute("communicator", "MPI communicator of the call", otf2.Type.STRING),
            "peer": defs.attribute("peer", "destination, source or root (application rank)", otf2.Type.INT32),
            "peer_special": defs.attribute("peer_special", "MPI_ANY_SOURCE or MPI_PROC_NULL", otf2.Type.STRING),
            "tag": defs.attribute("tag", "the call's tag", otf2.Type.INT32),
            "bytes": defs.attribute("bytes", "count x size of the call's datatype", otf2.Type.UINT64),
        }
        machine = defs.system_tree_node(run.host or "machine")
        hosts = {}
        regions: dict[str, object] = {}
        for p in iter_with_progress("otf2", processes):
            host = hosts.get(p.host) or hosts.setdefault(p.host, defs.system_tree_node(p.host or "host",
                                                                                       parent=machine))
            group = defs.location_group(f"rank {p.app_rank} copy {p.copy}", system_tree_parent=host)
            loc = defs.location(f"rank {p.app_rank} copy {p.copy}", group=group)
            defs.location_property(loc, "echo::rank", value=p.app_rank)
            defs.location_property(loc, "echo::copy", value=p.copy)
            defs.location_property(loc, "echo::role", value=p.role or "-")
            defs.location_property(loc, "echo::counter_set", value=",".join(sets.get((p.app_rank, p.copy), [])) or "-")
            writer = trace.event_writer_from_location(loc)
            r = p.records.records
            names = p.records.function_names()
            starts = ((p.starts()) * ns).astype("int64")
            ends = ((p.ends()) * ns).astype("int64")
            for i in range(len(r)):
                fn = str(names[i])
                region = regions.get(fn)
                if region is None:
                    region = regions[fn] = defs.region(fn, region_role=region_role(fn),
                                                       paradigm=otf2.Paradigm.MPI)
                # only what the call has (a call's number is its place among the location's events): attributes
                # cost most of the export's time
                a = {}
                comm, peer, tag, nbytes = int(r["comm"][i]), int(r["peer"][i]), int(r["tag"][i]), int(r["bytes"][i])
                if nbytes:
                    a[attrs["bytes"]] = nbytes
                if comm >= 0:
                    a[attrs["communicator"]] = communicator(comm)
                if peer >= 0:
                    a[attrs["peer"]] = peer
                elif peer in PEERS:
                    a[attrs["peer_special"]] = PEERS[peer]
                if tag >= 0:
                    a[attrs["tag"]] = tag
                writer.enter(int(starts[i]), region, attributes=a or None)
                writer.leave(int(max(ends[i], starts[i])), region)
    calls = sum(len(p.records.records) for p in processes)
    return (f"wrote run {run.id} as an OTF2 archive to {output}: {calls} calls of {len(processes)} locations "
            f"(open {output / (ARCHIVE + '.otf2')} in Vampir; otf2-print reads it too)")
