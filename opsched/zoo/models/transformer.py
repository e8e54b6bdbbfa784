"""One BERT-large encoder layer and one GPT-2 (small) block, at inference.

BERT (post-norm): Q, K and V projections, scaled dot-product attention per head (scores
``Q K^T``, scale, softmax, ``P V``), merge of the heads, output projection, residual add,
layer norm; then the feed-forward network (``d -> 4d``, GELU, ``4d -> d``), residual add,
layer norm. BERT-large: ``d = 1024``, 16 heads, FFN 4096; 12,596,224 parameters per layer.

GPT-2 (pre-norm): layer norm, one fused QKV projection (``d -> 3d``), causal attention (the
mask is an elementwise op on the scores), merge, output projection, residual add; layer norm,
MLP (``d -> 4d``, GELU, ``4d -> d``), residual add. GPT-2 small: ``d = 768``, 12 heads;
7,087,872 parameters per block.

Linear layers are ``matmul`` ops with ``M = batch x seq`` (their bias is counted in the
parameters, not in the FLOPs). Splitting into heads is a ``view`` (the batched products read
the strided layout); merging the heads back is a ``copy`` (a transpose made contiguous).
Dropout is an identity at inference and left out. The input activations are one ``input``
op; the embeddings are not part of a layer.

References
----------
J. Devlin, M.-W. Chang, K. Lee, K. Toutanova. BERT: Pre-training of Deep Bidirectional
Transformers for Language Understanding. NAACL 2019.
A. Radford, J. Wu, R. Child, D. Luan, D. Amodei, I. Sutskever. Language Models are
Unsupervised Multitask Learners. OpenAI, 2019.

Examples
--------
>>> bert_large_layer().attrs["params"], gpt2_block().attrs["params"]
(12596224, 7087872)
"""

from __future__ import annotations

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.zoo.models.builder import NetBuilder, Tensor

__all__ = ["bert_large_layer", "gpt2_block"]


def _attention_core(nb: NetBuilder, q: Tensor, k: Tensor, v: Tensor, *, causal: bool) -> Tensor:
    """Scores, scale, (mask), softmax, context and head merge; returns ``(B, S, d)``."""
    b, h, s, dh = q.shape
    scores = nb.bmm(q, k, batch=b * h, m=s, n=s, k=dh, out_shape=(b, h, s, s), name="scores")
    scores = nb.act(scores, "scale", name="scale")
    if causal:
        scores = nb.act(scores, "causal_mask", name="mask")
    probs = nb.softmax(scores, name="softmax")
    ctx = nb.bmm(probs, v, batch=b * h, m=s, n=dh, k=s, out_shape=(b, h, s, dh), name="context")
    return nb.copy(ctx, (b, s, h * dh), "merge_heads", name="merge_heads")


def _check(d: int, heads: int, seq_len: int, batch: int) -> None:
    if heads < 1 or d % heads:
        raise ProblemError(f"hidden size {d} is not divisible by {heads} heads")
    if seq_len < 1 or batch < 1:
        raise ProblemError(f"batch and seq_len must be >= 1, got {batch} and {seq_len}")


def bert_large_layer(
    batch: int = 1,
    dtype: str = "float32",
    *,
    seq_len: int = 512,
    hidden: int = 1024,
    heads: int = 16,
    ffn: int = 4096,
) -> OpGraph:
    """One BERT encoder layer (BERT-large sizes by default) on ``batch x seq_len`` tokens.

    Parameters
    ----------
    batch, seq_len
        Sequences per batch and tokens per sequence (512, BERT's longest, by default).
    dtype
        Element type of every tensor.
    hidden, heads, ffn
        Model width, attention heads and feed-forward width.

    Returns
    -------
    OpGraph
        20 ops: input, Q/K/V projections, 3 head views, scores, scale, softmax, context,
        merge, output projection, add, layer norm, FFN in, GELU, FFN out, add, layer norm.

    Examples
    --------
    >>> g = bert_large_layer(batch=2, seq_len=128)
    >>> g.num_ops, g["attention.scores"].attrs["out_shape"]
    (20, [2, 16, 128, 128])
    """
    _check(hidden, heads, seq_len, batch)
    dh = hidden // heads
    nb = NetBuilder("bert_large_layer", dtype=dtype)
    x = nb.input("input", (batch, seq_len, hidden))
    with nb.scope("attention"):
        qkv = []
        for part in "qkv":
            t = nb.linear(x, hidden, name=part)
            qkv.append(nb.view(t, (batch, heads, seq_len, dh), "split_heads", name=f"{part}_heads"))
        ctx = _attention_core(nb, *qkv, causal=False)
        y = nb.linear(ctx, hidden, name="output")
        y = nb.layernorm(nb.add([y, x], name="residual"), name="layernorm")
    with nb.scope("ffn"):
        z = nb.act(nb.linear(y, ffn, name="intermediate"), "gelu", name="gelu")
        z = nb.linear(z, hidden, name="output")
        nb.layernorm(nb.add([z, y], name="residual"), name="layernorm")
    return nb.build(
        {
            "model": "bert_large_layer",
            "batch": batch,
            "seq_len": seq_len,
            "hidden": hidden,
            "heads": heads,
            "input_shape": [batch, seq_len, hidden],
        }
    )


def gpt2_block(
    batch: int = 1,
    dtype: str = "float32",
    *,
    seq_len: int = 1024,
    hidden: int = 768,
    heads: int = 12,
) -> OpGraph:
    """One GPT-2 transformer block (GPT-2 small by default) on ``batch x seq_len`` tokens.

    Parameters
    ----------
    batch, seq_len
        Sequences per batch and tokens per sequence (1024, GPT-2's context, by default).
    dtype
        Element type of every tensor.
    hidden, heads
        Model width and attention heads; the MLP is ``4 x hidden`` wide.

    Returns
    -------
    OpGraph
        19 ops: input, layer norm, QKV projection, 3 head views, scores, scale, causal mask,
        softmax, context, merge, projection, add, layer norm, MLP in, GELU, MLP out, add.

    Examples
    --------
    >>> g = gpt2_block(seq_len=64)
    >>> g.num_ops, g["mlp.fc"].attrs["out_shape"]
    (19, [1, 64, 3072])
    """
    _check(hidden, heads, seq_len, batch)
    dh = hidden // heads
    nb = NetBuilder("gpt2_block", dtype=dtype)
    x = nb.input("input", (batch, seq_len, hidden))
    with nb.scope("attn"):
        h = nb.layernorm(x, name="ln_1")
        qkv = nb.linear(h, 3 * hidden, name="c_attn")
        parts = [
            nb.view(qkv, (batch, heads, seq_len, dh), "split_heads", name=f"{p}_heads")
            for p in "qkv"
        ]
        ctx = _attention_core(nb, *parts, causal=True)
        y = nb.add([nb.linear(ctx, hidden, name="c_proj"), x], name="residual")
    with nb.scope("mlp"):
        h = nb.layernorm(y, name="ln_2")
        z = nb.act(nb.linear(h, 4 * hidden, name="fc"), "gelu", name="gelu")
        nb.add([nb.linear(z, hidden, name="c_proj"), y], name="residual")
    return nb.build(
        {
            "model": "gpt2_block",
            "batch": batch,
            "seq_len": seq_len,
            "hidden": hidden,
            "heads": heads,
            "input_shape": [batch, seq_len, hidden],
        }
    )
