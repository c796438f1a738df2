"""The domain: cases, their accepted versions, the audit trail and strata.

Writes go through ``cases.services``; the models hold data and database invariants only.
Case versions and audit events are append-only, enforced by PostgreSQL triggers (see the
migration ``0002_append_only``), so neither the shell, the admin nor a worker can rewrite
history.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Upper

from cases import validation


class CaseStatus(models.TextChoices):
    DRAFT = "draft", "draft"
    PROPOSED = "proposed", "proposed"
    CHANGES_REQUESTED = "changes-requested", "changes requested"
    ACCEPTED = "accepted", "accepted"
    REJECTED = "rejected", "rejected"
    RETIRED = "retired", "retired"


class SourceKind(models.TextChoices):
    TRACE = "trace"
    TICKET = "ticket"
    BUG_REPORT = "bug-report"
    KNOWN_HARD = "known-hard"
    EXPERT = "expert"
    SYNTHETIC = "synthetic"


class Case(models.Model):
    """The working copy of a case. Its accepted content lives in :class:`CaseVersion`."""

    slug = models.CharField(
        "id",
        max_length=100,
        unique=True,
        validators=[RegexValidator(validation.ID_PATTERN, "lowercase letters, digits, '.', '_' and '-'")],
    )
    question = models.TextField(max_length=validation.QUESTION_MAX)
    tags = ArrayField(models.CharField(max_length=validation.TAG_MAX), default=list, blank=True)
    source_kind = models.CharField(max_length=20, choices=SourceKind.choices, blank=True)
    source_ref = models.TextField(blank=True)
    context = models.JSONField(default=dict, blank=True)
    rubric = models.JSONField(default=list, blank=True)
    expectations = models.JSONField(default=list, blank=True)
    phrasings = models.JSONField(default=list, blank=True)
    wrong_answers = models.JSONField(default=list, blank=True)
    invariant = models.BooleanField(default=False)
    status = models.CharField(max_length=20, choices=CaseStatus.choices, default=CaseStatus.DRAFT)
    proposer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="proposed_cases")
    # sha256 of the canonical content (see cases.canonical); changes whenever content does.
    content_hash = models.CharField(max_length=64)
    current_version = models.PositiveIntegerField(null=True, blank=True)
    # Bumped on every submission; a review decides one round, so a decision is
    # recorded at most once per submission whoever clicks, and however often.
    review_round = models.PositiveIntegerField(default=0)
    # A revision of an accepted case: the version it started from and who is revising it.
    # The accepted content stays in CaseVersion until the revision is accepted.
    revision_of = models.PositiveIntegerField(null=True, blank=True)
    revised_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="revisions"
    )
    retire_requested = models.BooleanField(default=False)
    # Justifications of the revision's relaxing changes, by path, shown to the reviewer.
    revision_justifications = models.JSONField(default=dict, blank=True)
    # Ties a revision's audit events to the review that accepts (or refuses) it.
    revision_key = models.CharField(max_length=32, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [
            GinIndex(fields=["tags"], name="case_tags_gin"),
            models.Index(fields=["status", "-updated_at", "-id"], name="case_status_updated"),
            models.Index(fields=["proposer", "status"], name="case_proposer_status"),
            models.Index(fields=["updated_at"], name="case_updated_at"),
            # Question and id search (icontains is UPPER(...) LIKE UPPER(...)).
            GinIndex(OpClass(Upper("question"), name="gin_trgm_ops"), name="case_question_trgm"),
            GinIndex(OpClass(Upper("slug"), name="gin_trgm_ops"), name="case_slug_trgm"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=CaseStatus.values), name="case_status_valid"),
            models.CheckConstraint(
                condition=Q(source_kind="") | Q(source_kind__in=SourceKind.values), name="case_source_kind_valid"
            ),
            models.CheckConstraint(condition=Q(slug__regex=r"^[a-z0-9][a-z0-9._-]{0,99}$"), name="case_slug_format"),
            models.CheckConstraint(
                condition=~Q(status=CaseStatus.ACCEPTED) | Q(current_version__isnull=False),
                name="case_accepted_has_version",
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("cases:detail", args=[self.slug])

    @property
    def author_id(self) -> int:
        """Who wrote the content under review: the reviser of a revision, else the proposer."""
        return self.revised_by_id or self.proposer_id


class CaseVersion(models.Model):
    """An immutable snapshot written when a case (or a revision of it) is accepted."""

    case = models.ForeignKey(Case, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    canonical_json = models.TextField()
    content_hash = models.CharField(max_length=64)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    accepted_at = models.DateTimeField()
    review = models.ForeignKey("Review", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["case", "number"]
        constraints = [
            models.UniqueConstraint(fields=["case", "number"], name="caseversion_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="caseversion_number_positive"),
            models.CheckConstraint(condition=Q(content_hash__regex=r"^[0-9a-f]{64}$"), name="caseversion_hash_hex"),
        ]

    def __str__(self) -> str:
        return f"{self.case.slug} v{self.number}"


class AuditAction(models.TextChoices):
    IMPORTED = "imported"
    CREATED = "created"
    EXPECTATION_ADDED = "expectation-added"
    EXPECTATION_REMOVED = "expectation-removed"
    EXPECTATION_MODIFIED = "expectation-modified"
    TAGS_CHANGED = "tags-changed"
    INVARIANT_CHANGED = "invariant-changed"
    STATUS_CHANGED = "status-changed"
    RETIRED = "retired"
    OVERRIDE = "override"


class Classification(models.TextChoices):
    TIGHTENING = "tightening"
    RELAXING = "relaxing"
    NEUTRAL = "neutral"


class AuditEvent(models.Model):
    """One change to a case, append-only. ``context`` says where it came from."""

    case = models.ForeignKey(Case, on_delete=models.PROTECT, related_name="audit_events")
    version = models.PositiveIntegerField(null=True, blank=True, help_text="the case version this change led to")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+")
    at = models.DateTimeField(db_index=True)
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    path = models.CharField(max_length=100, blank=True, help_text="what changed, e.g. expectations[1]")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    classification = models.CharField(max_length=16, choices=Classification.choices, blank=True)
    reason = models.TextField(blank=True, help_text="why the change is classified as it is")
    justification = models.TextField(blank=True)
    context = models.JSONField(default=dict, blank=True, help_text="interface, request or task, command")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["case", "-at"], name="audit_case_at")]
        constraints = [
            models.CheckConstraint(condition=Q(action__in=AuditAction.values), name="audit_action_valid"),
            models.CheckConstraint(
                condition=Q(classification="") | Q(classification__in=Classification.values),
                name="audit_classification_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.case_id} {self.action} at {self.at:%Y-%m-%d %H:%M}"


class Stratum(models.Model):
    """A lead-defined bucket: a case belongs when it carries every one of ``tags``."""

    name = models.CharField(max_length=100, unique=True)
    tags = ArrayField(models.CharField(max_length=validation.TAG_MAX), help_text="tags a case must all carry")
    description = models.TextField(blank=True)
    min_cases = models.PositiveIntegerField(default=5, help_text="fewer accepted cases than this is flagged")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "strata"
        constraints = [
            models.CheckConstraint(condition=Q(tags__len__gte=1), name="stratum_has_tags"),
        ]

    def __str__(self) -> str:
        return self.name


class TargetKind(models.TextChoices):
    HTTP = "http"
    CALLABLE = "callable"
    DEMO = "demo"


RETRIEVAL_MODES = ("normal", "disabled", "random-chunk")
SABOTAGE_MODES = ("disabled", "random-chunk")


def default_sabotage_modes() -> list[str]:
    return list(SABOTAGE_MODES)


class Target(models.Model):
    """A system under test, registered by a lead (spec/target-protocol.md)."""

    name = models.SlugField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=TargetKind.choices)
    url = models.URLField(max_length=500, blank=True, help_text="for http targets")
    callable_path = models.CharField(max_length=300, blank=True, help_text="package.module:function")
    sabotage_modes = ArrayField(models.CharField(max_length=20), default=default_sabotage_modes)
    timeout = models.FloatField(default=30.0, help_text="seconds, connect and total, per attempt")
    retries = models.PositiveSmallIntegerField(default=3)
    concurrency = models.PositiveSmallIntegerField(default=4, help_text="calls in flight to this target at once")
    max_response_bytes = models.PositiveIntegerField(default=1024 * 1024)
    allowed_hosts = ArrayField(
        models.CharField(max_length=255),
        default=list,
        blank=True,
        help_text="hosts or networks allowed for this target on top of TARGET_ALLOWED_HOSTS",
    )
    is_default = models.BooleanField(default=False, help_text="checks new proposals")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="one_default_target"),
            models.CheckConstraint(condition=Q(kind__in=TargetKind.values), name="target_kind_valid"),
            models.CheckConstraint(condition=~Q(kind="http") | ~Q(url=""), name="target_http_has_url"),
            models.CheckConstraint(
                condition=~Q(kind="callable") | ~Q(callable_path=""), name="target_callable_has_path"
            ),
            models.CheckConstraint(condition=Q(timeout__gt=0) & Q(timeout__lte=300), name="target_timeout_range"),
            models.CheckConstraint(condition=Q(retries__lte=10), name="target_retries_range"),
            models.CheckConstraint(
                condition=Q(concurrency__gte=1) & Q(concurrency__lte=256), name="target_concurrency_range"
            ),
            models.CheckConstraint(
                condition=Q(sabotage_modes__contained_by=list(SABOTAGE_MODES)) & Q(sabotage_modes__len__gte=1),
                name="target_modes_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class CheckKind(models.TextChoices):
    DISCRIMINATION = "discrimination"
    INVARIANT = "invariant"


class CheckState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"


class Verdict(models.TextChoices):
    DISCRIMINATES = "discriminates"
    DOES_NOT_DISCRIMINATE = "does-not-discriminate"
    HOLDS = "holds"
    VIOLATED = "violated"
    ERROR = "error"


class CheckRun(models.Model):
    """One discrimination (or invariant) check of some content of a case on a target.

    PostgreSQL is the source of truth for its state; a worker claims it with a
    conditional UPDATE, so a second delivery of the same task does nothing.
    """

    case = models.ForeignKey(Case, on_delete=models.PROTECT, related_name="check_runs")
    version = models.ForeignKey(CaseVersion, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    content_hash = models.CharField(max_length=64, help_text="hash of the content that was checked")
    content = models.JSONField(help_text="the expectations and flags that were checked")
    target = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="check_runs")
    target_settings = models.JSONField(default=dict)
    kind = models.CharField(max_length=16, choices=CheckKind.choices)
    modes = ArrayField(models.CharField(max_length=20))
    seed = models.IntegerField(default=17)
    state = models.CharField(max_length=10, choices=CheckState.choices, default=CheckState.QUEUED)
    verdict = models.CharField(max_length=24, choices=Verdict.choices, blank=True)
    results = models.JSONField(default=dict, blank=True, help_text="per mode: passed, score details, response")
    baseline_failed = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    calls_total = models.PositiveSmallIntegerField(default=0)
    calls_done = models.PositiveSmallIntegerField(default=0)
    deliveries = models.PositiveSmallIntegerField(default=0)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+")
    rerun_of = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["case", "target", "content_hash"], name="checkrun_lookup"),
            models.Index(fields=["state", "lease_expires_at"], name="checkrun_state_lease"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(state__in=CheckState.values), name="checkrun_state_valid"),
            models.CheckConstraint(
                condition=Q(verdict="") | Q(verdict__in=Verdict.values), name="checkrun_verdict_valid"
            ),
            models.CheckConstraint(
                condition=~Q(state__in=["done", "error"]) | ~Q(verdict=""), name="checkrun_finished_has_verdict"
            ),
            # The same content on the same target is checked once, unless someone asks for a re-run.
            models.UniqueConstraint(
                fields=["case", "target", "content_hash"],
                condition=Q(rerun_of__isnull=True),
                name="checkrun_once_per_content",
            ),
        ]

    def __str__(self) -> str:
        return f"check {self.pk} of {self.case_id} on {self.target_id}"

    @property
    def finished(self) -> bool:
        return self.state in (CheckState.DONE, CheckState.ERROR)


class CheckAttempt(models.Model):
    """One call to the target: what was sent, what came back, how long it took."""

    run = models.ForeignKey(CheckRun, on_delete=models.CASCADE, related_name="attempts")
    mode = models.CharField(max_length=20)
    number = models.PositiveSmallIntegerField()
    delivery = models.PositiveSmallIntegerField(default=1)
    request = models.JSONField()
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.TextField(blank=True, help_text="the raw response, truncated")
    error = models.TextField(blank=True)
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()

    class Meta:
        ordering = ["run", "mode", "delivery", "number"]

    def __str__(self) -> str:
        return f"{self.run_id} {self.mode} attempt {self.number}"


class Decision(models.TextChoices):
    APPROVE = "approve", "approve"
    REQUEST_CHANGES = "request-changes", "request changes"
    REJECT = "reject", "reject"


class Review(models.Model):
    """A reviewer's decision on one submission of a case, with the checklist as it stood."""

    case = models.ForeignKey(Case, on_delete=models.PROTECT, related_name="reviews")
    round = models.PositiveIntegerField()
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    decision = models.CharField(max_length=20, choices=Decision.choices)
    comment = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="the content that was reviewed")
    checklist = models.JSONField(default=dict, help_text="each item: passed, evidence summary, override")
    check_run = models.ForeignKey(CheckRun, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    version = models.PositiveIntegerField(null=True, blank=True, help_text="the version an approval wrote")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["case", "round"], name="review_once_per_round"),
            models.CheckConstraint(condition=Q(decision__in=Decision.values), name="review_decision_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.case_id} round {self.round}: {self.decision}"


class AuditAcknowledgement(models.Model):
    """A lead has looked at a relaxation (or override) and accepts it as justified."""

    event = models.OneToOneField(AuditEvent, on_delete=models.PROTECT, related_name="acknowledgement")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    note = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"ack of {self.event_id}"


class Release(models.Model):
    """A golden-set version: accepted case versions frozen under a number and a hash."""

    number = models.PositiveIntegerField(unique=True)
    content_hash = models.CharField(max_length=64, help_text="sha256 of the canonical JSONL")
    note = models.TextField(blank=True)
    changelog = models.JSONField(
        default=dict, help_text="against the previous release: added, removed, tightened, relaxed"
    )
    case_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.CheckConstraint(condition=Q(number__gte=1), name="release_number_positive")]

    def __str__(self) -> str:
        return f"release {self.number}"


class ReleaseItem(models.Model):
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="items")
    version = models.ForeignKey(CaseVersion, on_delete=models.PROTECT, related_name="+")
    case_slug = models.CharField(max_length=100)

    class Meta:
        ordering = ["release", "case_slug"]
        constraints = [models.UniqueConstraint(fields=["release", "case_slug"], name="release_case_once")]

    def __str__(self) -> str:
        return f"{self.release_id}: {self.case_slug}"


class ApiToken(models.Model):
    """A personal token for scripts (``Authorization: Bearer <token>``); only its hash is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class RunState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"


class EvalRun(models.Model):
    """A release run against a target: every case under ``normal`` retrieval, scored."""

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="runs")
    release_number = models.PositiveIntegerField()
    release_hash = models.CharField(max_length=64)
    target = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="eval_runs")
    target_settings = models.JSONField(default=dict)
    state = models.CharField(max_length=10, choices=RunState.choices, default=RunState.QUEUED)
    cases_total = models.PositiveIntegerField(default=0)
    cases_done = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=Q(state__in=RunState.values), name="evalrun_state_valid")]

    def __str__(self) -> str:
        return f"run {self.pk} of release {self.release_number} on {self.target_id}"


class EvalResult(models.Model):
    """One case of a run: the target's response and the score of each expectation."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case_slug = models.CharField(max_length=100)
    version = models.ForeignKey(CaseVersion, on_delete=models.PROTECT, related_name="+")
    invariant = models.BooleanField(default=False)
    strata = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    passed = models.BooleanField(null=True, help_text="null when the target could not answer")
    error = models.TextField(blank=True)
    response = models.JSONField(null=True, blank=True)
    results = models.JSONField(default=list, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["run", "case_slug"]
        constraints = [models.UniqueConstraint(fields=["run", "case_slug"], name="evalresult_once_per_case")]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.case_slug}"


class PromptArtifact(models.Model):
    """Text the system under test was built from (system prompt, few-shot file, fine-tuning
    JSONL). An eval case found in it has leaked into what it is meant to test."""

    name = models.CharField(max_length=200)
    kind = models.CharField(
        max_length=32,
        choices=[
            ("system-prompt", "system prompt"),
            ("few-shot", "few-shot examples"),
            ("fine-tuning", "fine-tuning data"),
            ("other", "other"),
        ],
    )
    text = models.TextField()
    size = models.PositiveIntegerField(default=0)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    uploaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-uploaded_at"]

    def __str__(self) -> str:
        return self.name


class LeakFinding(models.Model):
    """A case's question (or a long must-contain value) found in an artifact."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="leaks")
    artifact = models.ForeignKey(PromptArtifact, on_delete=models.CASCADE, related_name="findings")
    kind = models.CharField(max_length=16)
    needle = models.TextField()
    offset = models.PositiveIntegerField()
    length = models.PositiveIntegerField(default=0)
    score = models.FloatField()
    excerpt = models.TextField(blank=True)
    found_at = models.DateTimeField(auto_now_add=True)
    cleared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    cleared_reason = models.TextField(blank=True)
    cleared_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["case", "-score"]
        constraints = [
            models.UniqueConstraint(fields=["case", "artifact", "kind", "offset"], name="leak_once"),
            models.CheckConstraint(
                condition=Q(cleared_by__isnull=True) | ~Q(cleared_reason=""), name="leak_cleared_with_reason"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.case_id} in {self.artifact_id}"
