"""The 1-byte latency gaps of issue #23 taken apart: 2 copies per rank on 2
cores vs native, and SDR vs two native runs at once, by counts that do not
depend on the machine being quiet (per process and per round trip: system
calls, sched_yield, futex calls, context switches, MPI calls, CPU time) and by
latencies of variants run in the same invocation, round after round, so that
the ratios compare runs made under the same load.

    .venv/bin/python bench/run_latency_parts.py [--rounds 5] [--before REV]

Every variant runs bench/hops.c (a 1-byte ping-pong of a known number of
round trips, its loop bracketed so that a kernel trace counts exactly that
loop).  Counts come from one run of each variant under `perf record` with
tracepoints (system calls, context switches) and uprobes on libmpi's
point-to-point calls (MPI messages per round trip, per process role); without
perf (or its permission) the counts are left out.  Goal 2's variants also run
once under `perf record -e cpu-clock`: where their loops' CPU goes (the
scheduler, echo's library, malloc, the MPI library).  --before REV adds `echo-2`
as echo was at commit REV (its tree taken with git archive, its library built
as any echo build), in the same rounds as the current one.

Writes bench/results/latency_parts.md (the README links it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from results_file import measured_by, run_together, write  # bench/ itself is on the path of a script run from it

from echo.build import MPI, detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
ROOT_ARGS = ["--allow-run-as-root"] if os.geteuid() == 0 else []
# run_sdr.py's options for every SDR-goal run: no binding, idle processes yield
SDR_BIND = ["--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"]
MPI_CALLS = ("Send", "Isend", "Recv", "Irecv", "Iprobe", "Improbe", "Mrecv")
PROBE_GROUP = "echolatency"
HOPS_LINE = re.compile(r"^hops (\d+) (\d+) ([\d.]+) (\d+) (-?\d+)$")


@dataclass
class Variant:
    name: str
    what: str
    argv: Callable[[Path], list[list[str]]]  # one command per job started at once (two for "two natives")
    goal: int  # 1: copies, 2: SDR
    args: tuple[str, ...] = ()  # bench/hops.c's after its iterations


@dataclass
class Sample:
    latency: float  # one-way µs, the slowest job's
    cpu: dict[str, list[float]] = field(default_factory=dict)  # role -> CPU ns per round trip, one per process
    waited: dict[str, list[float]] = field(default_factory=dict)  # role -> ns runnable without a core, per round trip


def hops_lines(text: str) -> list[tuple[float, int, int]]:
    """(one-way µs, CPU ns, ns runnable without a core) of each hops line."""
    return [(float(m[3]), int(m[4]), int(m[5])) for line in text.splitlines() if (m := HOPS_LINE.match(line.strip()))]


def roles_of(run_dir: Path) -> dict[int, str]:
    """pid -> role of each process of an echo run ("representative", "copy", "replica 0", ...)."""
    procs = {}
    for line in (run_dir / "plan").read_text().splitlines():
        w = line.split()
        if w and w[0] == "proc":
            procs[int(w[1])] = f"replica {w[3]}" if w[5] == "replica" else w[5]
    out = {}
    for real, role in procs.items():
        status = run_dir / "procs" / f"{real}.status"
        if status.is_file():
            out[int(status.read_text().split()[3])] = role
    return out


def copy_outputs(run_dir: Path) -> str:
    return "".join(p.read_text() for p in sorted((run_dir / "output").glob("*.out"))) if (run_dir / "output").is_dir() \
        else ""


def run_once(v: Variant, work: Path, iters: int, prefix: Callable[[int], list[str]] = lambda job: []
             ) -> tuple[Sample, list[Path]]:
    """Runs the variant's jobs at once (job i under `prefix(i)`); its sample and the run directories of its echo
    jobs."""
    run_dir = work / f"run-{v.name.replace(' ', '_')}-{os.urandom(3).hex()}"  # an echo job's
    outs = run_together([[*prefix(i), *a, str(work / "hops"), str(iters), *v.args]
                         for i, a in enumerate(v.argv(run_dir))], timeout=600)
    echo_dirs = [run_dir] if run_dir.is_dir() else []
    lines = [hops_lines(o) for o in outs]
    latency = max(lat for job in lines for lat, _, _ in job)
    cpu: dict[str, list[float]] = defaultdict(list)
    waited: dict[str, list[float]] = defaultdict(list)
    first = "representative" if v.name.startswith("echo") else "replica 0" if v.name.startswith("SDR") else "rank"
    others = "copy" if v.name.startswith("echo") else "replica 1"  # their output is in the run directory
    for role, job in [(first, job) for job in lines] + [(others, hops_lines(copy_outputs(d))) for d in echo_dirs]:
        for _, ns, wait in job:
            cpu[role].append(ns / iters)
            waited[role].append(wait / iters)
    return Sample(latency, dict(cpu), dict(waited)), echo_dirs


# ---- counts from a kernel trace ----

def perf_usable() -> bool:
    if not shutil.which("perf"):
        return False
    p = subprocess.run(["perf", "record", "-q", "-o", "/dev/null", "-e", "syscalls:sys_enter_sched_yield", "true"],
                       capture_output=True, text=True)
    return p.returncode == 0


def add_probes(libmpi: Path) -> list[str]:
    """uprobes on libmpi's point-to-point calls (by address: the PMPI symbol and its MPI alias are one function);
    the events added."""
    syms = subprocess.run(["nm", "-D", str(libmpi)], capture_output=True, text=True).stdout.split("\n")
    added = []
    for call in MPI_CALLS:
        addr = next((w[0] for w in (s.split() for s in syms) if len(w) == 3 and w[2] == f"PMPI_{call}"), None)
        if addr and subprocess.run(["perf", "probe", "-q", "-x", str(libmpi), "-a", f"{PROBE_GROUP}:{call}=0x{addr}"],
                                   capture_output=True).returncode == 0:
            added.append(f"{PROBE_GROUP}:{call}")
    return added


def remove_probes() -> None:
    subprocess.run(["perf", "probe", "-q", "-d", f"{PROBE_GROUP}:*"], capture_output=True)


def traced_counts(v: Variant, work: Path, iters: int, probes: list[str]) -> dict[str, dict[str, float]]:
    """role -> event -> count per round trip, averaged over the processes of that role, from one traced run."""
    events = ["raw_syscalls:sys_enter", "syscalls:sys_enter_sched_yield", "syscalls:sys_enter_futex",
              "sched:sched_switch", *probes]
    datas = [work / f"trace{job}.data" for job in range(2)]

    def prefix(job: int) -> list[str]:
        return ["perf", "record", "-q", "-m", "16M", "-o", str(datas[job]), *[x for e in events for x in ("-e", e)],
                "--"]

    _, dirs = run_once(v, work, iters, prefix)
    text = ""
    for data in (d for d in datas if d.is_file()):
        script = subprocess.run(["perf", "script", "-i", str(data), "-F", "comm,tid,event,trace"],
                                capture_output=True, text=True)
        if "lost" in script.stderr.lower():
            print(f"{v.name}: the trace lost events: {script.stderr.strip()}", file=sys.stderr)
        text += script.stdout
        data.unlink()
    per_tid: dict[int, Counter] = defaultdict(Counter)
    for line in text.splitlines():
        w = line.split(None, 3)
        if len(w) < 3 or w[0] != "hops-run":  # only the measured loop (bench/hops.c renames its thread for it)
            continue
        event = w[2].rstrip(":")
        event = {"raw_syscalls:sys_enter": "syscalls", "syscalls:sys_enter_sched_yield": "sched_yield",
                 "syscalls:sys_enter_futex": "futex"}.get(event, event.split(":")[-1])
        if event == "sched_switch":
            state = re.search(r"prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)", line)
            event = "slept" if state and state[1].startswith(("S", "D")) else \
                "core to the job" if state and state[2] == "hops-run" else "core to others"
        per_tid[int(w[1])][event] += 1
    roles = {}
    for d in dirs:
        roles.update(roles_of(d))
    first = "rank" if not dirs else "?"
    by_role: dict[str, list[Counter]] = defaultdict(list)
    for tid, counts in per_tid.items():
        by_role[roles.get(tid, first)].append(counts)
    return {role: {e: sum(c[e] for c in cs) / len(cs) / iters for e in set().union(*cs)}
            for role, cs in by_role.items()}


# ---- where the CPU goes: a sampled profile ----

PROFILED = ("two natives", "acks natively", "SDR")  # goal 2's variants: what SDR's layer adds to the same messages
# what each sample's function is part of, by its library (and, in the kernel and libc, its function)
SHARES = ("context switch", "sched_yield", "other kernel", "malloc/free", "echo", "MPI", "program", "other")
SWITCH = {"finish_task_switch.isra.0", "finish_task_switch", "__schedule", "schedule", "__switch_to",
          "__switch_to_asm", "exit_to_user_mode_loop", "__rseq_handle_notify_resume"}
ALLOC = ("malloc", "calloc", "free", "_int_malloc", "_int_free", "__libc_calloc", "__libc_malloc", "__libc_free",
         "cfree", "realloc", "malloc_consolidate", "tcache")


def share_of(sym: str, dso: str) -> str:
    lib = dso.rsplit("/", 1)[-1]
    if lib == "[kernel.kallsyms]":
        return "context switch" if sym in SWITCH else "sched_yield" if "sched_yield" in sym else "other kernel"
    if lib.startswith("libc.so"):
        return "sched_yield" if "sched_yield" in sym else "malloc/free" if sym.startswith(ALLOC) else "other"
    if lib.startswith("libecho"):
        return "echo"
    if lib.startswith(("libmpi", "libopen-pal", "libopen-rte", "libpmix", "libucp", "libucs", "libuct")):
        return "MPI"
    return "program" if lib == "hops" else "other"


def profile_shares(v: Variant, work: Path, iters: int) -> dict[str, float]:
    """Share of the measured loop's CPU samples (perf's cpu-clock, every process of the variant) in each of
    SHARES, from one profiled run."""
    datas = [work / f"profile{job}.data" for job in range(2)]

    def prefix(job: int) -> list[str]:
        return ["perf", "record", "-q", "-e", "cpu-clock", "-F", "10000", "-o", str(datas[job]), "--"]

    run_once(v, work, iters, prefix)
    counts: Counter = Counter()
    for data in (d for d in datas if d.is_file()):
        script = subprocess.run(["perf", "script", "-i", str(data), "--comm", "hops-run", "-F", "ip,sym,dso"],
                                capture_output=True, text=True).stdout
        for line in script.splitlines():
            m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)\s*$", line)
            if m:
                counts[share_of(m[1], m[2])] += 1
        data.unlink()
    total = sum(counts.values())
    return {k: counts[k] / total for k in SHARES} if total else {}


# ---- the variants ----

def echo_argv(echorun: list[str], run_dir: Path, args: list[str]) -> list[str]:
    return [*echorun, "--no-store", "--run-dir", str(run_dir), "-n", "2", *args]


def variants(mpi: MPI, before: list[str] | None) -> list[Variant]:
    mpirun = [mpi.mpirun, *ROOT_ARGS]
    echorun = [str(BIN / "echorun")]
    out = [
        Variant("native", "mpirun -n 2 (bound to cores: what run_replication.py's native column runs)",
                lambda d: [[*mpirun, "-n", "2"]], 1),
        Variant("native unbound", "mpirun -n 2 --bind-to none", lambda d: [[*mpirun, "-n", "2", "--bind-to", "none"]],
                1),
        Variant("native yielding", "mpirun -n 2 --bind-to none --mca mpi_yield_when_idle 1 (as Open MPI makes every "
                "process of a node it sees oversubscribed)",
                lambda d: [[*mpirun, "-n", "2", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"]], 1),
        Variant("echo-1", "echorun --clones 1 (interception only)",
                lambda d: [echo_argv(echorun, d, ["--clones", "1"])], 1),
        Variant("echo-1 unbound", "echorun --clones 1 --mpirun-args '--bind-to none' (interception only, placed as "
                "echo-2's processes are: Open MPI binds none on an oversubscribed node)",
                lambda d: [echo_argv(echorun, d, ["--clones", "1", "--mpirun-args", "--bind-to none"])], 1),
        Variant("echo-2", "echorun --clones 2 (4 processes, --oversubscribe)",
                lambda d: [echo_argv(echorun, d, ["--clones", "2"])], 1),
        Variant("echo-2 no yield", "echorun --clones 2 --host localhost:4 --mpirun-args '--bind-to none': the "
                "same 4 unbound processes on a host that mpirun, given 4 slots, does not mark oversubscribed, so "
                "Open MPI does not make them yield when idle",
                lambda d: [echo_argv(echorun, d, ["--clones", "2", "--host", "localhost:4", "--mpirun-args",
                                                  "--bind-to none"])], 1),
    ]
    if before:
        out.append(Variant("echo-2 before", "echorun --clones 2 as echo was before these changes (--before)",
                           lambda d: [echo_argv(before, d, ["--clones", "2"])], 1))
    out += [
        Variant("native 2", "mpirun -n 2 " + " ".join(SDR_BIND) + " (run_sdr.py's native)",
                lambda d: [[*mpirun, "-n", "2", *SDR_BIND]], 2),
        Variant("two natives", "two such native runs at once (run_sdr.py's baseline)",
                lambda d: [[*mpirun, "-n", "2", *SDR_BIND]] * 2, 2),
        Variant("acks natively", "bench/hops.c acks: SDR's messages (2 worlds, each message acked to the sender's "
                "replica in the other world, which waits for it) with 4 native processes, without the SDR layer",
                lambda d: [[*mpirun, "-n", "4", *SDR_BIND]], 2, ("acks",)),
        Variant("SDR", "echorun --mode sdr --replicas 2 (run_sdr.py's options)",
                lambda d: [echo_argv(echorun, d, ["--mode", "sdr", "--replicas", "2", "--mpirun-args",
                                                  " ".join(SDR_BIND[1:])])], 2),
    ]
    return out


def before_echorun(rev: str, work: Path) -> list[str]:
    """An echorun command running echo as it was at commit `rev` (its Python package and preload sources)."""
    tree = work / f"echo-{rev}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "echo", "collectors", "server", "preload"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return ["env", f"PYTHONPATH={tree}", sys.executable, "-c",
            "import sys; from echo.cli import echorun_entry; sys.exit(echorun_entry())"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds of every variant (the best of each is kept)")
    ap.add_argument("--iters", type=int, default=20000, help="round trips per timed run")
    ap.add_argument("--trace-iters", type=int, default=5000, help="round trips per traced run")
    ap.add_argument("--before", metavar="REV", help="also run echo-2 as it was at this commit")
    a = ap.parse_args()
    mpi = detect_mpi()
    ensure_library(mpi)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([mpi.mpicc, "-O2", "-o", str(work / "hops"), str(HERE / "hops.c")], check=True)
        before = before_echorun(a.before, work) if a.before else None
        vs = variants(mpi, before)
        if before:  # its library is built once, before the rounds
            run_once(next(v for v in vs if v.name == "echo-2 before"), work, 100)
        samples: dict[str, list[Sample]] = defaultdict(list)
        for r in range(a.rounds):
            for v in vs:
                samples[v.name].append(run_once(v, work, a.iters)[0])
            print(f"round {r + 1}: " + ", ".join(f"{k} {s[-1].latency:.3f}" for k, s in samples.items()),
                  file=sys.stderr, flush=True)
        counts: dict[str, dict[str, dict[str, float]]] = {}
        profiles: dict[str, dict[str, float]] = {}
        if perf_usable():
            ldd = subprocess.run(["ldd", str(work / "hops")], capture_output=True, text=True).stdout
            libmpi = next((w[2] for w in (line.split() for line in ldd.splitlines()) if len(w) > 2
                           and w[0].startswith("libmpi.so")), None)
            remove_probes()  # a run stopped before its end may have left them
            probes = add_probes(Path(libmpi)) if libmpi else []
            try:
                for v in vs:
                    counts[v.name] = traced_counts(v, work, a.trace_iters, probes)
            finally:
                remove_probes()
            profiles = {v.name: profile_shares(v, work, a.iters) for v in vs if v.name in PROFILED}
    report(vs, samples, counts, profiles, a)


def fmt(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def report(vs: list[Variant], samples: dict[str, list[Sample]], counts: dict[str, dict[str, dict[str, float]]],
           profiles: dict[str, dict[str, float]], a: argparse.Namespace) -> None:
    best = {k: min(s.latency for s in ss) for k, ss in samples.items()}

    def paired(num: str, den: str) -> str:
        """best / best, and the median of the rounds' own ratios (each round ran both under the same load)."""
        rs = [x.latency / y.latency for x, y in zip(samples[num], samples[den], strict=True)]
        return f"{best[num] / best[den]:.2f} (rounds: median {median(rs):.2f}, {min(rs):.2f}-{max(rs):.2f})"

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "# 1-byte latency taken apart: copies and SDR",
        "",
        measured_by("bench/run_latency_parts.py") + f", {a.rounds} rounds of every variant (each round runs them all, "
        f"one after the other), {a.iters} round trips per run; counts from one traced run of {a.trace_iters} round "
        f"trips. Load average when written: {load} (the machine was shared: the latencies move with the load, the "
        "ratios of one round less, the counts hardly).",
        "",
        "## Variants",
        "",
        *[f"- **{v.name}**: {v.what}" for v in vs],
        "",
        "## One-way latency (µs, best of the rounds)",
        "",
        "| variant | best | median | per round trip and process (µs): CPU used; runnable but without a core |",
        "|---|---:|---:|---|",
    ]
    for v in vs:
        ss = samples[v.name]
        cpu: dict[str, list[float]] = defaultdict(list)
        waited: dict[str, list[float]] = defaultdict(list)
        for s in ss:
            for role, xs in s.cpu.items():
                cpu[role] += xs
            for role, xs in s.waited.items():
                waited[role] += xs
        cpus = "; ".join(f"{role} {median(xs) / 1000:.2f}; {median(waited[role]) / 1000:.2f}"
                         for role, xs in sorted(cpu.items()))
        lines.append(f"| {v.name} | {fmt(best[v.name])} | {fmt(median(s.latency for s in ss))} | {cpus} |")
    ratios = [("echo-2", "native"), ("echo-2", "native unbound"), ("echo-2 no yield", "native"),
              ("echo-2", "echo-2 no yield"), ("echo-1", "native"), ("echo-1 unbound", "native unbound"),
              ("echo-2 no yield", "echo-1 unbound"), ("native unbound", "native"),
              ("native yielding", "native unbound"), ("echo-2 before", "native"), ("echo-2", "echo-2 before"),
              ("SDR", "two natives"), ("acks natively", "two natives"), ("SDR", "acks natively"),
              ("two natives", "native 2")]
    lines += ["", "## Ratios (paired: the same rounds)", "", "| ratio | best / best (median and range of the rounds) |",
              "|---|---|"]
    lines += [f"| {n} / {d} | {paired(n, d)} |" for n, d in ratios if n in samples and d in samples]
    if counts:
        events = ["syscalls", "sched_yield", "futex", "core to the job", "core to others", "slept", *MPI_CALLS]
        lines += ["", "## Counts per round trip, per process (one traced run)", "",
                  "System calls (all, sched_yield, futex), context switches of the measured loop's thread "
                  "(switched out while runnable, preempted or yielding, for another process of the job in its loop "
                  "(*core to the job*) or for any other task, other work on the machine included (*core to "
                  "others*); or asleep) and MPI calls it made (uprobes on libmpi: the application's and echo's "
                  "own).", "",
                  "| variant | process | " + " | ".join(events) + " |",
                  "|---|---|" + "---:|" * len(events)]
        for v in vs:
            for role, c in sorted(counts.get(v.name, {}).items()):
                lines.append(f"| {v.name} | {role} | " + " | ".join(f"{c.get(e, 0):.2f}" for e in events) + " |")
    if profiles:
        lines += ["", "## Where the measured loop's CPU goes (one profiled run)", "",
                  f"Share of the CPU samples of the loop's threads (perf record -e cpu-clock -F 10000, {a.iters} "
                  "round trips, every process of the variant), by what the sampled function is part of: the "
                  "kernel switching processes (finish_task_switch and the scheduler), sched_yield (the system call, "
                  "both sides), the rest of the kernel, libc's malloc and free, echo's library, the MPI library "
                  "(libmpi, libopen-pal, PMIx, UCX), the program.", "",
                  "| variant | " + " | ".join(SHARES) + " |", "|---|" + "---:|" * len(SHARES)]
        lines += [f"| {name} | " + " | ".join(f"{100 * p.get(k, 0):.1f}%" for k in SHARES) + " |"
                  for name, p in profiles.items() if p]
    lines += ["", "## What the figures say", "", *findings(samples, counts, profiles), ""]
    write("latency_parts", lines)


def findings(samples: dict[str, list[Sample]], counts: dict[str, dict[str, dict[str, float]]],
             profiles: dict[str, dict[str, float]]) -> list[str]:
    """A paragraph per goal, its numbers taken from this invocation's measurements."""
    best = {k: min(s.latency for s in ss) for k, ss in samples.items()}

    def ratio(num: str, den: str) -> float:
        """the median of the rounds' paired ratios: each round ran both under the same load"""
        return median(x.latency / y.latency for x, y in zip(samples[num], samples[den], strict=True))

    def cpu(name: str, role: str) -> float:
        return median(x for s in samples[name] for x in s.cpu.get(role, [])) / 1000

    def count(name: str, role: str, event: str) -> float:
        return counts.get(name, {}).get(role, {}).get(event, 0.0)

    out = []
    before = "echo-2 before" in samples
    was = (f"Before these changes (*echo-2 before*, {ratio('echo-2 before', 'native'):.1f}x native in the same "
           f"rounds) each copy made {count('echo-2 before', 'copy', 'sched_yield'):.2f} sched_yield and "
           f"{count('echo-2 before', 'copy', 'futex'):.2f} futex calls per round trip, slept "
           f"{count('echo-2 before', 'copy', 'slept'):.2f} times, and used {cpu('echo-2 before', 'copy'):.2f} µs "
           f"of CPU per round trip. ") if before else ""
    def waited(name: str, role: str) -> float:
        return median(x for s in samples[name] for x in s.waited.get(role, [])) / 1000

    no_yield = ratio("echo-2", "echo-2 no yield")

    out.append(
        "**Goal 1: 2 copies per rank on 2 cores, 1-byte ping-pong <= 1.5x native.** echorun runs 4 processes "
        "on 2 cores, so mpirun marks the node oversubscribed (PMIx's PMIX_NODE_OVERSUBSCRIBED) and Open MPI then "
        "sets mpi_yield_when_idle itself in every process (ompi/instance/instance.c, v5.0.x: "
        "`if (ompi_mpi_oversubscribed) ompi_mpi_yield_when_idle = true`), over any value the user gave, "
        "`--mca mpi_yield_when_idle 0` included, and echorun's plan sets nothing about it: every idle turn of "
        "the progress engine is a sched_yield. The copies, which turned the progress engine once before each "
        "sleep, yielded there, and found the representative's next message when they came back: instead of "
        "sleeping they polled, a yield at each look. " + was +
        f"Now (*echo-2*) a copy makes {count('echo-2', 'copy', 'syscalls'):.2f} system calls per round trip and "
        f"uses {cpu('echo-2', 'copy'):.2f} µs of CPU; "
        + (f"*echo-2* / *echo-2 before* = {ratio('echo-2', 'echo-2 before'):.2f}, and " if before else "") +
        f"*echo-2* is "
        f"{ratio('echo-2', 'native'):.2f}x *native* (median of the rounds' ratios; best / best "
        f"{best['echo-2'] / best['native']:.2f}x). What is left: the representatives' own yields, "
        f"{count('echo-2', 'representative', 'sched_yield'):.2f} per round trip, "
        f"*echo-2* / *echo-2 no yield* = {no_yield:.2f} (*echo-2 no yield*, the same processes on a host mpirun "
        f"does not mark oversubscribed, is {ratio('echo-2 no yield', 'native'):.2f}x native; natively, *native "
        f"yielding* / *native unbound* = {ratio('native yielding', 'native unbound'):.2f})"
        + (": they cost that much" if no_yield > 1.1 else
           ": no gain from dropping them under this load" if no_yield >= 0.9 else
           ": without them it was slower under this load, where other work waits for the cores") +
        f"; and the interception with its records, *echo-1* / *native* = {ratio('echo-1', 'native'):.2f} bound, "
        f"{ratio('echo-1 unbound', 'native unbound'):.2f} unbound (*native unbound* / *native* = "
        f"{ratio('native unbound', 'native'):.2f}). The representatives waited "
        f"{waited('echo-2', 'representative'):.3f} µs per round trip for a core (runnable, not running; the ranks "
        f"of *native unbound* "
        f"{waited('native unbound', 'rank'):.3f} µs, the copies {waited('echo-2', 'copy'):.3f} µs). Turning the "
        "representatives' yield off is no fix: a copy runs the application's computation as its representative "
        "does, so a host with copies is oversubscribed whenever "
        "the application computes, and representatives that spin without yielding while they wait take the "
        "cores their copies need (as when a copy receives a large message as an MPI message while its "
        "representative waits for it).")
    acks_cpu = cpu("acks natively", "rank")
    out.append(
        "**Goal 2: SDR 1-byte latency <= 1.5x two native runs at once.** "
        f"*SDR* / *two natives* = {ratio('SDR', 'two natives'):.2f} "
        f"(best / best {best['SDR'] / best['two natives']:.2f}). "
        f"Per round trip each replica sends {count('SDR', 'replica 0', 'Isend'):.2f} messages (the data and the "
        f"ack of what it received) and posts {count('SDR', 'replica 0', 'Irecv'):.2f} receives, where a native "
        f"rank sends {count('two natives', 'rank', 'Send'):.2f} and receives "
        f"{count('two natives', 'rank', 'Recv'):.2f}. "
        f"The same messages sent natively, each send waiting for its ack from the other world (*acks natively*), "
        f"cost {ratio('acks natively', 'two natives'):.2f}x *two natives*: the acks and the lock-step of the two "
        f"worlds they impose; the SDR layer in front of Open MPI costs the rest, *SDR* / *acks natively* = "
        f"{ratio('SDR', 'acks natively'):.2f}: its CPU per round trip is {cpu('SDR', 'replica 0'):.2f} µs per "
        f"replica against {acks_cpu:.2f} µs for the same messages natively, with "
        f"{count('SDR', 'replica 0', 'sched_yield'):.2f} sched_yield calls per round trip (Open MPI's, and the "
        "layer's own after 64 idle polls, sdr_spin) against "
        f"{count('acks natively', 'rank', 'sched_yield'):.2f}. The ack protocol is unchanged here; replicas "
        "share cores in every column (4 processes on 2 cores)." + profile_finding(profiles))
    return [x for paragraph in out for x in (paragraph, "")]

def profile_finding(profiles: dict[str, dict[str, float]]) -> str:
    """What the profile says of goal 2: how much of the replicas' CPU is the scheduler's, how much the layer's."""
    sdr, acks = profiles.get("SDR"), profiles.get("acks natively")
    if not sdr or not acks:
        return ""

    def sched(p: dict[str, float]) -> float:
        return 100 * (p["context switch"] + p["sched_yield"])

    return (f" Where the CPU goes (profile above): the replicas' loops spend {sched(sdr):.0f}% of their samples in "
            f"the kernel switching processes and in sched_yield ({sched(acks):.0f}% for the same messages "
            f"natively), {100 * sdr['echo']:.0f}% in echo's library and {100 * sdr['malloc/free']:.0f}% in malloc "
            f"and free (a record per message kept until its acks; natively "
            f"{100 * acks['malloc/free']:.0f}%), {100 * sdr['MPI']:.0f}% in Open MPI "
            f"({100 * acks['MPI']:.0f}% natively): on 2 cores shared by 4 processes a round trip is mostly "
            f"the scheduler's, and the layer's own code and allocations are "
            f"{100 * (sdr['echo'] + sdr['malloc/free']):.0f}% of it. SDR-MPI's setting (a core per replica) "
            "cannot be measured on this machine.")


if __name__ == "__main__":
    main()
