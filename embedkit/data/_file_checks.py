"""What a delimited file's bytes and fields say before pandas reads it (`embedkit.data.reading` reads every
file of documents; these are its checks): rows whose number of fields is not the header's, a
header that holds the other format's separator, and bytes that are not text in the encoding
given, a header that names a column twice, each said with the file, the rows or line, and the
fix.
"""

from __future__ import annotations

import codecs
import sys
from pathlib import Path

from ..storage.files import opener
from .documents import MAX_ROWS_SHOWN

__all__ = ["ENCODINGS", "SEPARATORS", "check_fields", "check_names", "not_decodable",
           "other_separator", "raw_bytes", "reading_encoding"]


#: what each separator is called, and the file name ending that reads a file with it
SEPARATORS = {",": ("comma", ".csv"), "\t": ("tab", ".tsv")}


def other_separator(header, sep: str) -> str:
    """A hint where a one-column header holds the other format's separator (a TSV named .csv,
    or the reverse), else ``""``."""
    other = "\t" if sep == "," else ","
    if len(header) == 1 and other in str(header[0]):
        name, ending = SEPARATORS[other]
        return (f"Its header holds {name}s: the file looks {name}-separated, but its name says "
                f"{SEPARATORS[sep][0]}-separated. Name it {ending} (or save it with "
                f"{SEPARATORS[sep][0]}s between its fields).")
    return ""


def check_fields(path: Path, sep: str, encoding: str) -> None:
    """Refuse a CSV/TSV whose rows do not all have the header's number of fields, naming the rows.

    pandas, told which columns to read, cuts a row with more fields than the header silently (a
    one-column file of unquoted texts with commas would be read up to each text's first comma),
    and fills a row with fewer with missing values. One streaming pass with the `csv` module
    (the quoting pandas reads: ``"`` around a field, ``""`` inside it) counts every row's fields.
    """
    import csv

    limit = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)  # a single text may be larger than the 128 kB default
    header, bad, first_line, counts, rows = None, [], 0, {}, 0
    try:
        with opener(path)(path, "rt", encoding=encoding, newline="") as fh:
            reader = csv.reader(fh, delimiter=sep, quotechar='"', doublequote=True)
            for fields in reader:
                if not fields:
                    continue  # a blank line: pandas skips it too
                if header is None:
                    header = len(fields)
                    check_names(path, fields)
                    continue
                if len(fields) != header:
                    if not bad:
                        first_line = reader.line_num
                    if len(bad) < MAX_ROWS_SHOWN:
                        bad.append(rows)
                    counts[len(fields)] = counts.get(len(fields), 0) + 1
                rows += 1
    except csv.Error as err:  # e.g. a NUL byte
        raise ValueError(f"{path} cannot be read as {SEPARATORS[sep][0]}-separated values: {err}."
                         ) from None
    finally:
        csv.field_size_limit(limit)
    if not counts:
        return
    n_bad = sum(counts.values())
    more = f" and {n_bad - len(bad)} more" if n_bad > len(bad) else ""
    found = " or ".join(f"{k}" for k in sorted(counts))
    name, _ = SEPARATORS[sep]
    if header == 1 and max(counts) > 1:
        fix = (f"The file reads as one text per line whose texts hold {name}s without quotes. "
               f"Quote every text that holds a {name} (\"...\"; pandas' to_csv does), or, where "
               "the file is one text per line, name it " +
               (".tsv (split at tabs only)." if sep == "," else ".csv and quote the texts."))
    else:
        fix = (f"A field that holds a {name} must be quoted (\"...\"; pandas' to_csv does), and "
               f"every row needs all {header} fields (an empty one as nothing between two "
               f"{name}s); or drop those rows.")
    rows_said = "row" if n_bad == 1 else "rows"
    raise ValueError(f"{path}: {n_bad:,} of {rows:,} data rows {'has' if n_bad == 1 else 'have'} "
                     f"{found} field{'s' if max(counts) > 1 else ''} where the header has {header} "
                     f"({rows_said} {', '.join(map(str, bad))}{more}, counted from 0; the first on "
                     f"line {first_line} of the file), so {'it' if n_bad == 1 else 'they'} cannot "
                     f"be read as written. {fix}")


def check_names(path: Path, names) -> None:
    """Refuse a header that names a column twice (pandas would read the second as ``name.1``,
    a name the file does not hold), naming it, where, and the fix. Empty names (a header's
    trailing separators) are no column anyone names, and are let be."""
    names, seen = [str(n) for n in names], set()
    for name in names:
        if name.strip() and name in seen:
            at = [k + 1 for k, n in enumerate(names) if n == name]
            raise ValueError(
                f"{path}: its header names the column {name!r} "
                f"{'twice' if len(at) == 2 else f'{len(at)} times'} (columns "
                f"{', '.join(map(str, at[:-1]))} and {at[-1]}, counted from 1), so which one a "
                f"command means cannot be told. Give each column its own name in the file (e.g. "
                f"{name}_2), then name the one to read.")
        seen.add(name)


def reading_encoding(encoding: str) -> str:
    """``encoding`` checked, as the readers use it: UTF-8 skips a byte-order mark."""
    try:
        name = codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise ValueError(f"encoding={encoding!r} is not an encoding Python knows; pass one such as "
                         "utf-8, cp1252, latin-1 or utf-16.") from None
    return "utf-8-sig" if name == "utf-8" else encoding


def raw_bytes(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of ``path`` (decompressed for ``.gz`` names)."""
    with opener(path)(path, "rb") as fh:
        return fh.read(size)


def not_decodable(path: Path, encoding: str) -> ValueError:
    """What a `UnicodeDecodeError` while reading ``path`` means: where, and the encoding to pass."""
    data = raw_bytes(path, 1 << 24)  # the first 16 MB say where, and what the bytes look like
    where = "a byte after its first 16 MB"
    try:
        data.decode(reading_encoding(encoding))
    except UnicodeDecodeError as found:
        if len(data) < 1 << 24 or found.start < len(data) - 4:  # not a character cut at 16 MB
            line = data.count(b"\n", 0, found.start) + 1
            where = f"byte 0x{data[found.start]:02x} on line {line}"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        guess = "utf-16"
    else:
        try:
            data.decode("cp1252")
            guess = "cp1252"
        except UnicodeDecodeError:
            guess = "latin-1"
    return ValueError(f"{path} is not {encoding} text: {where} cannot be decoded. Pass its encoding "
                      f"(encoding={guess}; on the command line --encoding {guess}): "
                      f"{ENCODINGS[guess]}; or save the file as UTF-8.")


#: what the suggested encodings are
ENCODINGS = {"utf-16": "it starts with a UTF-16 byte-order mark",
              "cp1252": "its bytes read as Windows' Western European text (cp1252, close to latin-1)",
              "latin-1": "latin-1 reads any bytes; check the accents after"}
