"""Roles are Django groups: ``expert``, ``reviewer`` and ``lead``.

A lead can do everything a reviewer can. Superusers count as leads. The checks here are
what services call; templates only use them to hide buttons.
"""

from __future__ import annotations

EXPERT = "expert"
REVIEWER = "reviewer"
LEAD = "lead"
ROLES = (EXPERT, REVIEWER, LEAD)


def role_names(user) -> frozenset[str]:
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    cached = getattr(user, "_role_names", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        if user.is_superuser:
            cached = cached | {LEAD}
        user._role_names = cached
    return cached


def is_lead(user) -> bool:
    return LEAD in role_names(user)


def can_review(user) -> bool:
    return bool(role_names(user) & {REVIEWER, LEAD})


def can_propose(user) -> bool:
    return bool(role_names(user) & {EXPERT, LEAD})
