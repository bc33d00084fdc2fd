"""The PSI-MS terms a Thermo ``.raw`` file's values become (names verbatim from psi-ms.obo
4.1.258; ``tests/readers/test_thermo_terms.py`` checks them), and the instrument model term of
a model name, looked up in the vocabulary bundled with psims.

Thermo's enumerations arrive as integers (fisher-py registers pythonnet's enum codec); the
tables below are keyed by those values (ThermoFisher.CommonCore.Data.FilterEnums)."""

from __future__ import annotations

from ..format.cv import psi_ms_below
from ..model.records import Param

THERMO_RAW_FORMAT = Param("Thermo RAW format", "MS:1000563")
THERMO_NATIVE_ID = Param("Thermo nativeID format", "MS:1000768")
SERIAL_NUMBER = ("instrument serial number", "MS:1000529")
THERMO_MODEL = ("Thermo Fisher Scientific instrument model", "MS:1000483")
SUPPLEMENTAL_CID = ("supplemental collision-induced dissociation", "MS:1002679")
SUPPLEMENTAL_HCD = ("supplemental beam-type collision-induced dissociation", "MS:1002678")

# ActivationType -> dissociation method (as msconvert maps them: HCD is beam-type CID)
ACTIVATIONS = {
    0: ("collision-induced dissociation", "MS:1000133"),
    1: ("infrared multiphoton dissociation", "MS:1000262"),
    2: ("electron capture dissociation", "MS:1000250"),
    3: ("pulsed q dissociation", "MS:1000599"),
    4: ("electron transfer dissociation", "MS:1000598"),
    5: ("beam-type collision-induced dissociation", "MS:1000422"),
    9: ("negative electron transfer dissociation", "MS:1003247"),
    11: ("ultraviolet photodissociation", "MS:1003246"),
}
# MassAnalyzerType -> (analyzer, detector)
ANALYZERS = {
    0: (("radial ejection linear ion trap", "MS:1000083"), ("electron multiplier", "MS:1000253")),
    1: (("quadrupole", "MS:1000081"), ("electron multiplier", "MS:1000253")),
    2: (("quadrupole", "MS:1000081"), ("electron multiplier", "MS:1000253")),
    3: (("time-of-flight", "MS:1000084"), ("electron multiplier", "MS:1000253")),
    4: (("orbitrap", "MS:1000484"), ("inductive detector", "MS:1000624")),
}
ANALYZER_NAMES = {0: "ITMS", 1: "TQMS", 2: "SQMS", 3: "TOFMS", 4: "FTMS", 5: "Sector"}
# IonizationModeType -> ionization type
IONIZATIONS = {
    1: ("chemical ionization", "MS:1000071"),
    3: ("electrospray ionization", "MS:1000073"),
    4: ("atmospheric pressure chemical ionization", "MS:1000070"),
    5: ("nanoelectrospray", "MS:1000398"),
    8: ("matrix-assisted laser desorption ionization", "MS:1000075"),
}


def term(pair: tuple[str, str], value: object = None, unit: str | None = None) -> Param:
    return Param(pair[0], pair[1], value, unit)


def thermo_models() -> dict[str, tuple[str, str]]:
    """Model name (lower case) -> (name, accession), every term below Thermo's two instrument
    model families in the bundled PSI-MS vocabulary."""
    return psi_ms_below(THERMO_MODEL[1], "MS:1000494")  # Thermo Fisher Scientific / Scientific


def model_param(model: str) -> Param:
    """The instrument model term of ``model`` (Thermo's name for it), or Thermo's generic
    model term with the name as its value when the vocabulary has no term of that name."""
    found = thermo_models().get(model.strip().lower())
    return term(found) if found else term(THERMO_MODEL, model.strip() or None)
