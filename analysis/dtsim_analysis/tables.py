"""Turns HDF5 compound rows into pandas tables: h5py gives variable-length strings inside
compound datasets as bytes, and attributes as str or bytes depending on how they were written."""
import pandas as pd


def text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def decoded(rows) -> pd.DataFrame:
    """A DataFrame of the compound rows with every bytes column turned into str."""
    frame = pd.DataFrame(rows)
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(text)
    return frame
