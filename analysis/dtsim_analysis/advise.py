"""Reads the /advise table of `dtsim advise --output FILE.h5` (format "dtsim-advise" version 1):
one row per simulated layout (`role` = layout, ranked by `rank`, 1 = best, -1 when it did not run)
or link variant of a GPU type's best layout (`role` = variant: other `node_kind`, `nics_per_node`,
`nic_gbps`), with the layout columns, `status`, `message`, the simulated `step_time_s`,
`tokens_per_s`, `mfu`, `peak_memory_gib` and `train_days`, `gpu_hours`, `cost_usd` (NaN without a
price). The root attributes (model, tokens, global_batch, seq_len, ranked_by) are in `attrs`.

    a = load_advise("advise.h5")
    a[a.role == "layout"].sort_values("rank")
"""
import pandas as pd

from .formats import ADVISE_FORMAT, FormatError, open_checked
from .tables import decoded, text

_COLUMNS = ["rank", "gpu", "role", "num_gpus", "tp", "pp", "dp", "micro_batch", "recompute", "zero_stage", "node_kind",
            "status", "step_time_s", "tokens_per_s", "train_days", "cost_usd"]


def load_advise(path: str) -> pd.DataFrame:
    """The /advise table as a DataFrame with the file's root attributes in `attrs`."""
    f, found = open_checked(path)
    with f:
        if found != ADVISE_FORMAT or "advise" not in f:
            raise FormatError(f"{path}: not a dtsim advise file (format '{found}', no /advise table)")
        frame = decoded(f["advise"][:])
        missing = [c for c in _COLUMNS if c not in frame.columns]
        if missing:
            raise FormatError(f"{path}: /advise lacks the columns {', '.join(missing)}")
        for key in ["model", "ranked_by"]:
            frame.attrs[key] = text(f.attrs[key])
        for key in ["tokens", "global_batch", "seq_len"]:
            frame.attrs[key] = f.attrs[key].item()
    return frame
