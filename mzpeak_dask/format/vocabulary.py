"""The format's own words: CV accessions, buffer formats, entity types, data kinds.

Names follow ``../shared/docs/mzpeak-format.md`` verbatim. Everything here is a constant; the
offline CV lookups (accession <-> term name) live in :mod:`mzpeak_dask.format.cv`.
"""

from __future__ import annotations

import numpy as np

FORMAT_VERSION = "0.9.0"

# -- entity types and data kinds (mzpeak_index.json) ------------------------------------------
SPECTRUM = "spectrum"
CHROMATOGRAM = "chromatogram"
WAVELENGTH_SPECTRUM = "wavelength spectrum"

DATA_ARRAYS = "data arrays"
PEAKS = "peaks"
METADATA = "metadata"
OTHER = "other"

# context names used in key-value metadata and index column names
CONTEXT = {
    SPECTRUM: "spectrum",
    CHROMATOGRAM: "chromatogram",
    WAVELENGTH_SPECTRUM: "wavelength_spectrum",
}

MEMBER_NAMES = {
    (SPECTRUM, DATA_ARRAYS): "spectra_data.parquet",
    (SPECTRUM, PEAKS): "spectra_peaks.parquet",
    (SPECTRUM, METADATA): "spectra_metadata.parquet",
    (WAVELENGTH_SPECTRUM, METADATA): "wavelength_spectra_metadata.parquet",
    (WAVELENGTH_SPECTRUM, DATA_ARRAYS): "wavelength_spectra_data.parquet",
    (CHROMATOGRAM, METADATA): "chromatograms_metadata.parquet",
    (CHROMATOGRAM, DATA_ARRAYS): "chromatograms_data.parquet",
}
INDEX_MEMBER = "mzpeak_index.json"

# -- buffer formats (array index) ---------------------------------------------------------------
POINT = "point"
CHUNK_START = "chunk_start"
CHUNK_END = "chunk_end"
CHUNK_VALUES = "chunk_values"
CHUNK_ENCODING = "chunk_encoding"
CHUNK_SECONDARY = "chunk_secondary"
CHUNK_TRANSFORM = "chunk_transform"

PRIMARY = "primary"
SECONDARY = "secondary"

# -- binary data types ----------------------------------------------------------------------------
FLOAT64 = "MS:1000523"
FLOAT32 = "MS:1000521"
INT64 = "MS:1000522"
INT32 = "MS:1000519"
ASCII = "MS:1001479"

DTYPE_OF = {
    FLOAT64: np.dtype("<f8"),
    FLOAT32: np.dtype("<f4"),
    INT64: np.dtype("<i8"),
    INT32: np.dtype("<i4"),
}
ACCESSION_OF_DTYPE = {np.dtype(v).str: k for k, v in DTYPE_OF.items()}
DTYPE_CODE = {FLOAT64: "f64", FLOAT32: "f32", INT64: "i64", INT32: "i32", ASCII: "ascii"}


def dtype_accession(dtype: np.dtype) -> str:
    """The CV accession of a numpy dtype (after normalising to little-endian)."""
    dt = np.dtype(dtype).newbyteorder("<")
    try:
        return ACCESSION_OF_DTYPE[dt.str]
    except KeyError:
        raise ValueError(f"no mzPeak binary data type for numpy dtype {dtype}") from None


# -- array types --------------------------------------------------------------------------------
MZ_ARRAY = "MS:1000514"
INTENSITY_ARRAY = "MS:1000515"
CHARGE_ARRAY = "MS:1000516"
SIGNAL_TO_NOISE_ARRAY = "MS:1000517"
TIME_ARRAY = "MS:1000595"
WAVELENGTH_ARRAY = "MS:1000617"
RESOLUTION_ARRAY = "MS:1002529"
BASELINE_ARRAY = "MS:1002530"
ION_MOBILITY_ARRAY = "MS:1002893"
MEAN_ION_MOBILITY_ARRAY = "MS:1002816"
MEAN_INVERSE_REDUCED_ION_MOBILITY_ARRAY = "MS:1003006"
RAW_ION_MOBILITY_ARRAY = "MS:1003007"
RAW_INVERSE_REDUCED_ION_MOBILITY_ARRAY = "MS:1003008"
MEAN_DRIFT_TIME_ARRAY = "MS:1002477"
RAW_DRIFT_TIME_ARRAY = "MS:1003153"
DECONVOLUTED_ION_MOBILITY_ARRAY = "MS:1003154"
NON_STANDARD_ARRAY = "MS:1000786"
TIC_CHROMATOGRAM = "MS:1000235"
BASE_PEAK_CHROMATOGRAM = "MS:1000628"

# short column names of the primary array of each type (Rust BufferName Display)
ARRAY_SHORT_NAME = {
    MZ_ARRAY: "mz",
    INTENSITY_ARRAY: "intensity",
    CHARGE_ARRAY: "charge",
    SIGNAL_TO_NOISE_ARRAY: "signal_to_noise",
    TIME_ARRAY: "time",
    WAVELENGTH_ARRAY: "wavelength",
    ION_MOBILITY_ARRAY: "ion_mobility",
    MEAN_ION_MOBILITY_ARRAY: "mean_ion_mobility",
    RAW_ION_MOBILITY_ARRAY: "raw_ion_mobility",
    DECONVOLUTED_ION_MOBILITY_ARRAY: "deconvoluted_ion_mobility",
    BASELINE_ARRAY: "baseline",
    RESOLUTION_ARRAY: "resolution",
    RAW_INVERSE_REDUCED_ION_MOBILITY_ARRAY: "raw_inverse_reduced_ion_mobility",
    MEAN_INVERSE_REDUCED_ION_MOBILITY_ARRAY: "mean_inverse_reduced_ion_mobility",
    RAW_DRIFT_TIME_ARRAY: "raw_drift_time",
    MEAN_DRIFT_TIME_ARRAY: "mean_drift_time",
}

# -- units --------------------------------------------------------------------------------------
UNIT_MZ = "MS:1000040"
UNIT_DETECTOR_COUNTS = "MS:1000131"
UNIT_MINUTE = "UO:0000031"
UNIT_SECOND = "UO:0000010"
UNIT_MILLISECOND = "UO:0000028"
UNIT_NANOMETER = "UO:0000018"
UNIT_ELECTRONVOLT = "UO:0000266"
UNIT_DIMENSIONLESS = "UO:0000186"
UNIT_ABSORBANCE = "UO:0000269"
UNIT_VOLT = "UO:0000218"
UNIT_VOLT_SECOND_PER_SQUARE_CM = "MS:1002814"
UNIT_PERCENT = "UO:0000187"

# short unit codes used in non-primary column names ({type}_{dtype}_{unit})
UNIT_CODE = {
    UNIT_MZ: "mz",
    "UO:0000221": "da",
    "UO:0000169": "ppm",
    UNIT_NANOMETER: "nm",
    UNIT_MINUTE: "min",
    UNIT_SECOND: "sec",
    UNIT_MILLISECOND: "msec",
    UNIT_VOLT_SECOND_PER_SQUARE_CM: "vspc",
    UNIT_DETECTOR_COUNTS: "dc",
    UNIT_ABSORBANCE: "au",
    "UO:0000266": "ev",
    UNIT_VOLT: "v",
    UNIT_DIMENSIONLESS: "dimensionless",
    UNIT_PERCENT: "pct",
}

# -- compression / encodings --------------------------------------------------------------------
NO_COMPRESSION = "MS:1000576"
ZLIB_COMPRESSION = "MS:1000574"
# "truncation, delta prediction and zlib compression", reused as delta
DELTA_ENCODING = "MS:1003089"
NUMPRESS_LINEAR = "MS:1002312"
NUMPRESS_PIC = "MS:1002313"
NUMPRESS_SLOF = "MS:1002314"
NUMPRESS_LINEAR_ZLIB = "MS:1002746"
NUMPRESS_PIC_ZLIB = "MS:1002747"
NUMPRESS_SLOF_ZLIB = "MS:1002748"

TRANSFORM_COLUMN_SUFFIX = {
    NUMPRESS_LINEAR: "numpress_linear",
    NUMPRESS_SLOF: "numpress_slof",
    NUMPRESS_PIC: "numpress_pic",
}

# null marking (mzpeak-format.md section 9 #2: written as the reference does)
NULL_MARKED_MAIN_AXIS = "MS:1003901"  # written on the m/z (rank 0) array
NULL_MARKED_INTENSITY = "MS:1003902"  # written on the intensity array
NULL_MARKING_TRANSFORMS = frozenset({NULL_MARKED_MAIN_AXIS, NULL_MARKED_INTENSITY})

# -- spectrum-level terms -----------------------------------------------------------------------
MS_LEVEL = "MS:1000511"
SCAN_POLARITY = "MS:1000465"
POSITIVE_SCAN = "MS:1000130"
NEGATIVE_SCAN = "MS:1000129"
SPECTRUM_REPRESENTATION = "MS:1000525"
CENTROID_SPECTRUM = "MS:1000127"
PROFILE_SPECTRUM = "MS:1000128"
SPECTRUM_TYPE = "MS:1000559"
MS1_SPECTRUM = "MS:1000579"
MSN_SPECTRUM = "MS:1000580"
SCAN_START_TIME = "MS:1000016"
LOWEST_OBSERVED_MZ = "MS:1000528"
HIGHEST_OBSERVED_MZ = "MS:1000527"
BASE_PEAK_MZ = "MS:1000504"
BASE_PEAK_INTENSITY = "MS:1000505"
TOTAL_ION_CURRENT = "MS:1000285"
NUMBER_OF_DATA_POINTS = "MS:1003060"
NUMBER_OF_PEAKS = "MS:1003059"
CHROMATOGRAM_TYPE = "MS:1000626"
SELECTED_ION_MZ = "MS:1000744"
CHARGE_STATE = "MS:1000041"
POSSIBLE_CHARGE_STATE = "MS:1000633"
PEAK_INTENSITY = "MS:1000042"
ISOLATION_WINDOW_TARGET_MZ = "MS:1000827"
ISOLATION_WINDOW_LOWER_OFFSET = "MS:1000828"
ISOLATION_WINDOW_UPPER_OFFSET = "MS:1000829"
COLLISION_ENERGY = "MS:1000045"
SCAN_WINDOW_LOWER_LIMIT = "MS:1000501"
SCAN_WINDOW_UPPER_LIMIT = "MS:1000500"
FILTER_STRING = "MS:1000512"
PRESET_SCAN_CONFIGURATION = "MS:1000616"
ION_INJECTION_TIME = "MS:1000927"
SPECTRUM_TITLE = "MS:1000796"
CUSTOM_SOFTWARE = "MS:1000799"
SHA1 = "MS:1000569"
SHA256 = "MS:1003151"
MZML_FORMAT = "MS:1000584"
MZXML_FORMAT = "MS:1000566"
MGF_FORMAT = "MS:1001062"
MZMLB_FORMAT = "MS:1002838"
SCAN_NUMBER_ONLY_NATIVE_ID = "MS:1000776"
MULTIPLE_PEAK_LIST_NATIVE_ID = "MS:1000774"
# the conversion step's term: PSI-MS (4.1.258) has "Conversion to mzML", "... to mzMLb" and
# others under MS:1000530 "file format conversion", none to mzPeak, so the parent term it is
CONVERSION_TO_MZPEAK = "MS:1000530"

CV_LIST = [
    {
        "id": "MS",
        "full_name": "PSI-MS",
        "uri": "https://raw.githubusercontent.com/HUPO-PSI/psi-ms-CV/master/psi-ms.obo",
        "version": None,  # filled from the bundled ontology at run time
    },
    {
        "id": "UO",
        "full_name": "UNIT-ONTOLOGY",
        "uri": "http://ontologies.berkeleybop.org/uo.obo",
        "version": None,
    },
]

# -- term families used to classify params: accession -> term name, every term below the parent in
#    psi-ms.obo 4.1.258 (tests/test_vocabulary.py checks them against the bundled CV) ----------
SPECTRUM_TYPES = {  # children of MS:1000559 spectrum type
    "MS:1000294": "mass spectrum",
    "MS:1000322": "charge inversion mass spectrum",
    "MS:1000325": "constant neutral gain spectrum",
    "MS:1000326": "constant neutral loss spectrum",
    "MS:1000328": "e/2 mass spectrum",
    "MS:1000341": "precursor ion spectrum",
    "MS:1000343": "product ion spectrum",
    "MS:1000579": "MS1 spectrum",
    "MS:1000580": "MSn spectrum",
    "MS:1000581": "CRM spectrum",
    "MS:1000582": "SIM spectrum",
    "MS:1000583": "SRM spectrum",
    "MS:1000620": "PDA spectrum",
    "MS:1000789": "enhanced multiply charged spectrum",
    "MS:1000790": "time-delayed fragmentation spectrum",
    "MS:1000804": "electromagnetic radiation spectrum",
    "MS:1000805": "emission spectrum",
    "MS:1000806": "absorption spectrum",
    "MS:1000928": "calibration spectrum",
}
CHROMATOGRAM_TYPES = {  # children of MS:1000626 chromatogram type
    "MS:1000235": "total ion current chromatogram",
    "MS:1000627": "selected ion current chromatogram",
    "MS:1000628": "basepeak chromatogram",
    "MS:1000810": "ion current chromatogram",
    "MS:1000811": "electromagnetic radiation chromatogram",
    "MS:1000812": "absorption chromatogram",
    "MS:1000813": "emission chromatogram",
    "MS:1001472": "selected ion monitoring chromatogram",
    "MS:1001473": "selected reaction monitoring chromatogram",
    "MS:1001474": "consecutive reaction monitoring chromatogram",
    "MS:1002715": "temperature chromatogram",
    "MS:1003019": "pressure chromatogram",
    "MS:1003020": "flow rate chromatogram",
    "MS:4000025": "precursor ion current chromatogram",
    "MS:4000104": "total ion currents",
}
ARRAY_TYPES = {  # children of MS:1000513 binary data array
    "MS:1000514": "m/z array",
    "MS:1000515": "intensity array",
    "MS:1000516": "charge array",
    "MS:1000517": "signal to noise array",
    "MS:1000595": "time array",
    "MS:1000617": "wavelength array",
    "MS:1000786": "non-standard data array",
    "MS:1000820": "flow rate array",
    "MS:1000821": "pressure array",
    "MS:1000822": "temperature array",
    "MS:1002477": "mean ion mobility drift time array",
    "MS:1002478": "mean charge array",
    "MS:1002529": "resolution array",
    "MS:1002530": "baseline array",
    "MS:1002742": "noise array",
    "MS:1002743": "sampled noise m/z array",
    "MS:1002744": "sampled noise intensity array",
    "MS:1002745": "sampled noise baseline array",
    "MS:1002816": "mean ion mobility array",
    "MS:1002893": "ion mobility array",
    "MS:1003006": "mean inverse reduced ion mobility array",
    "MS:1003007": "raw ion mobility array",
    "MS:1003008": "raw inverse reduced ion mobility array",
    "MS:1003143": "mass array",
    "MS:1003153": "raw ion mobility drift time array",
    "MS:1003154": "deconvoluted ion mobility array",
    "MS:1003155": "deconvoluted inverse reduced ion mobility array",
    "MS:1003156": "deconvoluted ion mobility drift time array",
    "MS:1003157": "scanning quadrupole position lower bound m/z array",
    "MS:1003158": "scanning quadrupole position upper bound m/z array",
    "MS:1003870": "index array",
}
BINARY_DATA_TYPES = {  # children of MS:1000518 binary data type
    "MS:1000519": "32-bit integer",
    "MS:1000520": "16-bit float",
    "MS:1000521": "32-bit float",
    "MS:1000522": "64-bit integer",
    "MS:1000523": "64-bit float",
    "MS:1001479": "null-terminated ASCII string",
}
COMPRESSIONS = {  # children of MS:1000572 binary data compression type
    "MS:1000574": "zlib compression",
    "MS:1000576": "no compression",
    "MS:1002312": "MS-Numpress linear prediction compression",
    "MS:1002313": "MS-Numpress positive integer compression",
    "MS:1002314": "MS-Numpress short logged float compression",
    "MS:1002746": "MS-Numpress linear prediction compression followed by zlib compression",
    "MS:1002747": "MS-Numpress positive integer compression followed by zlib compression",
    "MS:1002748": "MS-Numpress short logged float compression followed by zlib compression",
    "MS:1003088": "truncation and zlib compression",
    "MS:1003089": "truncation, delta prediction and zlib compression",
    "MS:1003090": "truncation, linear prediction and zlib compression",
    "MS:1003780": "zstd compression",
    "MS:1003781": "byte-shuffled zstd compression",
    "MS:1003782": "dictionary-encoded zstd compression",
    "MS:1003783": "MS-Numpress linear prediction compression followed by zstd compression",
    "MS:1003784": "MS-Numpress positive integer compression followed by zstd compression",
    "MS:1003785": "MS-Numpress short logged float compression followed by zstd compression",
    "MS:1003826": "coordinate grid encoding",
}
ION_MOBILITY_ATTRIBUTES = {  # children of MS:1002892 ion mobility attribute
    "MS:1001581": "FAIMS compensation voltage",
    "MS:1002476": "ion mobility drift time",
    "MS:1002815": "inverse reduced ion mobility",
    "MS:1003371": "SelexION compensation voltage",
    "MS:1003394": "SelexION separation voltage",
    "MS:1003450": "FAIMS compensation voltage ramp start",
    "MS:1003451": "FAIMS compensation voltage ramp end",
}
DISSOCIATION_METHODS = {  # children of MS:1000044 dissociation method
    "MS:1000133": "collision-induced dissociation",
    "MS:1000134": "plasma desorption",
    "MS:1000135": "post-source decay",
    "MS:1000136": "surface-induced dissociation",
    "MS:1000242": "blackbody infrared radiative dissociation",
    "MS:1000250": "electron capture dissociation",
    "MS:1000262": "infrared multiphoton dissociation",
    "MS:1000282": "sustained off-resonance irradiation",
    "MS:1000422": "beam-type collision-induced dissociation",
    "MS:1000433": "low-energy collision-induced dissociation",
    "MS:1000435": "photodissociation",
    "MS:1000598": "electron transfer dissociation",
    "MS:1000599": "pulsed q dissociation",
    "MS:1001880": "in-source collision-induced dissociation",
    "MS:1002000": "LIFT",
    "MS:1002472": "trap-type collision-induced dissociation",
    "MS:1002481": "higher energy beam-type collision-induced dissociation",
    "MS:1002678": "supplemental beam-type collision-induced dissociation",
    "MS:1002679": "supplemental collision-induced dissociation",
    "MS:1003246": "ultraviolet photodissociation",
    "MS:1003247": "negative electron transfer dissociation",
    "MS:1003294": "electron activated dissociation",
}
SCAN_POLARITIES = {  # children of MS:1000465 scan polarity
    "MS:1000129": "negative scan",
    "MS:1000130": "positive scan",
}
REPRESENTATIONS = {  # children of MS:1000525 spectrum representation
    "MS:1000127": "centroid spectrum",
    "MS:1000128": "profile spectrum",
}
POLARITY_CODES = {POSITIVE_SCAN: 1, NEGATIVE_SCAN: -1}
# the unit an ion-mobility value column implies for each ion mobility attribute
ION_MOBILITY_UNITS = {
    "MS:1002476": UNIT_MILLISECOND,  # ion mobility drift time
    "MS:1002815": UNIT_VOLT_SECOND_PER_SQUARE_CM,  # inverse reduced ion mobility
    "MS:1001581": UNIT_VOLT,  # FAIMS compensation voltage
}

# the names of the terms this package writes as params, verbatim from psi-ms.obo 4.1.258
# (tests/test_vocabulary.py checks them); ``Param.term(accession, ...)`` looks them up
TERM_NAMES = {
    **SPECTRUM_TYPES,
    **REPRESENTATIONS,
    **SCAN_POLARITIES,
    **DISSOCIATION_METHODS,
    **CHROMATOGRAM_TYPES,
    MS_LEVEL: "ms level",
    SCAN_START_TIME: "scan start time",
    LOWEST_OBSERVED_MZ: "lowest observed m/z",
    HIGHEST_OBSERVED_MZ: "highest observed m/z",
    BASE_PEAK_MZ: "base peak m/z",
    BASE_PEAK_INTENSITY: "base peak intensity",
    TOTAL_ION_CURRENT: "total ion current",
    FILTER_STRING: "filter string",
    SCAN_WINDOW_LOWER_LIMIT: "scan window lower limit",
    SCAN_WINDOW_UPPER_LIMIT: "scan window upper limit",
    SELECTED_ION_MZ: "selected ion m/z",
    CHARGE_STATE: "charge state",
    POSSIBLE_CHARGE_STATE: "possible charge state",
    PEAK_INTENSITY: "peak intensity",
    ISOLATION_WINDOW_TARGET_MZ: "isolation window target m/z",
    ISOLATION_WINDOW_LOWER_OFFSET: "isolation window lower offset",
    ISOLATION_WINDOW_UPPER_OFFSET: "isolation window upper offset",
    COLLISION_ENERGY: "collision energy",
    SPECTRUM_TITLE: "spectrum title",
    NON_STANDARD_ARRAY: "non-standard data array",
    SHA1: "SHA-1",
    SHA256: "SHA-256",
    CUSTOM_SOFTWARE: "custom unreleased software tool",
    CONVERSION_TO_MZPEAK: "file format conversion",
    MZML_FORMAT: "mzML format",
    MZXML_FORMAT: "ISB mzXML format",
    MGF_FORMAT: "Mascot MGF format",
    MZMLB_FORMAT: "mzMLb format",
    SCAN_NUMBER_ONLY_NATIVE_ID: "scan number only nativeID format",
    MULTIPLE_PEAK_LIST_NATIVE_ID: "multiple peak list nativeID format",
}
