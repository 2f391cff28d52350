"""Detect and mask stage: the DLP-style detectors (one small class per infoType; by name in veil.registry.detectors)."""

from __future__ import annotations

from veil.mask.detectors.base import Detector, PatternDetector
from veil.mask.detectors.contact import EmailDetector, IpAddressDetector, PhoneDetector, UrlDetector
from veil.mask.detectors.numbers import (AgeDetector, CaseCodeDetector, CreditCardDetector, DateDetector, DurationDetector,
                                         MoneyDetector, NumberDetector, QuantityDetector,
                                         StreetAddressDetector, UsSsnDetector)
from veil.mask.detectors.spoken import SpelledNameDetector, SpokenAddressDetector, SpokenEmailDetector
from veil.mask.detectors.words import (DictionaryDetector, NonLatinNameDetector, SpelledWordDetector,
                                       TitledNameDetector, UsernameDetector)

#: the detectors the DLP masker runs unless told otherwise, in the order it runs them (each one is
#: registered by name in veil.registry.detectors)
DEFAULT_DETECTORS: tuple[str, ...] = (
    "email", "url", "ip_address", "phone", "credit_card", "us_ssn", "number", "case_code", "date", "age", "duration",
    "money", "quantity", "street_address", "spelled_word", "username", "spelled_name", "spoken_email",
    "spoken_address", "titled_name", "non_latin_name",
)

__all__ = ["DEFAULT_DETECTORS", "Detector", "PatternDetector", "DictionaryDetector", "EmailDetector", "UrlDetector",
           "IpAddressDetector", "PhoneDetector", "CreditCardDetector", "UsSsnDetector", "NumberDetector",
           "CaseCodeDetector", "DateDetector", "AgeDetector", "DurationDetector", "MoneyDetector", "QuantityDetector",
           "StreetAddressDetector", "SpelledWordDetector", "UsernameDetector", "SpelledNameDetector",
           "SpokenEmailDetector", "SpokenAddressDetector", "TitledNameDetector", "NonLatinNameDetector"]
