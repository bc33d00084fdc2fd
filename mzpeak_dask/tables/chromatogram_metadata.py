"""The packed chromatogram metadata tables: ``chromatogram``, ``precursor``, ``selected_ion``,
and ``product``.

``product`` (the SRM product isolation window) is not in the reference writer's output; it is
written as one more packed table so that nothing from the source is lost, and readers that do
not know it ignore it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from ..format import vocabulary as V
from ..model.records import ChromatogramRecord
from .auxiliary import AUXILIARY_LIST_TYPE, auxiliary_column
from .builder import StructBuilder
from .columns import TermColumn, promote
from .params import PARAM_LIST_TYPE, param_rows
from .spectrum_metadata import (
    ISOLATION_PROMOTED,
    ISOLATION_WINDOW_STRUCT,
    NUMBER_OF_DATA_POINTS,
    POLARITY,
    PrecursorTables,
    own_data_processing,
)

CHROMATOGRAM_TYPE = TermColumn("MS_1000626_chromatogram_type", pa.string(), V.CHROMATOGRAM_TYPES)
CHROMATOGRAM_TERMS = (POLARITY, CHROMATOGRAM_TYPE)

CHROMATOGRAM_TYPE_STRUCT = pa.struct(
    [
        pa.field("index", pa.uint64()),
        pa.field("id", pa.large_string()),
        pa.field(POLARITY.column, POLARITY.type),
        pa.field(CHROMATOGRAM_TYPE.column, CHROMATOGRAM_TYPE.type),
        pa.field(NUMBER_OF_DATA_POINTS, pa.uint64()),
        pa.field("data_processing_ref", pa.large_string()),
        pa.field("parameters", PARAM_LIST_TYPE),
        pa.field("auxiliary_arrays", AUXILIARY_LIST_TYPE),
        pa.field("number_of_auxiliary_arrays", pa.uint32()),
    ]
)
PRODUCT_TYPE_STRUCT = pa.struct(
    [pa.field("source_index", pa.uint64()), pa.field("isolation_window", ISOLATION_WINDOW_STRUCT)]
)


@dataclass
class ChromatogramTables:
    default_data_processing: str | None = None  # the run's default_data_processing_id
    chromatogram: StructBuilder = field(
        default_factory=lambda: StructBuilder(CHROMATOGRAM_TYPE_STRUCT)
    )
    precursors: PrecursorTables = field(default_factory=PrecursorTables)
    product: StructBuilder = field(default_factory=lambda: StructBuilder(PRODUCT_TYPE_STRUCT))
    _auxiliary: list = field(default_factory=list)

    def add(
        self, index: int, record: ChromatogramRecord, *, number_of_data_points: int, auxiliary: list
    ) -> None:
        row, rest = promote(record.params, {}, CHROMATOGRAM_TERMS)
        row.update(
            index=index,
            id=record.id,
            data_processing_ref=own_data_processing(
                record.data_processing_ref, self.default_data_processing
            ),
            parameters=param_rows(rest),
            number_of_auxiliary_arrays=len(auxiliary),
        )
        row[NUMBER_OF_DATA_POINTS] = number_of_data_points
        self.chromatogram.append(row)
        self._auxiliary.append(auxiliary)
        self.precursors.add(index, record.precursors)
        if record.product:
            window, rest = promote(record.product, ISOLATION_PROMOTED)
            window["parameters"] = param_rows(rest)
            self.product.append({"source_index": index, "isolation_window": window})

    @property
    def selected_ion_refs(self) -> list[str | None]:
        return self.precursors.selected_ion_refs

    def finish(self) -> dict[str, pa.StructArray]:
        return {
            "chromatogram": self.chromatogram.finish(
                {"auxiliary_arrays": auxiliary_column(self._auxiliary)}
            ),
            **self.precursors.finish(),
            "product": self.product.finish(),
        }
