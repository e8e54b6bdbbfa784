"""The model zoo: op graphs of published networks, with shapes at a chosen batch size.

Each network is written with :class:`~opsched.zoo.models.builder.NetBuilder` from its paper,
in the op-kind vocabulary of :mod:`opsched.ir.kinds`; every op carries its shape attrs,
``dtype``, ``flops``, ``bytes``, ``params`` and ``out_shape`` in ``attrs``, its
``output_bytes``, and a placeholder duration proportional to its FLOPs (one tick per MFLOP,
at least 1) until the cost model gives real ones (``opsched zoo export --gpu``). Weights are
the graph's ``persistent_bytes``. See ``docs/zoo.md`` for how ops are counted.

Examples
--------
>>> sorted(MODELS)[:3]
['bert_large_layer', 'gpt2_block', 'inception_v3']
>>> g = build("resnet50", batch=2)
>>> g.num_ops, g.attrs["params"], g["layer4.2.relu"].attrs["out_shape"]
(176, 25557032, [2, 2048, 7, 7])
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.ir.kinds import DTYPE_BYTES
from opsched.zoo.models.builder import FLOPS_PER_TICK, NetBuilder, Tensor
from opsched.zoo.models.inception import inception_v3
from opsched.zoo.models.nasnet import nasnet_a_mobile
from opsched.zoo.models.randwire import randwire
from opsched.zoo.models.resnet import resnet50
from opsched.zoo.models.squeezenet import squeezenet1_1
from opsched.zoo.models.transformer import bert_large_layer, gpt2_block
from opsched.zoo.models.unet import unet

__all__ = ["FLOPS_PER_TICK", "MODELS", "NetBuilder", "Tensor", "build"]

#: Model name -> one-line description.
MODELS: Mapping[str, str] = {
    "inception_v3": "Inception-v3 (Szegedy et al. 2016), 299x299, no auxiliary head",
    "randwire": "RandWire small regime (Xie et al. 2019), WS(k=4, p=0.75) stages, seeded",
    "nasnet_a_mobile": "NASNet-A mobile 4@1056 (Zoph et al. 2018), 224x224",
    "squeezenet1_1": "SqueezeNet 1.1 (Iandola et al.), 224x224",
    "resnet50": "ResNet-50 (He et al. 2016, stride on the 3x3), 224x224",
    "bert_large_layer": "one BERT-large encoder layer (Devlin et al. 2019), seq 512",
    "gpt2_block": "one GPT-2 small block (Radford et al. 2019), seq 1024, causal",
    "unet": "U-Net (Ronneberger et al. 2015), 572x572 input, 2 classes, unpadded",
}

_BUILDERS: Mapping[str, Callable[..., OpGraph]] = {
    "inception_v3": inception_v3,
    "randwire": randwire,
    "nasnet_a_mobile": nasnet_a_mobile,
    "squeezenet1_1": squeezenet1_1,
    "resnet50": resnet50,
    "bert_large_layer": bert_large_layer,
    "gpt2_block": gpt2_block,
    "unet": unet,
}


def build(name: str, batch: int = 1, dtype: str = "float32", seed: int = 0) -> OpGraph:
    """The op graph of zoo model ``name`` at ``batch``, in ``dtype``.

    Parameters
    ----------
    name
        A key of :data:`MODELS`.
    batch
        Batch size (images, tiles or sequences), ``>= 1``.
    dtype
        Element type of every tensor (a key of :data:`opsched.ir.kinds.DTYPE_BYTES`).
    seed
        Seed of the random graphs (only ``randwire`` draws any; the others ignore it).

    Returns
    -------
    OpGraph
        The network; ``attrs`` has ``params``, ``flops``, ``dtype``, ``batch`` and the input
        shape.

    Raises
    ------
    ProblemError
        On an unknown name (the message lists the known ones), a batch below 1 or an unknown
        dtype.

    Examples
    --------
    >>> build("gpt2_block").attrs["params"]
    7087872
    >>> build("vgg16")
    Traceback (most recent call last):
    ...
    opsched.errors.ProblemError: unknown model 'vgg16'; known: inception_v3, randwire, ...
    """
    if not isinstance(name, str):
        raise TypeError(
            f"a model name must be a str, got {type(name).__name__} {name!r} "
            f"(known: {', '.join(MODELS)})"
        )
    if name not in _BUILDERS:
        raise ProblemError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    if isinstance(batch, bool) or not isinstance(batch, numbers.Integral) or batch < 1:
        raise ProblemError(f"batch must be an integer >= 1, got {batch!r}")
    batch = int(batch)
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ProblemError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    kwargs: dict[str, Any] = {"batch": batch, "dtype": dtype}
    if name == "randwire":
        kwargs["seed"] = seed
    return _BUILDERS[name](**kwargs)
