"""Make the HLO text samples of this folder with JAX (CPU): ``python datasets/hlo/make_samples.py``.

Three small networks (an MLP, a conv block, an attention block), each written twice: as
lowered (``jax.jit(f).lower(...).as_text(dialect="hlo")``, one instruction per primitive) and
as compiled by XLA for the CPU (``.compile().as_text()``, with fusions). The debug tables XLA
prints before the computations (file names, stack frames of this script) and per-instruction
``metadata`` are removed so the files do not depend on where the script ran. Needs
``pip install jax jaxlib`` (made with jax 0.10.2).
"""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp

HERE = Path(__file__).resolve().parent


def mlp(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array) -> jax.Array:
    """Two dense layers with GELU and a softmax head."""
    return jax.nn.softmax(jax.nn.gelu(x @ w1 + b1) @ w2, axis=-1)


def conv_block(x: jax.Array, w: jax.Array, scale: jax.Array, shift: jax.Array) -> jax.Array:
    """3x3 conv (NCHW), inference batch norm as scale/shift, ReLU, 2x2 max pool."""
    y = jax.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")
    )
    y = jax.nn.relu(y * scale[None, :, None, None] + shift[None, :, None, None])
    return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def attention(x: jax.Array, wq: jax.Array, wk: jax.Array, wv: jax.Array) -> jax.Array:
    """Single-head scaled dot-product self-attention with a residual connection."""
    q, k, v = x @ wq, x @ wk, x @ wv
    s = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(q.shape[-1])
    return x + jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)


SAMPLES = {
    "mlp": (mlp, [(32, 256), (256, 512), (512,), (512, 10)]),
    "conv_block": (conv_block, [(8, 16, 32, 32), (32, 16, 3, 3), (32,), (32,)]),
    "attention": (attention, [(4, 128, 64), (64, 64), (64, 64), (64, 64)]),
}
_TABLES = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\n(.+\n)*\n", re.M)
_METADATA = re.compile(r", metadata=\{[^{}]*\}")


def _clean(text: str) -> str:
    return _METADATA.sub("", _TABLES.sub("", text)).rstrip() + "\n"


def main() -> None:
    """Write ``NAME.hlo`` (lowered) and ``NAME.opt.hlo`` (compiled) for every sample."""
    for name, (fn, shapes) in SAMPLES.items():
        args = [jnp.ones(s, jnp.float32) for s in shapes]
        lowered = jax.jit(fn).lower(*args)
        (HERE / f"{name}.hlo").write_text(_clean(lowered.as_text(dialect="hlo")))
        (HERE / f"{name}.opt.hlo").write_text(_clean(str(lowered.compile().as_text())))
        print(f"wrote {name}.hlo, {name}.opt.hlo")


if __name__ == "__main__":
    main()
