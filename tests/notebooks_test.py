"""Runs the notebooks of analysis/notebooks headless (nbclient, Debian's python3-nbclient and
python3-ipykernel) on traces the test run makes, and checks that every cell ran without error
and that every cell tagged "figure" drew a PNG.

    notebooks_test.py traces DTSIM OUTDIR           simulate the BLOOM default into OUTDIR/bloom-176b.h5
    notebooks_test.py run NOTEBOOK DTSIM OUTDIR     execute analysis/notebooks/NOTEBOOK against it

The notebooks read $DTSIM_TRACE (the trace), $DTSIM_BINARY and $DTSIM_OUT (where gpu_choice
writes its traces). The executed notebook is saved as OUTDIR/executed/NOTEBOOK for inspection."""
import os
import subprocess
import sys

import nbformat
from nbclient import NotebookClient

here = os.path.dirname(os.path.abspath(__file__))
notebooks = os.path.join(here, "..", "analysis", "notebooks")


def make_traces(binary, outdir):
    os.makedirs(outdir, exist_ok=True)
    subprocess.run([binary, "run", "--output", os.path.join(outdir, "bloom-176b.h5")], check=True,
                   stdout=subprocess.DEVNULL)


def run_notebook(name, binary, outdir):
    trace = os.path.join(outdir, "bloom-176b.h5")
    if not os.path.exists(trace):
        sys.exit(f"{trace} is missing: the notebook_traces test makes it")
    os.environ.update(DTSIM_TRACE=trace, DTSIM_BINARY=binary, DTSIM_OUT=os.path.join(outdir, name + ".out"),
                      MPLBACKEND="module://matplotlib_inline.backend_inline",
                      PYDEVD_DISABLE_FILE_VALIDATION="1")  # quiets ipykernel's debugger start-up notes
    nb = nbformat.read(os.path.join(notebooks, name), as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": notebooks}})
    try:
        client.execute()  # raises CellExecutionError naming the cell on the first error
    finally:
        os.makedirs(os.path.join(outdir, "executed"), exist_ok=True)
        nbformat.write(nb, os.path.join(outdir, "executed", name))
    figures = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{name} cell {index}: {errors[0].ename}: {errors[0].evalue}"
        if "figure" in cell.metadata.get("tags", []):
            pngs = [o for o in cell.outputs if "image/png" in o.get("data", {})]
            assert pngs, f"{name} cell {index} is tagged figure but drew no PNG:\n{cell.source}"
            figures += len(pngs)
    assert figures > 0, f"{name}: no figure cells"
    print(f"{name}: {len(nb.cells)} cells ran, {figures} figures")


if sys.argv[1] == "traces":
    make_traces(sys.argv[2], sys.argv[3])
else:
    run_notebook(sys.argv[2], sys.argv[3], sys.argv[4])
