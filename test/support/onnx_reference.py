# The numpy reference of the models onnx_models.py builds: the same arithmetic on a cube as
# Xeo's JSON gives it. Usage: onnx_reference.py WEIGHTS.npz MODEL CUBE.json > REFERENCE.json
# The cube's dimensions are (t, bands, y, x); the answer is the nested values (null for no-data)
# of the cube predict_onnx should give: (t, y, x) for one value per pixel, else (t, k, y, x).
# Patch models see 0 past the raster edge and for missing values; every output is no-data where
# any band of its pixel has none.
import json
import sys
import numpy as np

w = np.load(sys.argv[1])
model = sys.argv[2]
cube = json.load(open(sys.argv[3]))
assert [d['type'] for d in cube['dimensions']] == ['temporal', 'bands', 'spatial', 'spatial']
a = np.array(cube['data'], dtype=object)
a[a == None] = np.nan  # noqa: E711 (elementwise)
a = a.astype(np.float64)
missing = np.isnan(a).any(axis=1)  # (t, y, x)
px = np.moveaxis(a, 1, -1)  # (t, y, x, bands)


def conv(K, kb):
    t, c, Y, X = a.shape
    pad = np.zeros((t, c, Y + 2, X + 2))
    pad[:, :, 1:-1, 1:-1] = np.nan_to_num(a, nan=0.0)
    out = np.zeros((t, K.shape[0], Y, X))
    for i in range(3):
        for j in range(3):
            out += np.einsum('oc,tcyx->toyx', K[:, :, i, j], pad[:, :, i:i + Y, j:j + X])
    return out + kb[None, :, None, None]


if model == 'mlp':
    h = np.maximum(px @ w['W1'] + w['b1'], 0)
    r = (h @ w['W2'] + w['b2'])[..., 0]
    r[missing] = np.nan
elif model == 'classes':
    z = px @ w['Wc'] + w['bc']
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    r = np.moveaxis(e / e.sum(axis=-1, keepdims=True), -1, 1)
    r[np.broadcast_to(missing[:, None], r.shape)] = np.nan
elif model == 'conv':
    r = np.maximum(conv(w['K'], w['kb']), 0)
    r[np.broadcast_to(missing[:, None], r.shape)] = np.nan
elif model == 'conv_open':
    r = conv(w['K'][:1], w['kb'][:1])[:, 0]
    r[missing] = np.nan
else:
    raise SystemExit(f'unknown model {model}')
json.dump(np.where(np.isnan(r), None, r).tolist(), sys.stdout)
