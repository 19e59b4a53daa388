"""Offline verifier of rev88 evidence archives (never imports torch).

Entry points: :func:`verify.registry.verify_archive` (one archive -> VerifyReport),
:func:`verify.registry.discover_archives`, :mod:`verify.render`, :mod:`verify.report`.
"""
