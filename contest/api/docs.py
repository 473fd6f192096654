"""A self-contained API documentation page built from the OpenAPI schema.

drf-spectacular's Swagger/Redoc views load their JavaScript from a CDN, and
the contest machines have no internet, so the page is rendered server-side
from the same schema served at /api/schema/.
"""
from __future__ import annotations

from django.http import HttpResponse
from django.utils.html import escape
from drf_spectacular.generators import SchemaGenerator


def api_docs(request):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    info = schema.get("info", {})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(info.get('title', 'API'))}</title>"
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
             "code{background:#f4f4f4;padding:0 .2em}.m{display:inline-block;width:4.5em;font-weight:bold}"
             "li{margin:.3em 0}</style></head><body>",
             f"<h1>{escape(info.get('title', 'API'))} v{escape(info.get('version', ''))}</h1>",
             f"<p>{escape(info.get('description', ''))}</p>",
             "<p>Machine-readable schema: <a href='/api/schema/'><code>/api/schema/</code></a> "
             "(OpenAPI 3, YAML; <code>?format=json</code> for JSON).</p><ul>"]
    for route, ops in sorted(schema.get("paths", {}).items()):
        for method, op in ops.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            summary = op.get("description") or op.get("summary") or ""
            parts.append(f"<li><span class='m'>{method.upper()}</span><code>{escape(route)}</code>"
                         f"{' &mdash; ' + escape(summary.splitlines()[0]) if summary else ''}</li>")
    parts.append("</ul></body></html>")
    return HttpResponse("".join(parts))
