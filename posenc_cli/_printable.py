"""Text from a file, made safe to print on a terminal.

Names, kinds and parameters read from a file may hold escape sequences (``\\x1b]8;;...``: a hyperlink, a cleared
screen, a rewritten title), carriage returns that overwrite what was printed, or bidirectional overrides that
reorder it. :func:`printable` shows every such character as a Python-style escape instead; what is printable
(letters, digits, punctuation, any script, the space) is kept. Rich markup is a second hazard: posenc prints file
text with ``markup=False`` or as :class:`rich.text.Text`, never as markup.
"""

from __future__ import annotations


def printable(text: object) -> str:
    r"""``str(text)`` with every non-printable character (``str.isprintable``) written as ``\xNN``, ``\uNNNN`` or
    ``\UNNNNNNNN``, and backslashes kept as they are.

    Examples
    --------
    >>> printable("pe\x1b[2J\r\u202eok")
    'pe\\x1b[2J\\r\\u202eok'
    """
    out = []
    for char in str(text):
        if char.isprintable():
            out.append(char)
        elif char == "\r":
            out.append("\\r")
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)
