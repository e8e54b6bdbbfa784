"""SqueezeNet 1.1 (Iandola et al.; the v1.1 revision of the SqueezeNet repository).

A 3x3/2 convolution (64 channels) + ReLU, a 3x3/2 max pool, then eight Fire modules in pairs
separated by 3x3/2 max pools; a Fire module is a 1x1 "squeeze" convolution + ReLU feeding a
1x1 and a 3x3 "expand" convolution (each + ReLU) whose outputs are concatenated. Squeeze /
expand widths: 16/64, 16/64, 32/128, 32/128, 48/192, 48/192, 64/256, 64/256. Classifier: a
1x1 convolution to the classes + ReLU and a global average pool (dropout is an identity at
inference and left out). Convolutions have biases. 26 convolutions, 1,235,496 parameters,
0.35 G multiply-adds at 224 x 224.

References
----------
F. N. Iandola, S. Han, M. W. Moskewicz, K. Ashraf, W. J. Dally, K. Keutzer. SqueezeNet:
AlexNet-level accuracy with 50x fewer parameters and <0.5MB model size. arXiv:1602.07360.

Examples
--------
>>> g = squeezenet1_1()
>>> g.num_ops, g.attrs["params"]
(66, 1235496)
"""

from __future__ import annotations

from opsched.ir.graph import OpGraph
from opsched.zoo.models.builder import NetBuilder, Tensor

__all__ = ["squeezenet1_1"]

#: (squeeze, expand) channels of the Fire modules; a max pool precedes modules 3 and 5.
FIRES = ((16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256))


def _fire(nb: NetBuilder, x: Tensor, squeeze: int, expand: int, name: str) -> Tensor:
    with nb.scope(name):
        s = nb.act(nb.conv(x, squeeze, 1, bias=True, name="squeeze"), name="squeeze_relu")
        e1 = nb.conv(s, expand, 1, bias=True, name="expand1x1")
        e1 = nb.act(e1, name="expand1x1_relu")
        e3 = nb.conv(s, expand, 3, pad=1, bias=True, name="expand3x3")
        e3 = nb.act(e3, name="expand3x3_relu")
        return nb.concat([e1, e3], name="concat")


def squeezenet1_1(
    batch: int = 1, dtype: str = "float32", *, image: int = 224, classes: int = 1000
) -> OpGraph:
    """SqueezeNet 1.1 at ``batch`` images of ``image x image`` pixels.

    Parameters
    ----------
    batch
        Images per batch.
    dtype
        Element type of every tensor.
    image
        Input height and width.
    classes
        Outputs of the classifier.

    Returns
    -------
    OpGraph
        66 ops at the defaults: input, 26 convolutions, 26 ReLUs, 3 max pools, 8
        concatenations, the global pool and a flatten.

    Examples
    --------
    >>> squeezenet1_1(batch=8)["fire9.concat"].attrs["out_shape"]
    [8, 512, 13, 13]
    """
    nb = NetBuilder("squeezenet1_1", dtype=dtype)
    x = nb.input("input", (batch, 3, image, image))
    x = nb.act(nb.conv(x, 64, 3, stride=2, bias=True, name="conv1"), name="relu1")
    for i, (squeeze, expand) in enumerate(FIRES):
        if i in (0, 2, 4):
            x = nb.pool(x, 3, stride=2, name=f"maxpool{i // 2 + 1}")
        x = _fire(nb, x, squeeze, expand, f"fire{i + 2}")
    x = nb.act(nb.conv(x, classes, 1, bias=True, name="conv10"), name="relu10")
    x = nb.global_pool(x, name="avgpool")
    nb.view(x, (batch, classes), name="flatten")
    return nb.build(
        {"model": "squeezenet1_1", "batch": batch, "input_shape": [batch, 3, image, image]}
    )
