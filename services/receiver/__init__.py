"""The webhook receiver: verified push deliveries from Git hosts, stored as branch notices (R1-R5).

``app.create_app`` is the Flask factory gunicorn runs (``gunicorn.conf.py`` beside it);
``hosts`` is the Git-host table (one record and module per ``spec.receiver.type``: verifier,
parser, event and delivery headers); ``verify`` and ``deliveries`` dispatch to its pure
verifiers and parsers, ``routing`` picks the branches a push is a hint for, and ``intake`` runs
one delivery through them to its answer.
"""
