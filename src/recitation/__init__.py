"""recitation: audit large language models for memorization of their training data."""

import os as _os

# PyTorch's OpenMP threads spin while they wait for work by default. When other processes
# share the cores (a test suite beside a benchmark, two models in one audit) the spinning
# threads steal the cores the working ones need: a 48-token generation of the embedded model
# took 45 s wall / 15.7 CPU s with 2 spinning threads against 17 s / 3.9 CPU s with passive
# waiting on this 2-core machine under load. Read by the OpenMP runtime when torch is first
# imported, so set here, before any backend imports torch; a value the user set is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
