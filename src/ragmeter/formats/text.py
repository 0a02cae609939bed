"""Reading text files: UTF-8 with the line of a bad byte named, a byte-order mark dropped."""

from __future__ import annotations

import codecs

from ragmeter.errors import located


def decode_utf8(
    data: bytes, path: object, kind: str, error: type[Exception], first_line: int = 1
) -> str:
    """Decode file bytes as UTF-8 (a BOM is dropped), naming the line of a bad byte.

    ``first_line`` is the line number of ``data``'s first line when it is one
    line of a file read as a stream.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + first_line
        column = bad.start - (data.rfind(b"\n", 0, bad.start) + 1) + 1
        message = (
            f"not UTF-8 text (byte 0x{data[bad.start]:02x} at column {column}); save it as UTF-8"
        )
        raise error(located(kind, path, line, message)) from None
