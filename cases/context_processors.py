from cases import roles


def roles_context(request):
    user = getattr(request, "user", None)
    names = roles.role_names(user) if user is not None else frozenset()
    return {
        "user_roles": sorted(names),
        "is_lead": roles.LEAD in names,
        "can_review": bool(names & {roles.REVIEWER, roles.LEAD}),
        "can_propose": bool(names & {roles.EXPERT, roles.LEAD}),
    }
