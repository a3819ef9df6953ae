"""Where copies and replicas run, as a policy the user can name (`--copies same-host|other-host`): next to their
representative (a counter set or a tool measures the same host; a node failure takes them all) or on other hosts
(a fault of one host cannot corrupt or kill every copy of a rank). By default by role: counter sets, tools and
plain copies next to the representative; SDC copies (--sdc) and SDR replicas apart.

Placement needs the hosts: --host a:2,b:2 or --hostfile (a line per host, `name slots=N`). echo then writes an Open
MPI rankfile (real rank -> host, slot) and the plan prints each rank's hosts. Without hosts every process is on this
machine, and the launcher's own mapping applies."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

POLICIES = ("same-host", "other-host")


class PlacementError(ValueError):
    """The hosts cannot hold the copies as asked; the message says what to change."""


@dataclass(frozen=True)
class Placement:
    policy: str
    why: str  # "asked" or the role that decided it
    host_of: dict[int, str]  # real rank -> host
    slot_of: dict[int, int]  # real rank -> slot on its host

    def rankfile(self) -> str:
        """Open MPI's rankfile (mpirun --map-by rankfile:file=...)."""
        return "".join(f"rank {real}={self.host_of[real]} slot={self.slot_of[real]}\n" for real in sorted(self.host_of))

    def describe(self, ranks_copies: dict[int, list[int]]) -> str:
        """The plan's line: the policy, why, and the host of each copy of every rank (the first ones)."""
        shown = [f"rank {app}: {' '.join(self.host_of[r] for r in reals)}"
                 for app, reals in sorted(ranks_copies.items())[:8]]
        more = f"; ... {len(ranks_copies) - 8} more ranks" if len(ranks_copies) > 8 else ""
        return f"placement: copies {self.policy} ({self.why}): " + "; ".join(shown) + more


def read_hosts(hosts: str | None, hostfile: str | None) -> list[tuple[str, int]]:
    """(host, slots) from mpirun's --host (a,b:2) and --hostfile (name slots=N lines; # comments)."""
    out: list[tuple[str, int]] = []
    if hostfile:
        try:
            lines = Path(hostfile).read_text().splitlines()
        except OSError as e:
            raise PlacementError(f"--hostfile {hostfile}: {e.strerror}") from None
        for line in lines:
            words = line.split("#")[0].split()
            if words:
                slots = next((w.removeprefix("slots=") for w in words[1:] if w.startswith("slots=")), "1")
                out.append((words[0], _slots(slots, f"--hostfile {hostfile}: {line.strip()!r}")))
    for item in (hosts or "").split(","):
        if item.strip():
            name, _, slots = item.strip().partition(":")
            out.append((name, _slots(slots or "1", f"--host {hosts}")))
    return out


def _slots(text: str, where: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise PlacementError(f"{where}: slots must be a positive number")
    return int(text)


def default_policy(apart: str | None, roles: set[str], near: tuple[str, ...] = ()) -> tuple[str, str]:
    """The policy a run gets when --copies is not given, and the reason said in the plan; `apart`: why the mode
    keeps copies on other hosts (its `apart`: SDR's replicas, SDC's copies), None: their roles decide; `near`: the
    prefixes of the process roles that stay next to their representative (the roles' near_roles)."""
    if apart:
        return "other-host", apart
    if near and any(r.startswith(near) for r in roles):
        return "same-host", "counter sets and tools next to their representative"
    return "same-host", "copies next to their representative"


def place(procs: list[tuple[int, int, int]], hosts: list[tuple[str, int]], policy: str, why: str) -> Placement:
    """Assign (real, app, copy) processes to hosts: representatives spread over the hosts with the most free
    slots, each copy next to its representative or on a host no other copy of its rank uses."""
    free = {name: slots for name, slots in hosts}
    used = dict.fromkeys(free, 0)
    host_of: dict[int, str] = {}
    slot_of: dict[int, int] = {}
    by_rank: dict[int, list[tuple[int, int]]] = {}
    for real, app, copy in procs:
        by_rank.setdefault(app, []).append((copy, real))
    if sum(free.values()) < len(procs):
        raise PlacementError(f"{len(procs)} processes, and the hosts have {sum(free.values())} slots: give more "
                             "hosts or slots, or fewer copies")
    for app in sorted(by_rank):
        mine: list[str] = []
        for copy, real in sorted(by_rank[app]):
            if copy == 0 or policy == "other-host":
                room = [h for h in free if free[h] > 0 and h not in mine]
                if not room:
                    raise PlacementError(f"--copies other-host: rank {app} has {len(by_rank[app])} copies and only "
                                         f"{len(mine)} hosts have room for them: give more hosts, or --copies "
                                         "same-host")
                host = max(room, key=lambda h: free[h])  # ties: the first named
            else:
                host = mine[0]
                if free[host] == 0:
                    raise PlacementError(f"--copies same-host: no slot left on {host} for rank {app} copy {copy}: "
                                         "give that host more slots, or --copies other-host")
            mine.append(host)
            host_of[real], slot_of[real] = host, used[host]
            free[host] -= 1
            used[host] += 1
    return Placement(policy, why, host_of, slot_of)
