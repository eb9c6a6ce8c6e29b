"""--runtime onnxruntime_genai: being built (issue #29)."""

from __future__ import annotations

from ...errors import SpecError
from ...table import Table
from .request import Request

__all__ = ["table"]


def table(request: Request) -> Table:
    """Not yet built."""
    raise SpecError(f"--runtime {request.runtime} is not built yet", param="runtime")
