"""Where recitation keeps what it can rebuild: one cache directory for everything.

``$RECITATION_CACHE_DIR``, else the user cache directory of the platform (``platformdirs``).
Under it: ``responses.sqlite`` (the cross-run response cache) and ``models/`` (converted
model weights, trained parrots; ``$RECITATION_MODEL_CACHE_DIR`` moves that folder alone).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The root of every recitation cache (not created here)."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("RECITATION_CACHE_DIR") or user_cache_dir("recitation"))
