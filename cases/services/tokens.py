"""Personal API tokens for scripts. Only a sha256 of each token is stored."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from cases import roles
from cases.models import ApiToken

PREFIX = "crv_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """A new token; the secret is returned once and never stored."""
    if not roles.role_names(user):
        raise PermissionError("only members create API tokens")
    secret = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name.strip()[:100] or "script", token_hash=_digest(secret), prefix=secret[:8]
    )
    return token, secret


def user_for_token(header: str):
    """The active user behind ``Authorization: Bearer <token>``, or None."""
    if not header.startswith("Bearer "):
        return None
    token = ApiToken.objects.select_related("user").filter(token_hash=_digest(header[7:].strip())).first()
    if token is None or not token.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user
