"""A NumPy model of CUDA's texture unit (CUDA C++ Programming Guide,
appendix "Texture Fetching"), written independently of ql_texture.h for
the texture tests: coordinates scaled by the extent when normalised; point
sampling reads floor(x); linear filtering reads floor(x - 0.5) and the next
texel with the weight frac(x - 0.5) held in 9-bit fixed point (8 fractional
bits, so rounded to a multiple of 1/256); the address mode applied to each
tap's index (wrap and mirror only with normalised coordinates, clamp
otherwise); border taps read the border colour. All in float32."""
from __future__ import annotations

import numpy as np

F = np.float32
WRAP, CLAMP, MIRROR, BORDER = "wrap", "clamp", "mirror", "border"


def texels(data: np.ndarray, channels: int, read_mode: str = "element") -> np.ndarray:
    """data (C order, then channels) as float32 texels (..., channels)."""
    a = data if channels > 1 else data[..., None]
    if read_mode == "normalized_float":
        bits = 8 * a.dtype.itemsize
        if a.dtype.kind == "u":
            return a.astype(F) / F(2**bits - 1)
        return np.maximum(a.astype(F) / F(2**(bits - 1) - 1), F(-1))
    return a.astype(F)


def _address(i: np.ndarray, n: int, mode: str, normalized: bool):
    """(index in range, is-border mask) for integer tap indices i."""
    if not normalized and mode in (WRAP, MIRROR):
        mode = CLAMP
    if mode == BORDER:
        out = (i < 0) | (i >= n)
        return np.clip(i, 0, n - 1), out
    if mode == WRAP:
        return np.mod(i, n), np.zeros(i.shape, bool)
    if mode == MIRROR:
        j = np.mod(i, 2 * n)
        return np.where(j >= n, 2 * n - 1 - j, j), np.zeros(i.shape, bool)
    return np.clip(i, 0, n - 1), np.zeros(i.shape, bool)


def fetch(tex: np.ndarray, coords, *, address=CLAMP, filter="point", normalized=False,
          border=(0, 0, 0, 0), quantize=True) -> np.ndarray:
    """What tex1D/tex2D/tex3D return at coords (x first, one float32 array
    per axis) from float32 texels tex (C order, then channels): (n, channels).
    quantize=False uses exact weights (to show the model's weights matter)."""
    dims = tex.ndim - 1
    extents = tex.shape[:dims][::-1]          # width, height, depth
    modes = (address,) * dims if isinstance(address, str) else tuple(address)
    ch = tex.shape[-1]
    bcol = np.array((list(border) + [0, 0, 0, 0])[:ch], F)
    scaled = []
    for a in range(dims):
        u = np.asarray(coords[a], F)
        if normalized:
            u = u * F(extents[a])
        scaled.append(np.minimum(np.maximum(u, F(-2**30)), F(2**30)))

    def read(idx, masks):
        # idx: per axis (x first) in-range indices; C-order lookup
        v = tex[tuple(idx[::-1])]
        out = np.zeros(v.shape[0], bool)
        for m in masks:
            out |= m
        return np.where(out[:, None], bcol[None, :], v)

    if filter == "point":
        idx, masks = [], []
        for a in range(dims):
            i, m = _address(np.floor(scaled[a]).astype(np.int64), extents[a], modes[a], normalized)
            idx.append(i)
            masks.append(m)
        return read(idx, masks)
    lo, hi, w = [], [], []
    for a in range(dims):
        u = scaled[a] - F(0.5)
        f = np.floor(u)
        frac = (u - f).astype(F)
        w.append(np.floor(frac * F(256) + F(0.5)) * F(1 / 256) if quantize else frac)
        lo.append(_address(f.astype(np.int64), extents[a], modes[a], normalized))
        hi.append(_address(f.astype(np.int64) + 1, extents[a], modes[a], normalized))
    acc = np.zeros((len(scaled[0]), ch), F)
    for k in range(1 << dims):
        wk = np.ones(len(scaled[0]), F)
        idx, masks = [], []
        for a in range(dims):
            up = (k >> a) & 1
            wk = wk * (w[a] if up else F(1) - w[a])
            i, m = hi[a] if up else lo[a]
            idx.append(i)
            masks.append(m)
        acc = acc + wk[:, None] * read(idx, masks)
    return acc
