"""The `--clones` option: how many copies each application rank gets."""

from __future__ import annotations


class CopyMapError(ValueError):
    """A `--clones` value that cannot be used; the message says how to fix it."""


def parse_copies(spec: str | None, nranks: int) -> list[int]:
    """Copies per application rank from a `--clones` value.

    `None` -> one copy each (interception only); `"3"` -> three copies of every
    rank; `"0=4,2=2"` -> four copies of rank 0, two of rank 2, one of the others;
    `"2,0=4"` -> two copies of every rank but rank 0, which has four.
    """
    if nranks < 1:
        raise CopyMapError(f"-n {nranks}: a job needs at least one rank")
    copies = [1] * nranks
    if spec is None:
        return copies
    default, per_rank = 1, {}
    items = [item.strip() for item in spec.split(",")]
    if not spec.strip() or any(not item for item in items):
        raise CopyMapError(f"--clones {spec!r}: empty item; expected e.g. --clones 3 or --clones 0=4,2=2")
    for item in items:
        rank_text, sep, count_text = item.partition("=")
        count = _positive(count_text if sep else rank_text, spec)
        if not sep:
            default = count
            continue
        rank = _rank(rank_text, spec, nranks)
        if rank in per_rank:
            raise CopyMapError(f"--clones {spec}: rank {rank} is given twice")
        per_rank[rank] = count
    copies = [per_rank.get(r, default) for r in range(nranks)]
    return copies


def _positive(text: str, spec: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CopyMapError(
            f"--clones {spec}: {text!r} is not a number; expected copies per rank (--clones 3) "
            "or per-rank copies (--clones 0=4,2=2)"
        ) from None
    if value < 1:
        raise CopyMapError(
            f"--clones {spec}: {value} copies; every rank needs at least 1 copy (1 = interception only)"
        )
    return value


def _rank(text: str, spec: str, nranks: int) -> int:
    try:
        rank = int(text)
    except ValueError:
        raise CopyMapError(f"--clones {spec}: rank {text!r} is not a number") from None
    if not 0 <= rank < nranks:
        raise CopyMapError(
            f"--clones {spec}: rank {rank} does not exist with -n {nranks} (ranks are 0..{nranks - 1})"
        )
    return rank
