"""The bundled demo system under test, served over the target protocol.

It lets the HTTP path of the discrimination check be tried with no outside service.
It answers from the bundled corpus only, so it needs no sign-in; it can be switched
off with ``DEMO_TARGET_ENABLED=0``.
"""

import json

from django.conf import settings
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from cases.demo.retrieval import answer
from cases.models import RETRIEVAL_MODES

MAX_BODY = 64 * 1024


@csrf_exempt  # a machine endpoint with no session and no side effects
@require_POST
def demo_target(request):
    if not settings.DEMO_TARGET_ENABLED:
        raise Http404("the demo target is switched off")
    if len(request.body) > MAX_BODY:
        return JsonResponse({"error": f"request body over {MAX_BODY} bytes"}, status=413)
    try:
        payload = json.loads(request.body)
    except (ValueError, RecursionError):
        return JsonResponse({"error": "the body must be JSON"}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"error": "the body must be a JSON object"}, status=400)
    question, retrieval, seed = payload.get("question"), payload.get("retrieval", "normal"), payload.get("seed", 0)
    if not isinstance(question, str) or not question.strip():
        return JsonResponse({"error": "question: a non-empty string is required"}, status=400)
    if retrieval not in RETRIEVAL_MODES:
        return JsonResponse({"error": f"retrieval: one of {', '.join(RETRIEVAL_MODES)}"}, status=400)
    if not isinstance(seed, int) or isinstance(seed, bool):
        return JsonResponse({"error": "seed: an integer is required"}, status=400)
    return JsonResponse(answer(question[:4000], retrieval, seed))
