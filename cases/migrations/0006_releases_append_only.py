"""Releases are immutable, like versions and audit events: enforced by PostgreSQL."""

from django.db import migrations

TABLES = ("cases_release", "cases_releaseitem", "cases_auditacknowledgement")


class Migration(migrations.Migration):
    dependencies = [("cases", "0005_revisions_releases")]

    operations = [
        migrations.RunSQL(
            "\n".join(
                f"CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE ON {t} "
                f"FOR EACH ROW EXECUTE FUNCTION reviewapp_forbid_rewrite();"
                for t in TABLES
            ),
            reverse_sql="\n".join(f"DROP TRIGGER IF EXISTS {t}_append_only ON {t};" for t in TABLES),
        ),
    ]
