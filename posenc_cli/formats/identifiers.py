"""The one way a name becomes source code: every identifier posenc writes into C, C++, assembler or any other source
output is made here.

Names posenc writes into source come from two places. The command line (``--name``, ``--namespace``) is trusted, but
must still be a valid name: :func:`check_name` refuses anything else. Everything else (an array's key, an axis name,
a tensor, member or dataset name read from a file, the output file's stem) may come from an attacker, so it is never
pasted: :func:`identifier` makes a C identifier of it by a fixed mapping, and :func:`identifiers` refuses two names
that map to the same one. A writer of a source format calls these and nothing else to spell a symbol; strings that
are not symbols (a file name in ``#include`` or ``.incbin``, text in a comment) are escaped by the writer itself.

No double underscore, one rule. posenc builds identifiers from the name by appending to it (``PE_SEQ_LEN``,
``pe_cos``, ``PE_TABLE_ID``, the guard ``POSENC_PE_H``), and an identifier that holds ``__`` (or starts with ``_``) is
reserved to the implementation in C and C++. So a table's name (and each part of a namespace) never starts or ends
with ``_`` and never holds ``__``:

- a name the user gives (``--name``, ``--namespace``, ``name=``) that ends in ``_`` or holds ``__`` is refused, with
  a ``SpecError`` that says what is allowed (:func:`check_name`); it is never changed behind the user's back;
- a name posenc makes (the default name, from the output's stem: :func:`name_from_path`) is normalised by the
  mapping below: ``pe_.h`` gives ``pe``, ``for.h`` (a keyword) gives ``pe_for``, never ``for_`` (whose macros would
  be ``FOR__SEQ_LEN``).

The mapping (``xxd -i``'s, made strict):

1. every character that is not an ASCII letter, digit or ``_`` becomes ``_`` (so no punctuation, space, quote,
   bracket, newline or non-ASCII character survives);
2. runs of ``_`` fold to one, and a leading or trailing ``_`` is dropped (a leading underscore or a double one is
   reserved to the implementation in C and C++);
3. a whole name that does not start with a letter gets the prefix ``pe_`` (an empty one becomes ``pe``); a part
   (a suffix joined to a name by ``_``) may start with a digit, and an empty part becomes ``x``;
4. the result is cut to :data:`MAX_NAME` characters (then any trailing ``_`` dropped); a whole name that is a C/C++
   keyword gets the prefix ``pe_`` (``for`` becomes ``pe_for``), a part that is one gets a trailing ``_`` (``int``
   becomes ``int_``: a part always ends the identifier it is in, ``pe_int_`` or ``PE_INT_``, so that ``_`` is
   never doubled).

Rust (``rust=True``, what the Rust writer passes): the same mapping, and the keywords are those of C/C++ and
:data:`RUST_KEYWORDS` (strict, reserved and weak keywords of every edition), so ``match`` becomes ``pe_match`` or,
as a part, ``match_``. Rust has no raw identifier here: ``r#type`` maps to ``r_type`` like any other text. A name
the user gives is checked by :func:`check_name` as for C; the Rust writer uses it in upper case only, and no Rust
keyword is upper case (``Self`` becomes ``SELF``).

Examples
--------
>>> identifier('x[1]={0};__attribute__((constructor)) static void p(void)')
'x_1_0_attribute_constructor_static_void_p_void'
>>> identifier("../etc/passwd"), identifier("2048x512"), identifier("int"), identifier("int", part=True)
('etc_passwd', 'pe_2048x512', 'pe_int', 'int_')
>>> identifiers(["cos", "sin"], part=True)
['cos', 'sin']
>>> identifier("match", rust=True), identifier("r#type", part=True, rust=True), identifier("match", part=True)
('pe_match', 'r_type', 'match')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath

from ..errors import FormatError, SpecError

#: C89 to C23 and C++98 to C++23 keywords and alternative tokens: none may name a table.
KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
    co_await co_return co_yield compl concept const const_cast consteval constexpr constinit continue decltype
    default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
    int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
    reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct switch
    template this thread_local throw true try typedef typeid typename typeof typeof_unqual union unsigned using
    virtual void volatile wchar_t while xor xor_eq
    """.split()
)

#: Rust's keywords (the Reference, "Keywords"): strict and reserved ones of the 2015 to 2024 editions, and the weak
#: ones, which are identifiers everywhere but a few places (``union``, ``raw``, ``safe``, ``macro_rules``).
RUST_KEYWORDS = frozenset(
    """
    Self abstract as async await become box break const continue crate do dyn else enum extern false final fn for
    gen if impl in let loop macro macro_rules match mod move mut override priv pub raw ref return safe self static
    struct super trait true try type typeof union unsafe unsized use virtual where while yield
    """.split()
)

#: The longest name posenc accepts or makes. C99 guarantees 63 significant characters for internal identifiers, and
#: posenc appends suffixes to the name for macros (``_ZERO_POINT`` is 11): the C writer checks every whole name
#: against the 63 (:data:`posenc_cli.formats.c.names.SIGNIFICANT`).
MAX_NAME = 54

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
_ALLOWED = (
    "a C identifier of at most 54 characters: a letter, then letters, digits or single underscores, not ending in "
    "an underscore, not a C/C++ keyword"
)


def check_name(name: str, *, param: str = "name") -> str:
    """Return ``name`` if it can name a table (or a namespace), else raise ``SpecError`` saying what is allowed.

    For names the user typed: they are refused, never changed. A name that ends in ``_`` or holds ``__`` is
    refused because posenc appends ``_SEQ_LEN`` and other suffixes to it, and ``__`` is reserved in C and C++.

    Examples
    --------
    >>> check_name("pe_table")
    'pe_table'
    """
    if not isinstance(name, str) or not _IDENTIFIER.match(name) or len(name) > MAX_NAME:
        raise SpecError(f"{param} must be {_ALLOWED}, got {name!r}", param=param)
    if "__" in name or name.endswith("_"):
        raise SpecError(
            f"{param} must be {_ALLOWED} (posenc appends _SEQ_LEN and other suffixes to it, and a double underscore "
            f"is reserved in C/C++), got {name!r}",
            param=param,
        )
    if name in KEYWORDS:
        raise SpecError(f"{param} must be {_ALLOWED}; {name!r} is a keyword", param=param)
    return name


def identifier(text: str, *, part: bool = False, rust: bool = False) -> str:
    """The C identifier posenc makes of ``text`` (a name from a file, or a suffix with ``part=True``): the mapping
    in the module docstring. The result always matches ``[A-Za-z0-9][A-Za-z0-9_]*`` without ``__``; a whole name
    passes :func:`check_name` (so it neither ends in ``_`` nor is a keyword), a part ends in ``_`` only when it is
    a keyword. ``rust``: Rust's keywords (:data:`RUST_KEYWORDS`) are avoided as well."""
    name = re.sub(r"_+", "_", _NOT_IDENTIFIER.sub("_", str(text))).strip("_")
    if part:
        name = name or "x"
    elif not name[:1].isalpha():
        name = "pe_" + name if name else "pe"
    name = name[:MAX_NAME].rstrip("_")
    if name in KEYWORDS or (rust and name in RUST_KEYWORDS):
        return name + "_" if part else "pe_" + name
    return name


def identifiers(names: Iterable[str], *, part: bool = False, what: str = "array", rust: bool = False) -> list[str]:
    """:func:`identifier` of each name, in order; ``FormatError`` when two different names map to the same one
    (``a-b`` and ``a_b``), naming both: posenc never lets one silently stand for the other."""
    seen: dict[str, str] = {}
    out = []
    for name in names:
        made = identifier(name, part=part, rust=rust)
        if made in seen and seen[made] != name:
            raise FormatError(
                f"{what} names {seen[made]!r} and {name!r} both become the {'Rust' if rust else 'C'} identifier "
                f"{made!r}; rename one of them (posenc maps every character outside A-Z, a-z, 0-9 to '_')"
            )
        seen[made] = name
        out.append(made)
    return out


_SAFE_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}\Z")


def member_names(keys: Iterable[str]) -> list[str]:
    """The names under which container formats (``.npz`` members, HDF5 datasets) store the arrays ``keys``.

    A key of letters, digits and ``_ . + -`` that does not start with ``.`` (at most 128 characters) is kept as it
    is; any other (``../x``, ``a/b``, control characters, an empty key) is mapped by :func:`identifier` with
    ``part=True``, so no name posenc writes is a path, and two keys that map to one are refused.

    Examples
    --------
    >>> member_names(["cos", "pe.0", "../evil"])
    ['cos', 'pe.0', 'evil']
    """
    seen: dict[str, str] = {}
    out = []
    for key in keys:
        made = key if _SAFE_KEY.match(key) else identifier(key, part=True)
        if made in seen and seen[made] != key:
            raise FormatError(
                f"array names {seen[made]!r} and {key!r} would both be stored as {made!r}; rename one of them"
            )
        seen[made] = key
        out.append(made)
    return out


def name_from_path(path: str | PurePath) -> str:
    """The default table name: :func:`identifier` of the output file's stem, normalised by the mapping (never a
    name :func:`check_name` refuses: no trailing ``_``, no ``__``, no keyword).

    Examples
    --------
    >>> name_from_path("out/pos-enc.v2.h")
    'pos_enc_v2'
    >>> name_from_path("2048x512.npy")
    'pe_2048x512'
    >>> name_from_path("for.h"), name_from_path("pe_.hpp"), name_from_path("a__b.c")
    ('pe_for', 'pe', 'a_b')
    """
    return identifier(PurePath(path).stem)
