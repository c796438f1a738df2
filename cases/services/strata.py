from django.core.exceptions import PermissionDenied

from cases import roles
from cases.models import Stratum


def stratum_save(*, stratum: Stratum, user) -> Stratum:
    """Define or change a stratum (leads only)."""
    if not roles.is_lead(user):
        raise PermissionDenied("only leads define strata")
    stratum.tags = sorted(set(stratum.tags))
    stratum.save()
    return stratum
