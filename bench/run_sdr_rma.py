"""SDR one-sided benchmark: an epoch of one Put (bench/fenceput.c: rank 0 puts N bytes into rank 1's window, in a
fence epoch, a PSCW one or a passive-target one) by size, natively, as two native runs at the same time, and under
`echorun --mode sdr --replicas 2`, in the same invocation (the baselines and the sharing of cores as
bench/run_sdr.py's).

    .venv/bin/python bench/run_sdr_rma.py [--quick]

Writes bench/results/sdr_rma.md.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from results_file import measured_by, run_together, write  # bench/ itself is on the path of a script run from it
from run_sdr import native_argv, sdr_argv

from echo.build import detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
SIZES = [8, 1024, 65536, 1 << 20, 4 << 20]
SMALL = 1024  # up to this size a Put is "small" (the goal: SDR within 2x of two natives; large ones: 1.2x)


def iterations(size: int, quick: bool) -> str:
    return str(max(20, (200 if quick else 1000) * 1024 // max(size, 1024)))


# the epoch's synchronization -> the line fenceput.c prints
SYNCS = {"fence": "fenceput", "pscw": "pscwput", "lock": "lockput"}


def per_epoch_us(out: str) -> float:
    return float(next(w[2] for line in out.splitlines() if (w := line.split()) and w[0] in SYNCS.values()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, fewer epochs")
    a = ap.parse_args()
    repeat = 1 if a.quick else 3
    mpi = detect_mpi()
    ensure_library(mpi)
    best: dict[tuple[str, str], dict[int, float]] = {(sync, kind): {} for sync in SYNCS
                                                     for kind in ("native", "pair", "sdr")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = str(work / "fenceput")
        subprocess.run([mpi.mpicc, "-O2", "-o", exe, str(HERE / "fenceput.c")], check=True)
        for i in range(repeat):
            for s, sync in enumerate(SYNCS):
                for size in SIZES:
                    args = [str(size), iterations(size, a.quick), sync]
                    run_dir = i * 1000 + s * 100 + size % 97
                    runs = {
                        "native": [per_epoch_us(run_together([native_argv(mpi, exe, args)])[0])],
                        # the slower of the two
                        "pair": [max(per_epoch_us(o) for o in run_together([native_argv(mpi, exe, args)] * 2))],
                        "sdr": [per_epoch_us(run_together([sdr_argv(exe, args, work, run_dir)])[0])],
                    }
                    for kind, (t,) in runs.items():
                        best[sync, kind][size] = min(best[sync, kind].get(size, float("inf")), t)
    version = subprocess.run([mpi.mpirun, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = [
        "# SDR: the cost of one-sided epochs (fence, PSCW, passive target)",
        "",
        measured_by("bench/run_sdr_rma.py") + f", best of {repeat}; {version}.",
        "",
        "An epoch of one `MPI_Put` of N bytes from rank 0 into rank 1's `MPI_Win_allocate` window "
        "(bench/fenceput.c), per epoch, µs: a fence epoch (both fence), and a PSCW one (rank 1 posts and waits, "
        "rank 0 starts, puts and completes), and a passive-target one (rank 0 locks rank 1's window exclusively, puts "
        "and unlocks; rank 1 waits in `MPI_Barrier`). 2 application ranks; SDR runs 2 replicas of each (4 processes). "
        "*two natives*: two native runs at the same time (the same number of processes on the same cores, without "
        "the protocol). Goal: SDR within 2x of two natives for small Puts, 1.2x for large ones.",
    ]
    for sync in SYNCS:
        lines += ["", f"**{sync}**", "",
                  "| bytes | native | two natives | SDR | SDR / native | SDR / two natives |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for size in SIZES:
            n, p, s = (best[sync, kind][size] for kind in ("native", "pair", "sdr"))
            lines.append(f"| {size} | {n:.2f} | {p:.2f} | {s:.2f} | {s / n:.2f} | {s / p:.2f} |")
    lines += [
        "",
        "Under SDR an epoch is messages of the replicated layer (docs/sdr.md, *One-sided communication*): the Put "
        "is a header and its data sent to the target, and the fence an `Alltoall` of operation counts on the "
        "window's hidden communicator, after which the target receives and applies the Put; each message costs "
        "an ack to the sender's other replica. A PSCW epoch sends the same Put and, at `MPI_Win_complete`, the "
        "count of operations to the target, whose `MPI_Win_wait` receives it and applies the Put; the origin's "
        "`MPI_Win_complete` waits for its data's acks. A passive-target epoch sends the lock event with the Put and, "
        "at `MPI_Win_unlock`, the count of operations; the target, in its `MPI_Barrier`, applies them from the "
        "progress loop once the replica of its rank that orders its events (its lowest live one) has handed each "
        "event to the other replica and seen it applied there, and answers with a done-word the origin's unlock "
        "waits for: two events per epoch, each a round trip between the target's replicas. Natively Open MPI's osc "
        "component writes into the target's memory and the fence is a barrier.",
    ]
    write("sdr_rma", lines)


if __name__ == "__main__":
    main()
