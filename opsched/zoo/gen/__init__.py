"""Generator internals: the array builder, structured families and random networks.

The public functions are re-exported by :mod:`opsched.zoo.generators`.
"""

from opsched.zoo.gen.network import random_network
from opsched.zoo.gen.structured import EXAMPLES, example_graph, fork_join, series_parallel

__all__ = ["EXAMPLES", "example_graph", "fork_join", "random_network", "series_parallel"]
