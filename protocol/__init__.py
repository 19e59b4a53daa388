"""Definitions shared by the writer (``bundle``) and the verifier (``verify``).

Both sides import this package; it imports neither of them, nor torch. Each module holds one
fact that both sides must agree on, defined once:

* :mod:`protocol.hostrefs`: where the host's reference data lies (the frozen reference, the raw
  MNIST files, the GPU image's lock file), for a repository checkout, an installed package and
  the images alike;
* :mod:`protocol.learners`: constants of a learner that the verifier checks records against
  without importing the learner (which imports torch).
"""
