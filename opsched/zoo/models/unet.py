"""U-Net (Ronneberger, Fischer and Brox, 2015), the original unpadded network.

Contracting path: four levels of two 3x3 convolutions (no padding, with bias) + ReLU, each
followed by a 2x2/2 max pool, with 64, 128, 256, 512 channels, then a bottom level of two
convolutions with 1024 channels. Expansive path: four levels of a 2x2 up-convolution that
halves the channels, a centre crop of the contracting feature map of the same level, their
concatenation, and two 3x3 convolutions + ReLU. A final 1x1 convolution maps 64 channels to
the classes. "In total the network has 23 convolutional layers" (the paper): 18 3x3, 4
up-convolutions and the 1x1. Input 572 x 572 x 1, output 388 x 388 x 2; 31,030,658
parameters with 2 classes (counted layer by layer in the tests).

The up-convolution is a transposed convolution, written as ``conv2d_bwd_data`` (see
:meth:`NetBuilder.conv_transpose`); the crop is a ``view`` (a slice, no kernel) and the
concatenation a ``copy``. Dropout (at the end of the contracting path) is an identity at
inference and left out.

References
----------
O. Ronneberger, P. Fischer, T. Brox. U-Net: Convolutional Networks for Biomedical Image
Segmentation. MICCAI 2015, arXiv:1505.04597.

Examples
--------
>>> g = unet()
>>> g.ops[-1].attrs["out_shape"], g.num_ops
([1, 2, 388, 388], 54)
"""

from __future__ import annotations

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.zoo.models.builder import NetBuilder, Tensor

__all__ = ["unet"]

#: Channels of the four contracting levels; the bottom level has twice the last.
WIDTHS = (64, 128, 256, 512)


def _double_conv(nb: NetBuilder, x: Tensor, ch: int, name: str) -> Tensor:
    with nb.scope(name):
        x = nb.act(nb.conv(x, ch, 3, bias=True, name="conv1"), name="relu1")
        return nb.act(nb.conv(x, ch, 3, bias=True, name="conv2"), name="relu2")


def unet(
    batch: int = 1,
    dtype: str = "float32",
    *,
    image: int = 572,
    in_channels: int = 1,
    classes: int = 2,
) -> OpGraph:
    """U-Net at ``batch`` tiles of ``image x image`` pixels.

    Parameters
    ----------
    batch
        Tiles per batch.
    dtype
        Element type of every tensor.
    image
        Input tile size; every max pool must see an even size (572 and 188 work).
    in_channels, classes
        Input channels and output classes.

    Returns
    -------
    OpGraph
        54 ops at the defaults: input, 23 convolutions (19 ``conv2d``, 4 up-convolutions),
        18 ReLUs, 4 max pools, 4 crops and 4 concatenations.

    Raises
    ------
    ProblemError
        If a max pool would see an odd size or a convolution an empty map.

    Examples
    --------
    >>> unet(image=188)["up1.relu2"].attrs["out_shape"]
    [1, 64, 4, 4]
    """
    nb = NetBuilder("unet", dtype=dtype)
    x = nb.input("input", (batch, in_channels, image, image))
    skips: list[Tensor] = []
    for level, ch in enumerate(WIDTHS, start=1):
        x = _double_conv(nb, x, ch, f"down{level}")
        skips.append(x)
        if x.shape[2] % 2 or x.shape[2] < 4:
            raise ProblemError(
                f"unet: input {image} gives a {x.shape[2]}x{x.shape[3]} map before max pool "
                f"{level}; it must be even (try 572)"
            )
        x = nb.pool(x, 2, stride=2, name=f"pool{level}")
    x = _double_conv(nb, x, 2 * WIDTHS[-1], "bottom")
    for level, ch in zip(range(4, 0, -1), reversed(WIDTHS), strict=True):
        with nb.scope(f"up{level}"):
            x = nb.conv_transpose(x, ch, 2, stride=2, name="upconv")
            skip = skips[level - 1]
            n, c, _, _ = skip.shape
            crop = nb.view(skip, (n, c, x.shape[2], x.shape[3]), fn="crop", name="crop")
            x = nb.concat([crop, x], name="concat")
        x = _double_conv(nb, x, ch, f"up{level}")
    nb.conv(x, classes, 1, bias=True, name="head")
    return nb.build(
        {"model": "unet", "batch": batch, "input_shape": [batch, in_channels, image, image]}
    )
