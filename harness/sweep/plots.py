"""The sweep's curves as PNG: one figure a (client, partitions per member, figure), a panel a trigger, a line a style
against the group's size. A point with 3 usable repeats or more is their median with their range; with fewer, its
values as open circles (no line through them); a cell that counted for nothing (unsettled or invalid) is a cross at the
top of its panel, a point whose latency figure was saturated a square there (never a value)."""
from __future__ import annotations

from pathlib import Path


def draw(points: list[dict], out: Path, metrics: dict[str, tuple[str, str, float]]) -> list[str]:
    """Write one PNG a figure of `metrics` (name -> title, unit, divisor) into `out`; returns their file names."""
    if not points:
        return []
    import matplotlib
    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt
    names = []
    for client in sorted({p["client"] for p in points}):
        for ppm in sorted({p["partitions_per_member"] for p in points}):
            mine = [p for p in points if p["client"] == client and p["partitions_per_member"] == ppm]
            triggers = sorted({p["trigger"] for p in mine})
            for metric, (title, unit, scale) in metrics.items():
                fig, axes = plt.subplots(1, len(triggers), figsize=(5 * len(triggers), 4), squeeze=False)
                for ax, trigger in zip(axes[0], triggers):
                    _panel(ax, [p for p in mine if p["trigger"] == trigger], metric, scale)
                    ax.set_title(f"{trigger}")
                    ax.set_xlabel("members")
                    ax.set_ylabel(f"{title} ({unit})")
                axes[0][-1].legend(fontsize=8)
                fig.suptitle(f"{client}, {ppm} partitions a member: {title}")
                fig.tight_layout()
                name = f"{client}-{ppm}ppm-{metric}.png"
                fig.savefig(out / name, dpi=90)
                plt.close(fig)
                names.append(name)
    return names


def _panel(ax, points: list[dict], metric: str, scale: float) -> None:
    top = max([p[f"{metric}_max"] / scale for p in points if p[f"{metric}_max"] is not None] + [1])
    for style in sorted({p["style"] for p in points}):
        line = sorted((p for p in points if p["style"] == style), key=lambda p: p["members"])
        drawn = [p for p in line if p[f"{metric}_median"] is not None]
        ys = [p[f"{metric}_median"] / scale for p in drawn]
        low = [y - p[f"{metric}_min"] / scale for p, y in zip(drawn, ys)]
        high = [p[f"{metric}_max"] / scale - y for p, y in zip(drawn, ys)]
        bars = ax.errorbar([p["members"] for p in drawn], ys, yerr=[low, high], marker="o", capsize=3, label=style)
        colour = bars[0].get_color()
        few = [(p["members"], p[f"{metric}_{end}"] / scale) for p in line
               if p[f"{metric}_median"] is None and p[f"{metric}_n"] for end in ("min", "max")]
        if few:
            ax.scatter(*zip(*few), marker="o", facecolors="none", edgecolors=colour)
        uncounted = [p["members"] for p in line if p["unsettled"] or p["invalid"]]
        if uncounted:
            ax.scatter(uncounted, [top * 1.05] * len(uncounted), marker="x", s=60, color=colour)
        saturated = [p["members"] for p in line if p.get(f"{metric}_saturated")]
        if saturated:
            ax.scatter(saturated, [top * 1.09] * len(saturated), marker="s", s=30, facecolors="none", edgecolors=colour)
    ax.set_xscale("log")
    sizes = sorted({p["members"] for p in points})
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_ylim(bottom=min([0] + [p[f"{metric}_min"] / scale for p in points if p[f"{metric}_min"] is not None]),
                top=top * 1.14)
    ax.grid(True, alpha=0.3)
