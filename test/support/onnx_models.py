# ONNX models for test/ml-onnx.test.ts, built with Debian's python3-onnx, and their weights for the
# numpy reference (onnx_reference.py). Usage: onnx_models.py DIR
#  - mlp.onnx:      per pixel [N, 4] -> [N, 1] (Gemm, Relu, Gemm)
#  - classes.onnx:  per pixel [N, 4] -> [N, 3] (Gemm, Softmax), output labels in its metadata
#  - conv.onnx:     patches [1, 4, 32, 32] -> [1, 2, 32, 32] (3x3 convolution, zero padding, Relu)
#  - conv_open.onnx: patches [1, 4, H, W] -> [1, 1, H, W] (the same convolution's first filter)
#  - wrong.onnx:    per pixel [N, 3] -> [N, 1] (does not fit a cube of 4 bands)
#  - truncated.onnx, garbage.onnx: not valid ONNX files
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
# Reflectances are 0..10000: the first layer scales them down.
W1 = (rng.standard_normal((4, 8)) * 1e-4).astype(np.float32)
b1 = rng.standard_normal(8).astype(np.float32) * 0.1
W2 = rng.standard_normal((8, 1)).astype(np.float32)
b2 = np.array([0.25], dtype=np.float32)
Wc = (rng.standard_normal((4, 3)) * 2e-4).astype(np.float32)
bc = rng.standard_normal(3).astype(np.float32) * 0.1
K = (rng.standard_normal((2, 4, 3, 3)) * 1e-4).astype(np.float32)
kb = np.array([0.1, -0.2], dtype=np.float32)


def save(graph, name, labels=None):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='xeo-tests')
    m.ir_version = 7
    if labels:
        m.metadata_props.add(key='output_labels', value=','.join(labels))
    onnx.checker.check_model(m)
    onnx.save(m, f'{out}/{name}')


init = lambda a, n: numpy_helper.from_array(a, n)
x2 = lambda c: helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', c])

save(helper.make_graph(
    [helper.make_node('Gemm', ['x', 'W1', 'b1'], ['h']), helper.make_node('Relu', ['h'], ['r']), helper.make_node('Gemm', ['r', 'W2', 'b2'], ['y'])],
    'mlp', [x2(4)], [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 1])],
    [init(W1, 'W1'), init(b1, 'b1'), init(W2, 'W2'), init(b2, 'b2')]), 'mlp.onnx')

save(helper.make_graph(
    [helper.make_node('Gemm', ['x', 'Wc', 'bc'], ['z']), helper.make_node('Softmax', ['z'], ['p'], axis=1)],
    'classes', [x2(4)], [helper.make_tensor_value_info('p', TensorProto.FLOAT, ['N', 3])],
    [init(Wc, 'Wc'), init(bc, 'bc')]), 'classes.onnx', labels=['water', 'forest', 'crop'])

save(helper.make_graph(
    [helper.make_node('Conv', ['x', 'K', 'kb'], ['c'], pads=[1, 1, 1, 1]), helper.make_node('Relu', ['c'], ['y'])],
    'conv', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 4, 32, 32])], [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 2, 32, 32])],
    [init(K, 'K'), init(kb, 'kb')]), 'conv.onnx')

save(helper.make_graph(
    [helper.make_node('Conv', ['x', 'K1', 'kb1'], ['y'], pads=[1, 1, 1, 1])],
    'conv_open', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 4, 'H', 'W'])], [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 1, 'H', 'W'])],
    [init(K[:1], 'K1'), init(kb[:1], 'kb1')]), 'conv_open.onnx')

save(helper.make_graph(
    [helper.make_node('Gemm', ['x', 'W3', 'b2'], ['y'])],
    'wrong', [x2(3)], [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 1])],
    [init(W2[:3], 'W3'), init(b2, 'b2')]), 'wrong.onnx')

whole = open(f'{out}/mlp.onnx', 'rb').read()
open(f'{out}/truncated.onnx', 'wb').write(whole[: len(whole) // 2])
open(f'{out}/garbage.onnx', 'wb').write(bytes(rng.integers(0, 256, 4096, dtype=np.uint8)))
np.savez(f'{out}/weights.npz', W1=W1, b1=b1, W2=W2, b2=b2, Wc=Wc, bc=bc, K=K, kb=kb)
