from django import template

register = template.Library()


@register.simple_tag
def row_errors(errors: dict, prefix: str, index: int) -> list[str]:
    """Messages for one editor row (``exp-2-why`` -> "why: ...")."""
    start = f"{prefix}-{index}-"
    return [
        (f"{key[len(start) :]}: {message}" if key[len(start) :] != "row" else message)
        for key, messages in (errors or {}).items()
        if key.startswith(start)
        for message in messages
    ]


@register.filter
def get_item(mapping, key):
    try:
        return mapping.get(key) if hasattr(mapping, "get") else mapping[key]
    except (KeyError, IndexError, TypeError):
        return None


@register.filter
def required_marked(posted, index) -> bool:
    """Whether the reviewer's posted form marked expectation ``index`` required."""
    return bool(posted) and posted.get(f"required-{index}") == "on"


@register.simple_tag
def posted_field(posted, prefix: str, index) -> str:
    """The value the reviewer posted for ``<prefix>-<index>``, to re-show after a refusal."""
    return posted.get(f"{prefix}-{index}", "") if posted else ""
