"""Every write to the domain goes through a function here (``<thing>_<action>``)."""

from cases.services.exporting import export_lines
from cases.services.importing import ImportFailed, ImportResult, cases_import

__all__ = ["ImportFailed", "ImportResult", "cases_import", "export_lines"]
