"""Small SVG charts for the web pages: drawn on the server, so the pages need
no script and work offline. Every bar and point carries its number as text."""

from __future__ import annotations

from html import escape


def bars(title: str, labels: list[str], series: dict[str, list[float]], unit: str = "") -> str:
    """Grouped horizontal bars: one group per label, one bar per series (e.g. per copy)."""
    names = list(series)
    peak = max((v for vals in series.values() for v in vals), default=0) or 1
    row, bar_h, left, width = 16 * max(1, len(names)) + 10, 14, 220, 640
    height = 30 + row * len(labels) + 20
    colors = ["#2f6db5", "#e0802c", "#3a9a52", "#b8403b", "#7b5aa6", "#8c6d31", "#d35fa5", "#666"]
    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{width + left + 120}" '
           f'height="{height}" xmlns="http://www.w3.org/2000/svg">',
           f'<text x="0" y="16" class="title">{escape(title)}</text>']
    for i, label in enumerate(labels):
        y0 = 30 + i * row
        out.append(f'<text x="0" y="{y0 + 12}" class="label">{escape(label[:34])}</text>')
        for j, name in enumerate(names):
            v = series[name][i]
            w = max(1, int(width * v / peak))
            y = y0 + j * 16
            out.append(f'<rect x="{left}" y="{y}" width="{w}" height="{bar_h}" fill="{colors[j % len(colors)]}" '
                       f'data-series="{escape(name)}" data-label="{escape(label)}" data-value="{v:.17g}"/>')
            shown = f"{v:,.0f}" if float(v).is_integer() else f"{v:,.4g}"  # times keep their digits (1.304 s)
            out.append(f'<text x="{left + w + 4}" y="{y + 11}" class="value">{shown}{unit}</text>')
    legend_y = height - 6
    for j, name in enumerate(names):
        out.append(f'<rect x="{left + j * 110}" y="{legend_y - 10}" width="10" height="10" '
                   f'fill="{colors[j % len(colors)]}"/><text x="{left + j * 110 + 14}" y="{legend_y}" '
                   f'class="label">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def line(title: str, points: list[tuple[str, float]], marks: list[bool] | None = None, unit: str = "") -> str:
    """A line over labelled points (e.g. nights); marked points (e.g. diverged) are drawn red."""
    width, height, pad = 720, 220, 40
    if not points:
        return f'<p class="empty">{escape(title)}: no data</p>'
    peak = max(v for _, v in points) or 1
    step = (width - 2 * pad) / max(1, len(points) - 1)
    xy = [(pad + i * step, height - pad - (height - 2 * pad) * v / peak) for i, (_, v) in enumerate(points)]
    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{width}" height="{height}" '
           'xmlns="http://www.w3.org/2000/svg">', f'<text x="0" y="16" class="title">{escape(title)}</text>',
           '<polyline fill="none" stroke="#2f6db5" stroke-width="2" points="'
           + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy) + '"/>']
    for i, ((label, v), (x, y)) in enumerate(zip(points, xy, strict=True)):
        red = marks and marks[i]
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{"#c0392b" if red else "#2f6db5"}" '
                   f'data-label="{escape(label)}" data-value="{v:.17g}"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 12}" class="label" text-anchor="middle">{escape(label)}</text>')
        out.append(f'<text x="{x:.1f}" y="{y - 8:.1f}" class="value" text-anchor="middle">{v:.3g}{unit}</text>')
    out.append("</svg>")
    return "".join(out)


def timeline(title: str, length: int, marks: list[tuple[int, str]]) -> str:
    """Calls 0..length along a line, with a marker at each (call number, what) pair."""
    width, height, pad = 720, 70, 20
    length = max(length, 1)
    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{width}" height="{height}" '
           'xmlns="http://www.w3.org/2000/svg">', f'<text x="0" y="14" class="title">{escape(title)}</text>',
           f'<line x1="{pad}" y1="40" x2="{width - pad}" y2="40" stroke="#999"/>',
           f'<text x="{pad}" y="62" class="label">call 0</text>',
           f'<text x="{width - pad}" y="62" class="label" text-anchor="end">call {length}</text>']
    for call, what in marks:
        x = pad + (width - 2 * pad) * min(call, length) / length
        out.append(f'<circle cx="{x:.1f}" cy="40" r="5" fill="#c0392b" data-call="{call}">'
                   f'<title>{escape(what)}</title></circle>')
    out.append("</svg>")
    return "".join(out)


def status_timeline(title: str, rows: list[tuple[str, int, list[tuple[int, str]]]],
                    good: str = "recommended") -> str:
    """One bar per process along its calls (label, calls, [(call, status), ...]; each starts `good`): green while
    `good`, red while not."""
    left, width, row = 160, 560, 22
    height = 30 + row * len(rows) + 10
    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{left + width + 20}" '
           f'height="{height}" xmlns="http://www.w3.org/2000/svg">',
           f'<text x="0" y="16" class="title">{escape(title)}</text>']
    for i, (label, calls, changes) in enumerate(rows):
        y = 30 + i * row
        out.append(f'<text x="0" y="{y + 12}" class="label">{escape(label)}</text>')
        edges = [(0, good), *changes, (max(calls, 1), None)]
        for (start, status), (end, _) in zip(edges, edges[1:], strict=False):
            x0 = left + width * min(start, calls) / max(calls, 1)
            x1 = left + width * min(end, calls) / max(calls, 1)
            color = "#3a9a52" if status == good else "#c0392b"
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="14" fill="{color}" '
                       f'data-status="{status}" data-from="{start}" data-to="{end}">'
                       f'<title>{escape(label)}: {status} from call {start}</title></rect>')
    out.append("</svg>")
    return "".join(out)
