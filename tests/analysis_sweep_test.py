"""Tests of the sweep reader and plots of analysis/dtsim_analysis on a small sweep file written
here with h5py in the agreed layout (format "dtsim-sweep" 1, /sweep with point, one text column
per axis, status, message, metrics; attribute axes). Run by CTest as analysis_sweep."""
import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "analysis"))
import dtsim_analysis as dta  # noqa: E402

AXES = ["cluster.nics_per_node", "cluster.gpu"]


def write_sweep(path, version=1):
    text = h5py.string_dtype()
    dtype = np.dtype([("point", np.int32), (AXES[0], text), (AXES[1], text), ("status", text), ("message", text),
                      ("step_time_s", np.float64), ("mfu", np.float64)])
    rows = []
    for point, (nics, gpu) in enumerate((n, g) for g in ("A100", "H100") for n in ("1", "2", "4")):
        oom = gpu == "A100" and nics == "1"
        step = float("nan") if oom else 10.0 / int(nics) + (1.0 if gpu == "A100" else 0.5)
        rows.append((point, nics, gpu, "oom" if oom else "ok", "rank 0 needs 90 GiB" if oom else "",
                     step, float("nan") if oom else 0.1 * int(nics)))
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "dtsim-sweep"
        f.attrs["format_version"] = version
        d = f.create_dataset("sweep", data=np.array(rows, dtype=dtype))
        d.attrs["axes"] = ",".join(AXES)


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "sweep.h5")
    write_sweep(path)
    s = dta.load_sweep(path)
    assert s.attrs["axes"] == AXES
    assert len(s) == 6 and list(s["point"]) == list(range(6))
    assert s[AXES[0]].dtype.kind == "i", s.dtypes  # "1", "2", "4" become numbers
    assert s[AXES[1]].dtype == object and set(s[AXES[1]]) == {"A100", "H100"}  # names stay text
    assert list(s["status"]).count("oom") == 1 and s.loc[s["status"] == "oom", "message"].item().startswith("rank 0")
    assert dta.load(path).sweep.equals(s)  # load() exposes the same table

    ax = dta.plot_sweep(s, AXES[0], "step_time_s", by=AXES[1])
    lines = {line.get_label(): line for line in ax.lines}
    h100 = lines[f"{AXES[1]} = H100"]
    assert list(h100.get_xdata()) == [1, 2, 4] and np.allclose(h100.get_ydata(), [10.5, 5.5, 3.0])
    assert list(lines[f"{AXES[1]} = A100"].get_xdata()) == [2, 4]  # the oom point is not on the line...
    assert list(lines["not run (oom / invalid)"].get_xdata()) == [1]  # ...it is marked
    matplotlib.pyplot.close(ax.figure)

    grid = dta.sweep_grid(s, AXES[0], AXES[1], "step_time_s")
    assert list(grid.columns) == [1, 2, 4] and list(grid.index) == ["A100", "H100"]
    assert np.isnan(grid.loc["A100", 1]) and grid.loc["H100", 4] == 3.0
    ax = dta.plot_sweep_heatmap(s, AXES[0], AXES[1], "step_time_s")
    labels = {t.get_text() for t in ax.texts}
    assert labels == {"oom", "6", "3.5", "10.5", "5.5", "3"}, labels
    matplotlib.pyplot.close(ax.figure)

    try:
        dta.plot_sweep(s, "cluster.nodes")
        raise AssertionError("a missing axis plotted")
    except KeyError as e:
        assert "cluster.nodes" in str(e)
    old = os.path.join(tmp, "old.h5")
    write_sweep(old, version=7)
    try:
        dta.load_sweep(old)
        raise AssertionError("a version 7 sweep loaded")
    except dta.FormatError as e:
        assert old in str(e) and "format_version 7" in str(e)
print("analysis sweep: ok")
