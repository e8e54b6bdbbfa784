"""ResNet-50 (He et al., 2016), with the stride on the 3x3 convolution ("v1.5").

Stem: 7x7/2 convolution (64) + BN + ReLU, 3x3/2 max pool. Four stages of 3, 4, 6 and 3
bottleneck blocks (1x1 -> 3x3 -> 1x1 with 4x expansion, widths 64, 128, 256, 512); the first
block of each stage has a 1x1 projection shortcut (convolution + BN), with stride 2 from stage
2 on. Head: global average pool, flatten, 1000-way fully connected layer. Convolutions have no
bias. At 224 x 224: 25,557,032 parameters and 4.09 G multiply-adds, the last feature map
2048 x 7 x 7.

References
----------
K. He, X. Zhang, S. Ren, J. Sun. Deep Residual Learning for Image Recognition. CVPR 2016.

Examples
--------
>>> g = resnet50()
>>> g.num_ops, g.attrs["params"]
(176, 25557032)
"""

from __future__ import annotations

from opsched.ir.graph import OpGraph
from opsched.zoo.models.builder import NetBuilder, Tensor

__all__ = ["resnet50"]

#: (blocks, bottleneck width, stride of the first block) per stage.
STAGES = ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2))


def _bottleneck(nb: NetBuilder, x: Tensor, width: int, stride: int, name: str) -> Tensor:
    out_ch = 4 * width
    with nb.scope(name):
        y = nb.conv_bn(x, width, 1, "1")
        y = nb.conv_bn(y, width, 3, "2", stride=stride, pad=1)
        y = nb.conv_bn(y, out_ch, 1, "3", act=None)
        short = x
        if stride != 1 or x.shape[1] != out_ch:
            short = nb.conv_bn(x, out_ch, 1, "downsample", stride=stride, act=None)
        return nb.act(nb.add([y, short], name="add"), name="relu")


def resnet50(
    batch: int = 1, dtype: str = "float32", *, image: int = 224, classes: int = 1000
) -> OpGraph:
    """ResNet-50 at ``batch`` images of ``image x image`` pixels.

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
        176 ops at the defaults: 1 input, 53 convolutions, 53 batch norms, 49 ReLUs, 16
        residual adds, 2 pools, a flatten and the classifier.

    Examples
    --------
    >>> resnet50(batch=2).ops[-1].attrs["out_shape"]
    [2, 1000]
    """
    nb = NetBuilder("resnet50", dtype=dtype)
    x = nb.input("input", (batch, 3, image, image))
    x = nb.conv_bn(x, 64, 7, "stem", stride=2, pad=3)
    x = nb.pool(x, 3, stride=2, pad=1, name="maxpool")
    for si, (blocks, width, stride) in enumerate(STAGES, start=1):
        for bi in range(blocks):
            x = _bottleneck(nb, x, width, stride if bi == 0 else 1, f"layer{si}.{bi}")
    x = nb.global_pool(x, name="avgpool")
    x = nb.view(x, (batch, x.shape[1]), name="flatten")
    nb.linear(x, classes, name="fc")
    return nb.build({"model": "resnet50", "batch": batch, "input_shape": [batch, 3, image, image]})
