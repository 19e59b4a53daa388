"""rev88-bundle: the GPU-side package (data, learner, fixture, energy, profile, phases, CLI).

Modules that never import torch (and that ``verify/`` may import): ``bundle.data``,
``bundle.archive``, ``bundle.records``, ``bundle.profile``, ``bundle.errors``.
"""

__version__ = "0.1.0"
