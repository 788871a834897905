"""Importing ``amdsmi`` without noise.

The package is optional and awkward to import: without ROCm's ``libamd_smi.so`` it raises
``KeyError('libamd_smi.so')`` (not ImportError) and prints two lines to stdout first. The import
(and the library calls that print) therefore run with Python's stdout/stderr captured, so nothing
lands on a Textual screen. (Text the C library writes straight to file descriptor 1 is not
captured: redirecting the descriptor would also swallow a running Textual app's own output.)
"""

from __future__ import annotations

import contextlib
import importlib
import io
from collections.abc import Iterator
from types import ModuleType

from gputui.backends.base import BackendUnavailable

NOT_INSTALLED = "amdsmi not installed"
NO_LIBRARY = "libamd_smi.so not found (ROCm amd-smi-lib not installed)"


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Swallow Python-level stdout/stderr (amdsmi prints its import errors)."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


def import_amdsmi() -> ModuleType:
    """Import ``amdsmi`` silently, or raise :class:`BackendUnavailable` with a one-line reason."""
    try:
        with quiet():
            return importlib.import_module("amdsmi")
    except ModuleNotFoundError as exc:
        if (exc.name or "amdsmi").split(".")[0] == "amdsmi":
            raise BackendUnavailable(NOT_INSTALLED) from None
        raise BackendUnavailable(f"amdsmi import failed: {exc}") from None
    except (KeyError, OSError):
        # amdsmi_wrapper: _libraries['libamd_smi.so'] after the CDLL load failed.
        raise BackendUnavailable(NO_LIBRARY) from None
    except AttributeError as exc:
        # A libamd_smi.so older than the Python package lacks symbols the wrapper binds.
        raise BackendUnavailable(
            f"amdsmi does not match libamd_smi.so (pin amdsmi to your ROCm version): {exc}"
        ) from None
    except Exception as exc:
        raise BackendUnavailable(f"amdsmi import failed: {type(exc).__name__}: {exc}") from None
