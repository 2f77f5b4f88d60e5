"""Sweep plots over a load_sweep() table: a metric against one axis (one line per value of a
second axis), and a heatmap of a metric over two axes. Points that did not run (status oom or
invalid) are shown as such, not dropped silently."""
import matplotlib.pyplot as plt
import numpy as np


def _check(sweep, columns):
    missing = [c for c in columns if c not in sweep.columns]
    if missing:
        raise KeyError(f"sweep has no column {', '.join(missing)} (axes: {', '.join(sweep.attrs.get('axes', []))})")


def plot_sweep(sweep, axis, metric="step_time_s", by=None, ax=None):
    """`metric` of the ok points against `axis`, one line per value of `by`; failed points are
    marked with x on the axis and their status. Returns the Axes."""
    _check(sweep, [axis, metric, "status"] + ([by] if by else []))
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    groups = sweep.groupby(by, sort=True) if by else [(None, sweep)]
    for value, points in groups:
        ok = points[points["status"] == "ok"].sort_values(axis)
        ax.plot(ok[axis], ok[metric], "o-", label=f"{by} = {value}" if by else metric)
    failed = sweep[sweep["status"] != "ok"]
    if not failed.empty:
        ax.plot(failed[axis], np.zeros(len(failed)), "x", color="red", label="not run (oom / invalid)")
        for _, p in failed.iterrows():
            ax.annotate(p["status"], (p[axis], 0), textcoords="offset points", xytext=(0, 6), ha="center",
                        fontsize=7, color="red")
    ax.set_xlabel(axis)
    ax.set_ylabel(metric)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return ax


def sweep_grid(sweep, x, y, metric):
    """The `metric` of ok points as a table (rows: y values, columns: x values), NaN where not ok."""
    ok = sweep[sweep["status"] == "ok"]
    grid = ok.pivot_table(index=y, columns=x, values=metric, aggfunc="first")
    return grid.reindex(index=sorted(sweep[y].unique()), columns=sorted(sweep[x].unique()))


def plot_sweep_heatmap(sweep, x, y, metric="step_time_s", ax=None):
    """Heatmap of sweep_grid() with each cell's value written in it (or the status of a failed point)."""
    _check(sweep, [x, y, metric, "status"])
    grid = sweep_grid(sweep, x, y, metric)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.1 * len(grid.columns) + 3, 0.6 * len(grid.index) + 2))
    image = ax.imshow(grid.to_numpy(dtype=float), cmap="viridis", aspect="auto")
    ax.figure.colorbar(image, ax=ax, label=metric)
    status = sweep.set_index([y, x])["status"]
    for i, yv in enumerate(grid.index):
        for j, xv in enumerate(grid.columns):
            value = grid.iloc[i, j]
            label = f"{value:.3g}" if np.isfinite(value) else str(status.get((yv, xv), "-"))
            ax.text(j, i, label, ha="center", va="center", fontsize=8, color="white" if np.isfinite(value) else "red")
    ax.set_xticks(range(len(grid.columns)))
    ax.set_xticklabels(grid.columns)
    ax.set_yticks(range(len(grid.index)))
    ax.set_yticklabels(grid.index)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(metric)
    return ax
