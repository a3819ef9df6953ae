"""Production applications from Debian's packages, natively and under copies: same output, SDC clean, exit 0.

Each application is the one Debian builds against its Open MPI 4.1 (`apt-get install lammps gromacs cp2k
nwchem-openmpi quantum-espresso`); its small input is written here. Each runs on 2 ranks natively (that MPI's
mpirun), then under echorun with the same MPI (ECHO_MPICC=/usr/bin/mpicc.openmpi) in every mode of MODES. A run
is right when it exits as natively, prints the same results (the application's own result lines: energies,
thermodynamic output, with timings left out) and writes the same files, byte for byte, as the native run (files
that hold a date or the host are compared by the results they hold, not by bytes: said per application).

    .venv/bin/python bench/run_production.py [--apps lammps,gromacs] [--modes ...] [--name production]

Writes bench/results/<name>.md. Applications that are not installed are left out, saying so.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

BIN = Path(sys.executable).parent
MPICC = "/usr/bin/mpicc.openmpi"
MPIRUN = "/usr/bin/mpirun.openmpi"
RANKS = 2
# with and without the shared time-stamp counter (the default under --sdc): GROMACS gathers cycle counts read
# with rdtsc
MODES = ["--clones 2", "--clones 2 --sdc detect", "--clones 2 --sdc detect --tsc own", "--clones 3 --sdc vote",
         "--clones 3 --sdc vote --tsc own"]
LIMIT = 900  # seconds a run may take on a loaded 2-core machine before it counts as a hang


@dataclass
class App:
    name: str
    package: str
    binary: str
    argv: list[str]
    inputs: Callable[[Path], None]        # writes the input files into the work directory
    results: Callable[[Path, str], list[str]]  # the application's result lines, from its files and stdout
    files: list[str]                      # files compared byte for byte with the native run's
    env: dict[str, str] = field(default_factory=dict)


def lines_matching(pattern: str) -> Callable[[Path, str], list[str]]:
    """Result lines of stdout matching `pattern`."""
    rx = re.compile(pattern)
    return lambda _work, out: [ln.rstrip() for ln in out.splitlines() if rx.search(ln)]


def lammps_inputs(work: Path) -> None:
    (work / "in.melt").write_text("""# Lennard-Jones melt: thermo output, a sorted dump, a restart and a data file
units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 6 0 6 0 6
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
dump d all custom 50 melt.dump id type x y z
dump_modify d sort id
thermo 50
run 200
write_restart melt.restart
write_data melt.data
""")


def lammps_results(work: Path, _out: str) -> list[str]:
    """The thermo table of LAMMPS's log (its step lines: numbers only)."""
    step = re.compile(r"\s*\d+(\s+-?[\d.e+-]+)+\s*")
    return [ln for ln in (work / "log.lammps").read_text().splitlines() if step.fullmatch(ln)]


def gromacs_inputs(work: Path) -> None:
    """A box of 221 SPC waters (gmx solvate, OPLS-AA), 200 steps of PME MD with checkpoints every 50 steps (written
    to a temporary file and renamed, GROMACS's way) and energies, compressed coordinates and final coordinates."""
    (work / "topol.top").write_text('#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spc.itp"\n\n'
                                    "[ system ]\nwater box\n\n[ molecules ]\n")
    (work / "md.mdp").write_text("""integrator = md
dt = 0.002
nsteps = 200
nstenergy = 20
nstlog = 20
nstxout-compressed = 50
nstcalcenergy = 20
cutoff-scheme = Verlet
coulombtype = PME
rcoulomb = 0.9
rvdw = 0.9
constraints = h-bonds
tcoupl = v-rescale
tc-grps = System
tau-t = 0.1
ref-t = 300
ld-seed = 1234
gen-vel = yes
gen-temp = 300
gen-seed = 4321
""")
    quiet = dict(cwd=work, check=True, capture_output=True)
    subprocess.run(["gmx", "-quiet", "solvate", "-cs", "spc216.gro", "-box", "2.0", "2.0", "2.0", "-o", "conf.gro",
                    "-p", "topol.top"], **quiet)
    subprocess.run(["gmx", "-quiet", "grompp", "-f", "md.mdp", "-c", "conf.gro", "-p", "topol.top", "-o", "md.tpr"],
                   **quiet)
    for leftover in work.glob("#*#"):  # gmx's backups of the topology it edited
        leftover.unlink()


def gromacs_results(work: Path, _out: str) -> list[str]:
    """The energies GROMACS prints in md.log (the lines after each 'Energies' header), and whether it backed up a
    file it found (it must find none: the copies' files are not its own)."""
    log = (work / "md.log").read_text().splitlines() if (work / "md.log").exists() else []
    out = []
    for i, ln in enumerate(log):
        if ln.strip().startswith("Energies"):
            out += [x for x in log[i + 1:i + 9] if x.strip() and "load imb." not in x]  # a timing, not a result
    return out + sorted(p.name for p in work.glob("#*#"))


def cp2k_inputs(work: Path) -> None:
    (work / "h2o.inp").write_text("""&GLOBAL
  PROJECT h2o
  RUN_TYPE ENERGY_FORCE
&END GLOBAL
&FORCE_EVAL
  METHOD Quickstep
  &PRINT
    &FORCES ON
    &END FORCES
  &END PRINT
  &DFT
    BASIS_SET_FILE_NAME GTH_BASIS_SETS
    POTENTIAL_FILE_NAME GTH_POTENTIALS
    &MGRID
      CUTOFF 200
    &END MGRID
    &QS
      EPS_DEFAULT 1.0E-10
    &END QS
    &SCF
      MAX_SCF 30
      EPS_SCF 1.0E-6
      SCF_GUESS ATOMIC
    &END SCF
    &XC
      &XC_FUNCTIONAL PADE
      &END XC_FUNCTIONAL
    &END XC
  &END DFT
  &SUBSYS
    &CELL
      ABC 5.0 5.0 5.0
    &END CELL
    &COORD
      O   0.000000    0.000000   -0.065587
      H   0.000000   -0.757136    0.520545
      H   0.000000    0.757136    0.520545
    &END COORD
    &KIND H
      BASIS_SET DZVP-GTH
      POTENTIAL GTH-PADE-q1
    &END KIND
    &KIND O
      BASIS_SET DZVP-GTH
      POTENTIAL GTH-PADE-q6
    &END KIND
  &END SUBSYS
&END FORCE_EVAL
""")


def cp2k_results(work: Path, _out: str) -> list[str]:
    text = (work / "h2o.out").read_text() if (work / "h2o.out").exists() else ""
    return [ln.rstrip() for ln in text.splitlines()
            if re.search(r"ENERGY\||Total energy:|^\s+\d+\s+\d+\s+[A-Z][a-z]?(\s+-?\d+\.\d+){3}\s*$", ln)]


def nwchem_inputs(work: Path) -> None:
    (work / "h2o.nw").write_text("""start h2o
title "water scf"
geometry units angstrom
  O   0.000000    0.000000   -0.065587
  H   0.000000   -0.757136    0.520545
  H   0.000000    0.757136    0.520545
end
basis
  * library 6-31g
end
scf
  thresh 1e-8
end
task scf gradient
""")


def qe_inputs(work: Path) -> None:
    (work / "si.in").write_text("""&control
  calculation = 'scf'
  prefix = 'si'
  outdir = './tmp'
  pseudo_dir = '/usr/share/espresso/pseudo'
  tprnfor = .true.
  tstress = .true.
/
&system
  ibrav = 2, celldm(1) = 10.20, nat = 2, ntyp = 1,
  ecutwfc = 18.0
/
&electrons
  conv_thr = 1.0d-10
/
ATOMIC_SPECIES
 Si 28.086 Si.pz-vbc.UPF
ATOMIC_POSITIONS alat
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS automatic
 4 4 4 1 1 1
""")


APPS = [
    App("lammps", "lammps", "lmp", ["lmp", "-in", "in.melt"], lammps_inputs, lammps_results,
        ["melt.dump", "melt.restart", "melt.data"]),
    App("gromacs", "gromacs", "gmx_mpi", ["gmx_mpi", "mdrun", "-s", "md.tpr", "-ntomp", "1", "-reprod", "-notunepme",
                                          "-dlb", "no", "-cpt", "0.0001"],
        gromacs_inputs, gromacs_results, ["ener.edr", "traj_comp.xtc", "confout.gro"]),
    App("cp2k", "cp2k", "cp2k.psmp", ["cp2k.psmp", "-i", "h2o.inp", "-o", "h2o.out"], cp2k_inputs, cp2k_results,
        ["h2o-RESTART.wfn"], {"OMP_NUM_THREADS": "1"}),
    App("nwchem", "nwchem-openmpi", "nwchem.openmpi", ["nwchem.openmpi", "h2o.nw"], nwchem_inputs,
        lines_matching(r"Total SCF energy|^\s+\d+ [OH](\s+-?\d+\.\d+){6}\s*$"), []),  # h2o.movecs: a date
    App("quantum-espresso", "quantum-espresso", "pw.x", ["pw.x", "-in", "si.in"], qe_inputs,
        lines_matching(r"^!|total   stress|^\s+-?\d+\.\d+\s+-?\d+\.\d+\s+-?\d+\.\d+\s+-?[\d.]+\s+-?[\d.]+\s+-?[\d.]+$"
                       r"|atom\s+\d+ type\s+\d+\s+force"),
        ["tmp/si.save/charge-density.dat"], {"OMP_NUM_THREADS": "1"}),
]


@dataclass
class Outcome:
    rc: int
    seconds: float
    results: list[str]
    files: dict[str, bytes | None]
    sdc: str
    stderr: str


def run_one(app: App, argv_prefix: list[str], work: Path, env: dict[str, str]) -> Outcome:
    app.inputs(work)
    t = time.perf_counter()
    p = subprocess.Popen(argv_prefix + app.argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=LIMIT)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 15)
        out, err = p.communicate()
        rc = -1
    seconds = time.perf_counter() - t
    sdc = next((ln.split("SDC ", 1)[1] for ln in err.splitlines() if ln.startswith("echo: SDC (")), "")
    files = {f: (work / f).read_bytes() if (work / f).is_file() else None for f in app.files}
    (work / "stdout").write_text(out)
    (work / "stderr").write_text(err)
    return Outcome(rc, seconds, app.results(work, out), files, sdc, err)


def sdc_word(sdc: str) -> str:
    """'(detect): clean' of echorun's SDC line, without the details after it."""
    return re.sub(r"^(\(\w+\): \w+).*", r"\1", sdc)


def verdict(native: Outcome, run: Outcome) -> tuple[bool, str]:
    """Whether a run under echo is right, and what differs if not."""
    wrong = []
    if run.rc != native.rc:
        wrong.append("hang" if run.rc == -1 else f"exit {run.rc}")
    if run.results != native.results:
        wrong.append("results differ" if run.results else "no results")
    differ = [f for f, data in run.files.items() if data != native.files[f]]
    if differ:
        wrong.append("files differ: " + ", ".join(differ))
    if run.sdc and not run.sdc.startswith(("(detect): clean", "(vote): clean", "(stop): clean")):
        wrong.append("SDC " + sdc_word(run.sdc))
    return not wrong, "; ".join(wrong)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apps", default=",".join(a.name for a in APPS))
    ap.add_argument("--modes", default=";".join(MODES), help="';'-separated echorun options")
    ap.add_argument("--name", default="production")
    ap.add_argument("--keep", help="keep the work directories under this directory")
    args = ap.parse_args()
    chosen = [a for a in APPS if a.name in args.apps.split(",")]
    modes = [m for m in args.modes.split(";") if m]
    root = Path(args.keep or tempfile.mkdtemp(prefix="echo-production-"))
    data = Path(tempfile.mkdtemp(prefix="echo-production-data-"))
    base = dict(os.environ, ECHO_MPICC=MPICC, XDG_DATA_HOME=str(data))
    base.pop("ECHO_DB", None)
    native_prefix = [MPIRUN, "-n", str(RANKS), "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0
                                                                     else [])
    rows, left_out = [], []
    for app in chosen:
        if not shutil.which(app.binary):
            left_out.append(f"{app.name} (`apt-get install {app.package}`: not installed here)")
            continue
        env = dict(base, **app.env)
        work = root / app.name / "native"
        work.mkdir(parents=True, exist_ok=True)
        native = run_one(app, native_prefix, work, env)
        rows.append((app.name, "native", native.rc, native.seconds, "", "-" if native.rc == 0 else "native failed"))
        for mode in modes:
            work = root / app.name / re.sub(r"\W+", "_", mode).strip("_")
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            run = run_one(app, [str(BIN / "echorun"), "-n", str(RANKS), *mode.split()], work, env)
            ok, why = verdict(native, run)
            rows.append((app.name, mode, run.rc, run.seconds, sdc_word(run.sdc), "right" if ok else why))
            print(f"{app.name:18} {mode:26} rc={run.rc:<3} {run.seconds:6.1f}s {'right' if ok else why}",
                  flush=True)
    lines = ["# Production applications under copies (`bench/run_production.py`)", "",
             measured_by("bench/run_production.py") + f", {RANKS} ranks, Debian's Open MPI 4.1 ({MPICC}).", "",
             "A run is right when its exit status, the application's result lines (energies, thermodynamic output; "
             "timings left out) and the files it writes (byte for byte) are the native run's, and SDC is clean.", "",
             "| application | mode | exit | seconds | SDC | verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {a} | {m} | {rc} | {s:.1f} | {sdc} | {v} |" for a, m, rc, s, sdc, v in rows]
    lines += ["", "Files compared byte for byte: " + "; ".join(f"{a.name}: {', '.join(a.files)}" for a in chosen)]
    if left_out:
        lines += ["", "Left out: " + "; ".join(left_out)]
    write(args.name, lines + [""])
    shutil.rmtree(data, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
