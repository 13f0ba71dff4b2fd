"""Writing chunks of telemetry: JSON Lines, CSV or Parquet part files, memory bounded.

A kind's rows go to `DIR/<kind>/part-NNNNN.<ext>`; a new part starts after `part_rows` rows (at a
chunk boundary). Parquet is written with pyarrow, one row group per chunk; CSV with pyarrow's
writer; JSON Lines by formatting whole columns with Arrow compute kernels (no Python loop per row).
A kind with no rows still gets one empty part, so the directory layout is complete.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

FORMATS = ("jsonl", "csv", "parquet")


def jsonl_bytes(table: pa.Table) -> bytes:
    """The rows of `table` as JSON Lines, keys in column order, nulls as `null`.

    Strings are written as they are, quoted: the simulator's names never contain `"` or `\\`.
    """
    if table.num_rows == 0:
        return b""
    parts: list[object] = []
    for i, name in enumerate(table.column_names):
        column = table.column(name)
        text = pc.cast(column, pa.string())
        if pa.types.is_string(column.type):
            text = pc.binary_join_element_wise('"', text, '"', "")
        parts += [("{" if i == 0 else ",") + f'"{name}":', pc.fill_null(text, "null")]
    parts.append("}\n")
    lines = pc.binary_join_element_wise(*parts, "").combine_chunks()
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return lines.buffers()[2].to_pybytes()[first:last]


class PartWriter:
    """The part files of one kind."""

    def __init__(self, directory: Path, schema: pa.Schema, fmt: str, part_rows: int = 5_000_000) -> None:
        if fmt not in FORMATS:
            raise ValueError(fmt)
        self.directory = directory
        self.schema = schema
        self.fmt = fmt
        self.part_rows = part_rows
        self.rows = 0
        self.files: list[Path] = []
        self._rows_in_part = 0
        self._sink: BinaryIO | None = None
        self._writer: pq.ParquetWriter | pcsv.CSVWriter | None = None
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("part-*"):
            old.unlink()

    def _open(self) -> None:
        path = self.directory / f"part-{len(self.files):05d}.{self.fmt}"
        self.files.append(path)
        self._rows_in_part = 0
        if self.fmt == "parquet":
            self._writer = pq.ParquetWriter(path, self.schema, compression="zstd")
        else:
            self._sink = path.open("wb")
            if self.fmt == "csv":
                self._writer = pcsv.CSVWriter(self._sink, self.schema)

    def _close_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._sink is not None:
            self._sink.close()
        self._writer, self._sink = None, None

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        if self._rows_in_part >= self.part_rows:
            self._close_part()
        if self._writer is None and self._sink is None:
            self._open()
        if self.fmt == "jsonl":
            assert self._sink is not None
            self._sink.write(jsonl_bytes(table))
        else:
            assert self._writer is not None
            self._writer.write_table(table)
        self._rows_in_part += table.num_rows
        self.rows += table.num_rows

    def close(self) -> list[Path]:
        if not self.files:
            self._open()
            if self.fmt == "parquet":
                assert isinstance(self._writer, pq.ParquetWriter)
                self._writer.write_table(self.schema.empty_table())
        self._close_part()
        return self.files
