"""A pytest plugin module the voicebudget plugin registers last (see
:func:`voicebudget.checker._plugin._default_anyio_backend`): ``@pytest.mark.anyio`` tests run on asyncio
unless the user's own ``anyio_backend`` fixture (conftest, module, class or parametrize) asks for more.
"""

from __future__ import annotations

import pytest

__all__ = ["anyio_backend"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """asyncio, where anyio's own default would run every installed backend (trio too)."""
    return "asyncio"
