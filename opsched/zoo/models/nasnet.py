"""NASNet-A mobile (Zoph et al., 2018): "NASNet-A (4 @ 1056)" at 224 x 224.

Stem: a 3x3/2 unpadded convolution (32 channels) + BN, then two reduction cells with 11 and
22 filters per branch. Then three stacks of 4 normal cells with 44, 88 and 176 filters,
separated by reduction cells with 88 and 176 filters. Every cell reads the outputs of the two
cells before it: the last one goes through ReLU + 1x1 convolution + BN; the one before is
brought to the same shape by a factorised reduction (ReLU, two 1x1/2 convolution paths, one
shifted by a pixel, concatenated, BN) when its size differs, or by ReLU + 1x1 convolution + BN
when only its channels differ. Head: ReLU, global average pool, 1000-way classifier.

The cells are the published NASNet-A cells (five blocks; a block adds two branch ops applied
to earlier states). A separable ``k x k`` branch is (ReLU, depthwise ``k x k``, pointwise 1x1,
BN) twice, the stride on the first depthwise; pools are 3x3 with padding 1. Normal cells
concatenate the previous-cell state and the five blocks (6 x filters channels), reduction
cells their four unused blocks (4 x filters). No auxiliary head. 5,289,978 parameters (the
trainable count of the Keras ``NASNetMobile``; batch-norm moving averages are not
parameters); the last cell gives 1056 x 7 x 7.

References
----------
B. Zoph, V. Vasudevan, J. Shlens, Q. V. Le. Learning Transferable Architectures for Scalable
Image Recognition. CVPR 2018, arXiv:1707.07012 (Figure 4 and Table 2: 5.3M parameters,
564M multiply-adds).

Examples
--------
>>> g = nasnet_a_mobile()
>>> g.attrs["params"], g["cell_11.concat"].attrs["out_shape"]
(5289978, [1, 1056, 7, 7])
"""

from __future__ import annotations

from opsched.ir.graph import OpGraph
from opsched.zoo.models.builder import NetBuilder, Tensor

__all__ = ["nasnet_a_mobile"]

#: A block: (left op, left input state, right op, right input state). States 0 and 1 are the
#: cell's two inputs (this cell's 1x1-adjusted input, the previous cell's), 2.. the blocks.
Block = tuple[str, int, str, int]

NORMAL: tuple[Block, ...] = (
    ("sep5", 0, "sep3", 1),
    ("sep5", 1, "sep3", 1),
    ("avg", 0, "id", 1),
    ("avg", 1, "avg", 1),
    ("sep3", 0, "id", 0),
)
NORMAL_CONCAT = (1, 2, 3, 4, 5, 6)
REDUCTION: tuple[Block, ...] = (
    ("sep5", 0, "sep7", 1),
    ("max", 0, "sep7", 1),
    ("avg", 0, "sep5", 1),
    ("id", 3, "avg", 2),
    ("sep3", 2, "max", 0),
)
REDUCTION_CONCAT = (3, 4, 5, 6)


def _relu_conv_bn(nb: NetBuilder, x: Tensor, ch: int, name: str, stride: int = 1) -> Tensor:
    with nb.scope(name):
        y = nb.conv(nb.act(x, name="relu"), ch, 1, stride=stride, name="conv")
        return nb.bn(y, name="bn")


def _separable(nb: NetBuilder, x: Tensor, ch: int, k: int, stride: int, name: str) -> Tensor:
    with nb.scope(name):
        for i in (1, 2):
            x = nb.act(x, name=f"relu{i}")
            c = x.shape[1]
            x = nb.conv(x, c, k, stride=stride, pad=k // 2, groups=c, name=f"depthwise{i}")
            x = nb.bn(nb.conv(x, ch, 1, name=f"pointwise{i}"), name=f"bn{i}")
            stride = 1
    return x


def _branch(nb: NetBuilder, op: str, x: Tensor, ch: int, stride: int, name: str) -> Tensor:
    if op.startswith("sep"):
        return _separable(nb, x, ch, int(op[3:]), stride, name)
    if op in ("avg", "max"):
        y = nb.pool(x, 3, stride=stride, pad=1, mode=op, name=f"{name}.{op}pool")
        return y if y.shape[1] == ch else _relu_conv_bn(nb, y, ch, f"{name}.1x1")
    if stride > 1 or x.shape[1] != ch:  # "identity" that must change the shape
        return _relu_conv_bn(nb, x, ch, name, stride)
    return x


def _factorized_reduction(nb: NetBuilder, x: Tensor, ch: int, name: str) -> Tensor:
    with nb.scope(name):
        x = nb.act(x, name="relu")
        p1 = nb.pool(x, 1, stride=2, mode="avg", name="path1.avgpool")
        p1 = nb.conv(p1, ch // 2, 1, name="path1.conv")
        shifted = nb.copy(x, x.shape, "shift", name="path2.shift")
        p2 = nb.pool(shifted, 1, stride=2, mode="avg", name="path2.avgpool")
        p2 = nb.conv(p2, ch - ch // 2, 1, name="path2.conv")
        return nb.bn(nb.concat([p1, p2], name="concat"), name="bn")


def _cell(
    nb: NetBuilder, x: Tensor, prev: Tensor | None, ch: int, reduction: bool, name: str
) -> Tensor:
    with nb.scope(name):
        if prev is None:
            p = x
        elif prev.shape[2:] != x.shape[2:]:
            p = _factorized_reduction(nb, prev, ch, "prev_reduce")
        elif prev.shape[1] != ch:
            p = _relu_conv_bn(nb, prev, ch, "prev_1x1")
        else:
            p = prev
        states = [_relu_conv_bn(nb, x, ch, "1x1"), p]
        blocks, concat = (REDUCTION, REDUCTION_CONCAT) if reduction else (NORMAL, NORMAL_CONCAT)
        for b, (lop, li, rop, ri) in enumerate(blocks):
            left = _branch(
                nb, lop, states[li], ch, 2 if reduction and li < 2 else 1, f"comb{b}.left"
            )
            right = _branch(
                nb, rop, states[ri], ch, 2 if reduction and ri < 2 else 1, f"comb{b}.right"
            )
            states.append(nb.add([left, right], name=f"comb{b}.add"))
        return nb.concat([states[i] for i in concat], name="concat")


def nasnet_a_mobile(
    batch: int = 1,
    dtype: str = "float32",
    *,
    image: int = 224,
    classes: int = 1000,
    cells_per_stack: int = 4,
    filters: int = 44,
) -> OpGraph:
    """NASNet-A mobile at ``batch`` images of ``image x image`` pixels.

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
    cells_per_stack, filters
        ``N`` normal cells per stack and the filters of the first stack (NASNet-A
        ``N @ 24 x filters``; 4 and 44 give the mobile network).

    Returns
    -------
    OpGraph
        The graph: 12 normal cells ``cell_0`` .. ``cell_11``, reduction cells ``stem_0``,
        ``stem_1``, ``reduction_0``, ``reduction_1``.

    Examples
    --------
    >>> g = nasnet_a_mobile(batch=2)
    >>> g["reduction_0.concat"].attrs["out_shape"], g.num_ops
    ([2, 352, 14, 14], 908)
    """
    nb = NetBuilder("nasnet_a_mobile", dtype=dtype)
    x = nb.input("input", (batch, 3, image, image))
    x = nb.bn(nb.conv(x, 32, 3, stride=2, name="conv0.conv"), name="conv0.bn")
    outs: list[Tensor | None] = [None, x]

    def add_cell(ch: int, reduction: bool, name: str) -> None:
        last = outs[-1]
        assert last is not None
        outs.append(_cell(nb, last, outs[-2], ch, reduction, name))

    add_cell(filters // 4, True, "stem_0")
    add_cell(filters // 2, True, "stem_1")
    ch, cell = filters, 0
    for stack in range(3):
        if stack:
            ch *= 2
            add_cell(ch, True, f"reduction_{stack - 1}")
        for _ in range(cells_per_stack):
            add_cell(ch, False, f"cell_{cell}")
            cell += 1
    y = outs[-1]
    assert y is not None
    y = nb.global_pool(nb.act(y, name="relu"), name="avgpool")
    y = nb.view(y, (batch, y.shape[1]), name="flatten")
    nb.linear(y, classes, name="fc")
    return nb.build(
        {"model": "nasnet_a_mobile", "batch": batch, "input_shape": [batch, 3, image, image]}
    )
