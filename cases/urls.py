from django.urls import path

from cases.views import browse, demo_target, editor, history, home, manage, review, runs, transfer

app_name = "cases"

urlpatterns = [
    path("", home.home, name="home"),
    path("cases/", browse.case_list, name="list"),
    path("cases/new/", editor.propose, name="propose"),
    path("cases/editor/rows/<str:section>/", editor.editor_rows_view, name="editor-rows"),
    path("cases/editor/preview/<str:panel>/", editor.editor_preview, name="editor-preview"),
    path("cases/<slug:slug>/", browse.case_detail, name="detail"),
    path("cases/<slug:slug>/edit/", editor.edit, name="edit"),
    path("cases/<slug:slug>/revise/", editor.revise, name="revise"),
    path("cases/<slug:slug>/discard/", editor.discard, name="discard"),
    path("cases/<slug:slug>/retire/", editor.retire, name="retire"),
    path("review/", review.queue, name="queue"),
    path("review/<slug:slug>/", review.review_page, name="review"),
    path("review/<slug:slug>/check/", review.check_panel, name="check-panel"),
    path("review/<slug:slug>/check/rerun/", review.check_rerun, name="check-rerun"),
    path("review/<slug:slug>/decide/", review.decide, name="decide"),
    path("strata/", manage.strata, name="strata"),
    path("strata/<int:pk>/", manage.stratum_edit, name="stratum-edit"),
    path("targets/", manage.targets, name="targets"),
    path("targets/check-all/", manage.check_all_proposed, name="check-all"),
    path("targets/check-all/progress/", manage.check_all_progress, name="check-all-progress"),
    path("audit/", history.audit_page, name="audit"),
    path("audit/<int:pk>/acknowledge/", history.audit_ack, name="audit-ack"),
    path("audit/<int:pk>/revert/", history.audit_revert, name="audit-revert"),
    path("releases/", history.release_list, name="releases"),
    path("releases/<int:number>/", history.release_detail, name="release"),
    path("releases/<int:number>.jsonl", history.release_download, name="release-download"),
    path("api/releases/<str:number>.jsonl", history.api_release, name="api-release"),
    path("account/tokens/", history.token_page, name="tokens"),
    path("runs/", runs.run_list, name="runs"),
    path("runs/compare/", runs.run_compare, name="run-compare"),
    path("runs/<int:pk>/", runs.run_detail, name="run"),
    path("coverage/", runs.coverage, name="coverage"),
    path("import/", transfer.import_cases, name="import"),
    path("export/", transfer.export_page, name="export"),
    path("export/cases.jsonl", transfer.export_download, name="export-download"),
    path("demo-target/answer", demo_target.demo_target, name="demo-target"),
]
