"""Settings, all from environment variables, with defaults that run locally.

Production: set ``DEBUG=0``, ``SECRET_KEY``, ``ALLOWED_HOSTS``, ``DATABASE_URL`` and
``REDIS_URL``; with ``DEBUG`` off the security settings below are on, and
``manage.py check --deploy`` passes with no warnings (tested).
"""

import os
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_secret(name: str, default: str = "") -> str:
    """``NAME`` or the contents of the file named by ``NAME_FILE`` (Docker secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name, default)


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_secret("SECRET_KEY", "insecure-local-only-key" if DEBUG else "")
if not SECRET_KEY:
    raise RuntimeError("SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG is off")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SITE_NAME = os.environ.get("SITE_NAME", "Case review")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "cases",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "cases.middleware.AuditContextMiddleware",
]

ROOT_URLCONF = "reviewapp.urls"
WSGI_APPLICATION = "reviewapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "cases.context_processors.roles_context",
            ],
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:54329/reviewapp")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("CONN_MAX_AGE", 60))}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "cases:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
# Hashed, compressed static files need ``collectstatic`` first (the Docker image runs it);
# the local run and the tests serve straight from static/.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", not DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST

# Security. Everything below is on whenever DEBUG is off.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    if env_bool("BEHIND_TLS_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# No inline script or style anywhere: htmx and the stylesheet are files under static/.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}

# Celery: Redis is the broker; PostgreSQL holds the state of every check.
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:63799/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULE = {
    "sweep-checks": {"task": "cases.tasks.sweep_checks", "schedule": env_float("CHECK_SWEEP_SECONDS", 30.0)},
}

# Systems under test. Hosts (names, *.wildcards, IPs or networks) checks may call;
# loopback, private and other reserved addresses only when listed explicitly.
TARGET_ALLOWED_HOSTS = env_list("TARGET_ALLOWED_HOSTS")
# A run still queued after this many seconds is handed to the workers again.
CHECK_QUEUED_GRACE = env_int("CHECK_QUEUED_GRACE", 300)
CHECK_QUEUE = os.environ.get("CHECK_QUEUE", "celery")
# The bundled demo system under test, served by the app at /demo-target/answer.
DEMO_TARGET_ENABLED = env_bool("DEMO_TARGET_ENABLED", True)

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "reviewapp",
    }
}

# Import limits: a file over these is refused with a message naming the limit.
IMPORT_MAX_FILE_BYTES = env_int("IMPORT_MAX_FILE_BYTES", 256 * 1024 * 1024)
IMPORT_MAX_LINE_BYTES = env_int("IMPORT_MAX_LINE_BYTES", 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Scoring detectors (spec/scoring.md): phrase lists a team may extend.
SCORING_REFUSAL_PHRASES = env_list(
    "SCORING_REFUSAL_PHRASES",
    "i don't know,i do not know,i can't help,i cannot help,i can't answer,i cannot answer,"
    "i'm unable to,i am unable to,i don't have,i do not have,not able to",
)
SCORING_CLARIFICATION_PHRASES = env_list(
    "SCORING_CLARIFICATION_PHRASES",
    "could you clarify,can you clarify,do you mean,could you specify,can you specify,which one",
)

# Checklist item 3: two phrasings whose answers are this similar (rapidfuzz ratio of
# the normalised text, 0-100) count as one.
PHRASING_MAX_SIMILARITY = env_float("PHRASING_MAX_SIMILARITY", 90.0)
# The "similar cases" panel: questions at least this similar are shown.
SIMILAR_QUESTION_THRESHOLD = env_float("SIMILAR_QUESTION_THRESHOLD", 80.0)

# Leakage of cases into prompt artifacts (system prompts, few-shot files, fine-tuning data).
LEAKAGE_THRESHOLD = env_float("LEAKAGE_THRESHOLD", 90.0)
LEAKAGE_ARTIFACT_MAX_BYTES = env_int("LEAKAGE_ARTIFACT_MAX_BYTES", 20 * 1024 * 1024)
# Near-duplicate report: question pairs at least this alike (rapidfuzz ratio, 0-100).
NEAR_DUPLICATE_THRESHOLD = env_float("NEAR_DUPLICATE_THRESHOLD", 90.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
