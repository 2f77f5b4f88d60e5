"""Draws the README's pictures from the BLOOM default scenario with dtsim_analysis:
analysis/figures/bloom-timeline.png (the compute stream of one rank per pipeline stage over the
step) and analysis/figures/bloom-memory.png (memory of the rank with the highest peak).

    /usr/bin/python3 analysis/make_readme_figures.py [TRACE.h5]

Without a trace it simulates the default scenario into build/bloom-176b.h5 first (if missing)."""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import dtsim_analysis as dta  # noqa: E402

trace = sys.argv[1] if len(sys.argv) > 1 else os.path.join(dta.runner.REPO, "build", "bloom-176b.h5")
if not os.path.exists(trace):
    dta.run_dtsim(trace)
t = dta.load(trace)
out = os.path.join(here, "figures")
os.makedirs(out, exist_ok=True)
for name, draw, size in (("bloom-timeline.png", lambda ax: dta.plot_timeline(t, streams=["compute"], ax=ax), (12, 4.5)),
                         ("bloom-memory.png", lambda ax: dta.plot_memory(t, ax=ax), (10, 3.5))):
    fig, ax = plt.subplots(figsize=size)
    draw(ax)
    path = os.path.join(out, name)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")
