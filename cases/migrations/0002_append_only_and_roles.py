"""Append-only history, enforced by PostgreSQL, and the three role groups."""

from django.db import migrations

APPEND_ONLY_TABLES = ("cases_caseversion", "cases_auditevent")

FORBID_FUNCTION = """
CREATE OR REPLACE FUNCTION reviewapp_forbid_rewrite() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
"""


def _triggers() -> str:
    return "\n".join(
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION reviewapp_forbid_rewrite();"
        for table in APPEND_ONLY_TABLES
    )


def _drop_triggers() -> str:
    return "\n".join(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};" for table in APPEND_ONLY_TABLES)


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ("expert", "reviewer", "lead"):
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [
        ("cases", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.RunSQL(
            FORBID_FUNCTION + _triggers(),
            reverse_sql=_drop_triggers() + "DROP FUNCTION IF EXISTS reviewapp_forbid_rewrite();",
        ),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
