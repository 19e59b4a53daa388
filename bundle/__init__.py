"""rev88-bundle: the GPU-side package (data, learner, fixture, energy, profile, phases, CLI).

Modules that never import torch (and that ``verify/`` may import): ``protocol.data``,
``bundle.archive``, ``bundle.records``, ``bundle.profile``, ``protocol.errors``.
"""

__version__ = "0.1.0"
