"""Scaling: how echo's cost grows with ranks and with copies per rank, against the native run of the same
program and rank count in the same invocation. Two programs: a loop of small collectives (bench/collectives.c:
Allreduce, Bcast, Barrier; latency-bound, the worst case for copies) and the proxy stencil (bench/proxy.c:
compute with halo exchanges and a residual Allreduce, like an application's time step).

    .venv/bin/python bench/run_scaling.py [--ranks 2 4] [--copies 1 2 3 4] [--repeat 2]

Every configuration runs `--repeat` times and the best time is kept. On a machine with fewer cores than
ranks x copies, processes take turns on the cores, so the ratios include the oversubscription itself (the
native run of the same ranks is oversubscribed only beyond one rank per core). Writes bench/results/scaling.md
and the plot bench/results/scaling.png.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from results_file import RESULTS_DIR, measured_by, write  # bench/ itself is on the path of a script run from it
from run_replication import best, compile_all, run

from echo.build import detect_mpi, ensure_library

PROGRAMS = {"collectives": ("us/iter", []), "proxy": ("s", ["100"])}


def plot(ratios: dict[str, dict[int, dict[int, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ratios), figsize=(5 * len(ratios), 3.6), squeeze=False)
    for ax, (program, by_ranks) in zip(axes[0], ratios.items(), strict=True):
        for n, by_copies in sorted(by_ranks.items()):
            ks = sorted(by_copies)
            ax.plot(ks, [by_copies[k] for k in ks], marker="o", label=f"{n} rank{'s' if n > 1 else ''}")
        ax.set_title(f"{program}: echo / native")
        ax.set_xlabel("copies per rank")
        ax.set_ylabel("time ratio")
        ax.set_yscale("log")
        ax.set_xticks(sorted({k for c in by_ranks.values() for k in c}))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])  # collectives.c roots a Bcast at rank 1
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    mpi = detect_mpi()
    ensure_library(mpi)
    ratios: dict[str, dict[int, dict[int, float]]] = {p: {} for p in PROGRAMS}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exes = compile_all(mpi.mpicc, work)
        for program, (unit, args) in PROGRAMS.items():
            for n in a.ranks:
                cmd = [exes[program], *args]
                native = best([run("native", n, cmd, mpi.mpirun, work) for _ in range(a.repeat)], program)
                for k in a.copies:
                    t = best([run(f"echo-{k}", n, cmd, mpi.mpirun, work) for _ in range(a.repeat)], program)
                    ratios[program].setdefault(n, {})[k] = t / native
                    rows.append(f"| {program} | {n} | {k} | {n * k} | {native:.3f} {unit} | {t:.3f} {unit} | "
                                f"{t / native:.2f} |")
                    print(rows[-1], flush=True)
    plot(ratios, RESULTS_DIR / "scaling.png")
    lines = [
        "# Scaling: cost by ranks and copies per rank",
        "",
        measured_by("bench/run_scaling.py") + f", best of {a.repeat}; {os.cpu_count()} cores, so beyond "
        f"{os.cpu_count()} processes they take turns on the cores; load average when written: "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg()) + ".",
        "",
        "![echo / native by copies per rank](scaling.png)",
        "",
        "| program | ranks | copies per rank | processes | native | echo | echo / native |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    write("scaling", lines)


if __name__ == "__main__":
    main()
