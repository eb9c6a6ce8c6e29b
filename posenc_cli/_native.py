"""posenc's optional compiled cores, and the threads its hot loops may use.

``pip install`` builds the C extensions of :data:`MODULES` where a C compiler is present (``setup.py``) and skips
them, with a warning, where not; posenc then runs its pure path (NumPy), which writes the same bytes. Two
environment variables steer what runs:

- ``POSENC_CORE``: unset, empty or ``auto``: the compiled modules that are built; ``pure``: none of them (the pure
  path, as on a machine without a compiler); ``compiled``: the compiled modules are required: using one that is not
  built is an error, and ``setup.py`` fails where it would skip a failed build (CI builds so, so that a build
  silently skipped cannot pass as tested).
- ``POSENC_THREADS``: at most this many threads for generation and streaming (a positive integer); by default as
  many as the CPUs the process may run on (:func:`threads`).

:data:`CORE` says which core this process loaded (``posenc --version`` prints it); :func:`native` hands a module to
the code that uses it, reading ``POSENC_CORE`` at each call, so a test can run both paths in one process.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
from types import ModuleType

from .errors import PosencError, SpecError

__all__ = ["CORE", "MODULES", "native", "threads"]

#: The compiled modules ``setup.py`` may build (a name inside ``posenc_cli``): the sinusoid engine's loop
#: (``_core``) and the text formatter's (``_ctext``).
MODULES = ("_core", "_ctext")
_CHOICES = ("auto", "pure", "compiled")


def _load(name: str) -> ModuleType | None:
    """``posenc_cli.<name>`` if it is a built extension module (not the folder of C sources beside it)."""
    try:
        module = importlib.import_module(f"{__package__}.{name}")
    except ImportError:
        return None
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    return module if isinstance(loader, importlib.machinery.ExtensionFileLoader) else None


_BUILT = {name: _load(name) for name in MODULES}


def _choice() -> str:
    value = os.environ.get("POSENC_CORE", "").strip().lower() or "auto"
    if value not in _CHOICES:
        raise SpecError(f"POSENC_CORE must be one of {', '.join(_CHOICES)} (or unset), got {value!r}")
    return value


def native(name: str) -> ModuleType | None:
    """The compiled module ``posenc_cli.<name>`` (one of :data:`MODULES`), or None where the pure path runs: it is
    not built, or ``POSENC_CORE=pure``. Raises :class:`~posenc_cli.errors.SpecError` for an unknown
    ``POSENC_CORE``, and :class:`~posenc_cli.errors.PosencError` under ``POSENC_CORE=compiled`` when it is not built.

    Examples
    --------
    >>> native("_core") is None or hasattr(native("_core"), "combine32")
    True
    """
    choice = _choice()
    if choice == "pure":
        return None
    module = _BUILT[name]
    if module is None and choice == "compiled":
        raise PosencError(
            f"POSENC_CORE=compiled, but posenc's compiled module {name} is not built in this installation: install "
            "posenc where a C compiler is present, or unset POSENC_CORE to run the pure path"
        )
    return module


def _core_at_start() -> str:
    try:
        choice = _choice()
    except SpecError:
        choice = "auto"  # the error is raised where a module is asked for (native), where it can be reported
    return "compiled" if choice != "pure" and any(_BUILT.values()) else "pure"


#: ``"compiled"`` when this process loaded a compiled module (and ``POSENC_CORE`` was not ``pure`` when it was
#: imported), ``"pure"`` when it runs NumPy alone.
CORE = _core_at_start()


def threads() -> int:
    """Threads for generation and streaming: the CPUs this process may run on (``os.sched_getaffinity``; where the
    system cannot tell, ``os.cpu_count()``), at most ``POSENC_THREADS`` when that is set.

    Examples
    --------
    >>> threads() >= 1
    True
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    limit = os.environ.get("POSENC_THREADS", "").strip()
    if limit:
        if not (limit.isascii() and limit.isdigit()) or int(limit) < 1:
            raise SpecError(f"POSENC_THREADS must be a positive integer (a thread count), got {limit!r}")
        cpus = min(cpus, int(limit))
    return max(1, cpus)
