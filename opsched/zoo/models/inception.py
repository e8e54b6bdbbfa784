"""Inception-v3 (Szegedy et al., 2016) without the auxiliary classifier, at 299 x 299.

Every convolution is a "basic conv": convolution (no bias) + BN + ReLU, 3 ops. Stem: five
basic convs and two 3x3/2 max pools (299 -> 35 x 35 x 192). Then the mixed blocks of the
published network (the layout torchvision ships): three 35 x 35 blocks (A; pool branch of 32,
64, 64 channels), a grid reduction to 17 x 17 x 768 (B), four 17 x 17 blocks with factorised
1x7 / 7x1 convolutions (C; 128, 160, 160, 192 inner channels), a reduction to 8 x 8 x 1280 (D)
and two 8 x 8 blocks with split 1x3 / 3x1 branches (E) giving 8 x 8 x 2048. Head: global
average pool, flatten, 1000-way classifier. Each block ends in one concatenation of all its
branch outputs (block E's inner concatenations are folded into it).

94 convolutions; 23,834,568 parameters (torchvision's 27,161,264 minus the auxiliary head's
3,326,696).

References
----------
C. Szegedy, V. Vanhoucke, S. Ioffe, J. Shlens, Z. Wojna. Rethinking the Inception
Architecture for Computer Vision. CVPR 2016.

Examples
--------
>>> g = inception_v3()
>>> g.attrs["params"], g["Mixed_7c.concat"].attrs["out_shape"]
(23834568, [1, 2048, 8, 8])
"""

from __future__ import annotations

from opsched.ir.graph import OpGraph
from opsched.zoo.models.builder import NetBuilder, Tensor

__all__ = ["inception_v3"]


def _block_a(nb: NetBuilder, x: Tensor, pool_ch: int) -> Tensor:
    b1 = nb.conv_bn(x, 64, 1, "branch1x1")
    b5 = nb.conv_bn(x, 48, 1, "branch5x5_1")
    b5 = nb.conv_bn(b5, 64, 5, "branch5x5_2", pad=2)
    b3 = nb.conv_bn(x, 64, 1, "branch3x3dbl_1")
    b3 = nb.conv_bn(b3, 96, 3, "branch3x3dbl_2", pad=1)
    b3 = nb.conv_bn(b3, 96, 3, "branch3x3dbl_3", pad=1)
    bp = nb.pool(x, 3, stride=1, pad=1, mode="avg", name="branch_pool.avgpool")
    bp = nb.conv_bn(bp, pool_ch, 1, "branch_pool")
    return nb.concat([b1, b5, b3, bp], name="concat")


def _block_b(nb: NetBuilder, x: Tensor) -> Tensor:
    b3 = nb.conv_bn(x, 384, 3, "branch3x3", stride=2)
    bd = nb.conv_bn(x, 64, 1, "branch3x3dbl_1")
    bd = nb.conv_bn(bd, 96, 3, "branch3x3dbl_2", pad=1)
    bd = nb.conv_bn(bd, 96, 3, "branch3x3dbl_3", stride=2)
    bp = nb.pool(x, 3, stride=2, name="branch_pool")
    return nb.concat([b3, bd, bp], name="concat")


def _block_c(nb: NetBuilder, x: Tensor, c7: int) -> Tensor:
    b1 = nb.conv_bn(x, 192, 1, "branch1x1")
    b7 = nb.conv_bn(x, c7, 1, "branch7x7_1")
    b7 = nb.conv_bn(b7, c7, (1, 7), "branch7x7_2", pad=(0, 3))
    b7 = nb.conv_bn(b7, 192, (7, 1), "branch7x7_3", pad=(3, 0))
    bd = nb.conv_bn(x, c7, 1, "branch7x7dbl_1")
    bd = nb.conv_bn(bd, c7, (7, 1), "branch7x7dbl_2", pad=(3, 0))
    bd = nb.conv_bn(bd, c7, (1, 7), "branch7x7dbl_3", pad=(0, 3))
    bd = nb.conv_bn(bd, c7, (7, 1), "branch7x7dbl_4", pad=(3, 0))
    bd = nb.conv_bn(bd, 192, (1, 7), "branch7x7dbl_5", pad=(0, 3))
    bp = nb.pool(x, 3, stride=1, pad=1, mode="avg", name="branch_pool.avgpool")
    bp = nb.conv_bn(bp, 192, 1, "branch_pool")
    return nb.concat([b1, b7, bd, bp], name="concat")


def _block_d(nb: NetBuilder, x: Tensor) -> Tensor:
    b3 = nb.conv_bn(x, 192, 1, "branch3x3_1")
    b3 = nb.conv_bn(b3, 320, 3, "branch3x3_2", stride=2)
    b7 = nb.conv_bn(x, 192, 1, "branch7x7x3_1")
    b7 = nb.conv_bn(b7, 192, (1, 7), "branch7x7x3_2", pad=(0, 3))
    b7 = nb.conv_bn(b7, 192, (7, 1), "branch7x7x3_3", pad=(3, 0))
    b7 = nb.conv_bn(b7, 192, 3, "branch7x7x3_4", stride=2)
    bp = nb.pool(x, 3, stride=2, name="branch_pool")
    return nb.concat([b3, b7, bp], name="concat")


def _block_e(nb: NetBuilder, x: Tensor) -> Tensor:
    b1 = nb.conv_bn(x, 320, 1, "branch1x1")
    b3 = nb.conv_bn(x, 384, 1, "branch3x3_1")
    b3a = nb.conv_bn(b3, 384, (1, 3), "branch3x3_2a", pad=(0, 1))
    b3b = nb.conv_bn(b3, 384, (3, 1), "branch3x3_2b", pad=(1, 0))
    bd = nb.conv_bn(x, 448, 1, "branch3x3dbl_1")
    bd = nb.conv_bn(bd, 384, 3, "branch3x3dbl_2", pad=1)
    bda = nb.conv_bn(bd, 384, (1, 3), "branch3x3dbl_3a", pad=(0, 1))
    bdb = nb.conv_bn(bd, 384, (3, 1), "branch3x3dbl_3b", pad=(1, 0))
    bp = nb.pool(x, 3, stride=1, pad=1, mode="avg", name="branch_pool.avgpool")
    bp = nb.conv_bn(bp, 192, 1, "branch_pool")
    return nb.concat([b1, b3a, b3b, bda, bdb, bp], name="concat")


def inception_v3(
    batch: int = 1, dtype: str = "float32", *, image: int = 299, classes: int = 1000
) -> OpGraph:
    """Inception-v3 at ``batch`` images of ``image x image`` pixels (no auxiliary head).

    Parameters
    ----------
    batch
        Images per batch.
    dtype
        Element type of every tensor.
    image
        Input height and width (299 in the paper; at least 75).
    classes
        Outputs of the classifier.

    Returns
    -------
    OpGraph
        The graph; at the defaults 1 input, 94 x 3 basic-conv ops, 13 pools, 11
        concatenations, a global pool, a flatten and the classifier: 310 ops.

    Examples
    --------
    >>> g = inception_v3(batch=4)
    >>> g.num_ops, g["Mixed_6e.concat"].attrs["out_shape"]
    (310, [4, 768, 17, 17])
    """
    nb = NetBuilder("inception_v3", dtype=dtype)
    x = nb.input("input", (batch, 3, image, image))
    x = nb.conv_bn(x, 32, 3, "Conv2d_1a_3x3", stride=2)
    x = nb.conv_bn(x, 32, 3, "Conv2d_2a_3x3")
    x = nb.conv_bn(x, 64, 3, "Conv2d_2b_3x3", pad=1)
    x = nb.pool(x, 3, stride=2, name="maxpool1")
    x = nb.conv_bn(x, 80, 1, "Conv2d_3b_1x1")
    x = nb.conv_bn(x, 192, 3, "Conv2d_4a_3x3")
    x = nb.pool(x, 3, stride=2, name="maxpool2")
    for name, pool_ch in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        with nb.scope(name):
            x = _block_a(nb, x, pool_ch)
    with nb.scope("Mixed_6a"):
        x = _block_b(nb, x)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        with nb.scope(name):
            x = _block_c(nb, x, c7)
    with nb.scope("Mixed_7a"):
        x = _block_d(nb, x)
    for name in ("Mixed_7b", "Mixed_7c"):
        with nb.scope(name):
            x = _block_e(nb, x)
    x = nb.global_pool(x, name="avgpool")
    x = nb.view(x, (batch, x.shape[1]), name="flatten")
    nb.linear(x, classes, name="fc")
    return nb.build(
        {"model": "inception_v3", "batch": batch, "input_shape": [batch, 3, image, image]}
    )
