"""Plain-text tables of the terminal report: one module below the report and the roles' report sections, which
both lay out their rows with it."""

from __future__ import annotations


def table(rows: list[tuple[str, ...]]) -> str:
    """Rows as columns padded to their widest cell, without trailing blanks."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
