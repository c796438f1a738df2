from django.urls import path

from cases.views import browse, demo_target, home, transfer

app_name = "cases"

urlpatterns = [
    path("", home.home, name="home"),
    path("cases/", browse.case_list, name="list"),
    path("cases/<slug:slug>/", browse.case_detail, name="detail"),
    path("import/", transfer.import_cases, name="import"),
    path("export/", transfer.export_page, name="export"),
    path("export/cases.jsonl", transfer.export_download, name="export-download"),
    path("demo-target/answer", demo_target.demo_target, name="demo-target"),
]
