"""Detect and mask stage: the DLP-style detectors (one small class per infoType), by name."""

from __future__ import annotations

from veil.mask.detectors.base import Detector, PatternDetector
from veil.mask.detectors.contact import EmailDetector, IpAddressDetector, PhoneDetector, UrlDetector
from veil.mask.detectors.numbers import (AgeDetector, CaseCodeDetector, CreditCardDetector, DateDetector, DurationDetector,
                                         MoneyDetector, NumberDetector, QuantityDetector,
                                         StreetAddressDetector, UsSsnDetector)
from veil.mask.detectors.personal import (HealthDetector, LifeEventDateDetector, NationalityDetector, OccupationDetector,
                                          ServiceDetector, SpokenAgeDetector, SpokenPriceDetector)
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
    "service": ServiceDetector,
    "spoken_price": SpokenPriceDetector,
}
#: every detector; durations and counted or measured quantities run on written documents only (``WRITTEN_ONLY``,
#: ``base.is_written``): in conversation "two years", "ten minutes", "two dogs" and "forty miles" are not personal
DEFAULT_DETECTORS = tuple(DETECTORS)

__all__ = ["DETECTORS", "DEFAULT_DETECTORS", "Detector", "PatternDetector", "DictionaryDetector",
           *[cls.__name__ for cls in DETECTORS.values()]]
