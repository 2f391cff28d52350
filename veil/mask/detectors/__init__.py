"""Detect and mask stage: the DLP-style detectors (one small class per infoType), by name."""

from __future__ import annotations

from veil.mask.detectors.base import Detector, PatternDetector
from veil.mask.detectors.contact import EmailDetector, IpAddressDetector, PhoneDetector, UrlDetector
from veil.mask.detectors.numbers import (AgeDetector, CaseCodeDetector, CreditCardDetector, DateDetector, DurationDetector,
                                         MoneyDetector, NumberDetector, QuantityDetector,
                                         StreetAddressDetector, UsSsnDetector)
from veil.mask.detectors.personal import (HealthDetector, LifeEventDateDetector, NationalityDetector, OccupationDetector,
                                          SpokenAgeDetector)
from veil.mask.detectors.spoken import SpelledNameDetector, SpokenAddressDetector, SpokenEmailDetector
from veil.mask.detectors.words import (DictionaryDetector, NonLatinNameDetector, SpelledWordDetector,
                                       TitledNameDetector, UsernameDetector)

#: detector name -> class; the DLP masker runs DEFAULT_DETECTORS unless told otherwise
DETECTORS: dict[str, type[Detector]] = {
    "email": EmailDetector,
    "url": UrlDetector,
    "ip_address": IpAddressDetector,
    "phone": PhoneDetector,
    "credit_card": CreditCardDetector,
    "us_ssn": UsSsnDetector,
    "number": NumberDetector,
    "case_code": CaseCodeDetector,
    "date": DateDetector,
    "age": AgeDetector,
    "duration": DurationDetector,
    "money": MoneyDetector,
    "quantity": QuantityDetector,
    "street_address": StreetAddressDetector,
    "spelled_word": SpelledWordDetector,
    "username": UsernameDetector,
    "spelled_name": SpelledNameDetector,
    "spoken_email": SpokenEmailDetector,
    "spoken_address": SpokenAddressDetector,
    "titled_name": TitledNameDetector,
    "non_latin_name": NonLatinNameDetector,
    "spoken_age": SpokenAgeDetector,
    "life_event_date": LifeEventDateDetector,
    "occupation": OccupationDetector,
    "health": HealthDetector,
    "nationality": NationalityDetector,
}
#: every detector but durations and counted or measured quantities: in conversation "two years", "ten minutes",
#: "two dogs" and "forty miles" are not personal (the neural tagger still finds the ones legal text ties to a
#: person, "sentenced to 14 years", "79 packages"); ``--set dlp.detectors=...,duration,quantity`` adds them back
DEFAULT_DETECTORS = tuple(d for d in DETECTORS if d not in ("duration", "quantity"))

__all__ = ["DETECTORS", "DEFAULT_DETECTORS", "Detector", "PatternDetector", "DictionaryDetector",
           *[cls.__name__ for cls in DETECTORS.values()]]
