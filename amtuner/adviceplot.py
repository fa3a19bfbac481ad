"""`amtuner advise --plot`: the distributions behind the advice's means, as a PNG (matplotlib,
the ``plot`` extra)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from amtuner.advise import Results


def plot(report: dict[str, Any], runs: list[Results], path: Path) -> None:
    """Per target, every job's completion time (left) and wait in ACCEPTED (right) over every
    seed, per value: boxes from the first to the third quartile, whiskers to the 5th and 95th
    percentiles, the mean a triangle; the current value grey, the recommended one blue. The
    means of the table can hide a tail: this shows it."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    targets = report["targets"]
    fig = Figure(figsize=(13, 3.8 * len(targets)), layout="constrained")
    axes = fig.subplots(len(targets), 2, squeeze=False)
    panels = (("jcts", "job completion time (s)"), ("waits", "wait in ACCEPTED (s)"))
    for row, (t, results) in enumerate(zip(targets, runs, strict=True)):
        labels = [r["label"] for r in t["rows"]]
        never = {r["label"] for r in t["rows"] if r["jct_s"] is None}
        for col, (key, title) in enumerate(panels):
            ax = axes[row][col]
            data = [
                [x for (label, _), figures in results.items() if label == value
                 for x in figures[key]] or [math.nan]
                for value in labels
            ]  # fmt: skip
            boxes = ax.boxplot(data, whis=(5, 95), showfliers=False, showmeans=True,
                               patch_artist=True)  # fmt: skip
            for value, box in zip(labels, boxes["boxes"], strict=True):
                box.set_facecolor(
                    "#4c72b0" if value == t["recommended"]
                    else "#bdbdbd" if value == t["current"] else "#ffffff"
                )  # fmt: skip
            ticks = [f"{v} (never)" if v in never else v for v in labels]
            ax.set_xticks(range(1, len(labels) + 1), ticks, rotation=45, fontsize=8)
            ax.set_title(f"{t['target'] or 'global'}: {title}", fontsize=10)
            ax.grid(axis="y", alpha=0.3)
    fig.suptitle(
        f"{report['trace']}: {report['workload']['apps']} apps, {report['scheduler']} "
        f"scheduler, {report['seeds']} seeds",
        fontsize=10,
    )
    fig.savefig(path, dpi=110)
