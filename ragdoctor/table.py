"""Plain-text tables for the terminal (no dependency, aligned columns)."""
from __future__ import annotations

from collections.abc import Sequence


def fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def ci_text(lo: float | None, hi: float | None) -> str:
    """A 95% CI as 'lo-hi' to three decimals, '-' when it is not there; 'lo..hi' where an end is negative
    ('-0.880..0.091', never the ambiguous '-0.880-0.091')."""
    if lo is None or hi is None:
        return "-"
    a, b = f"{lo:.3f}", f"{hi:.3f}"
    return f"{a}..{b}" if a.startswith("-") or b.startswith("-") else f"{a}-{b}"


def render(headers: Sequence[str], rows: Sequence[Sequence], title: str | None = None) -> str:
    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    out = [title] if title else []
    out += [line, "  ".join("-" * w for w in widths)]
    for r in cells:
        out.append("  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


def _numeric(s: str) -> bool:
    try:
        float(s.rstrip("%"))
        return True
    except ValueError:
        return False
