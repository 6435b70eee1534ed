"""The webhook receiver: verified push deliveries from Git hosts, stored as branch notices (R1-R5).

``app.create_app`` is the Flask factory gunicorn runs (``gunicorn.conf.py`` beside it);
``verify`` and ``deliveries`` are the pure per-host verifiers and parsers, ``routing`` picks the
branches a push is a hint for, and ``intake`` runs one delivery through them to its answer.
"""
