"""The dashboard and the HTTP endpoints: thin shells over the library.

``ragmeter.web.app.create_app(store_url)`` builds the dashboard (FastAPI, Jinja2
templates, static files served from this package; nothing is fetched from
outside). FastAPI, uvicorn and Jinja2 come with the ``[web]`` extra, so importing
this package imports none of them.
"""
