"""``python -m lockgate_infra.docsite``: regenerate the docs site's reference pages."""

from lockgate_infra.docsite.reference import ROOT, write_all

for path in write_all():
    print(f"wrote {path.relative_to(ROOT)}")
