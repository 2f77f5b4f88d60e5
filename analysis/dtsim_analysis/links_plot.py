"""Which links are hot: per directed link, the fraction of the step it was busy and its load
(bytes carried over what its bandwidth could carry in the step)."""
import matplotlib.pyplot as plt
from matplotlib.patches import Patch


def link_utilisation(trace):
    """/links with busy_fraction = busy_s / step and load = bytes / (bandwidth x step), hottest first."""
    step = trace.summary["step_time_s"]
    links = trace.links.copy()
    links["busy_fraction"] = links["busy_s"] / step
    links["load"] = links["bytes"] / (links["bandwidth_bytes_per_s"] * step)
    links["name"] = links["source"] + " → " + links["target"]
    return links.sort_values(["load", "id"], ascending=[False, True], ignore_index=True)


def plot_links(trace, top=15, ax=None):
    """Horizontal bars of the `top` most loaded links, coloured by link kind. Returns the Axes."""
    links = link_utilisation(trace).head(top)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.3 * len(links) + 1.5))
    kinds = list(dict.fromkeys(links["kind"]))
    colors = {k: f"C{i}" for i, k in enumerate(kinds)}
    ax.barh(range(len(links)), links["load"] * 100, color=[colors[k] for k in links["kind"]])
    ax.scatter(links["busy_fraction"] * 100, range(len(links)), marker="|", color="black", s=80, label="busy %")
    ax.set_yticks(range(len(links)))
    ax.set_yticklabels(links["name"], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("% of the step (bar: load = bytes / bandwidth; tick: busy time)")
    ax.set_title(f"{len(links)} most loaded links")
    handles = [Patch(color=colors[k], label=k) for k in kinds] + [ax.collections[0]]
    ax.legend(handles=handles, loc="lower right", fontsize=8)
    return ax
