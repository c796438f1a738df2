from cases.auditctx import audit_context


class AuditContextMiddleware:
    """Tags every write made during a request with the request (admin or browser)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        interface = "admin" if request.path.startswith("/admin/") else "web"
        with audit_context(interface, method=request.method, path=request.path[:200]):
            return self.get_response(request)
