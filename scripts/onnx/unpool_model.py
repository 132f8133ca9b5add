#!/usr/bin/python3
"""Test helper: a SegNet-style MaxPool (with its Indices output) + MaxUnpool classifier, written
as an ONNX graph with onnx.helper (torch.onnx cannot export MaxUnpool), and PyTorch's
probabilities for it computed with torch.nn.functional (max_pool2d(return_indices=True),
max_unpool2d) on the same weights. Writes unpool.{onnx,in.f32,probs.f32} like torch_models.py.
Usage: unpool_model.py OUTDIR"""
import sys
import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper, TensorProto


def main(out):
    gen = torch.Generator().manual_seed(3)
    n, size, classes = 4, 16, 10
    x = torch.rand(n, 3, size, size, generator=gen) * 255
    w1 = torch.randn(6, 3, 3, 3, generator=gen) * 0.2 / 255
    b1 = torch.randn(6, generator=gen) * 0.1
    w2 = torch.randn(6, 6, 1, 1, generator=gen) * 0.4
    b2 = torch.randn(6, generator=gen) * 0.1
    w3 = torch.randn(classes, 6 * size * size, generator=gen) * 0.05
    b3 = torch.randn(classes, generator=gen) * 0.1

    def forward(w3s):
        # No activation before the pooling: random values have no ties in a window.
        y = F.conv2d(x, w1, b1, padding=1)
        p, idx = F.max_pool2d(y, 2, 2, return_indices=True)
        q = F.conv2d(p, w2, b2)
        u = F.max_unpool2d(q, idx, 2, 2)
        return F.linear(torch.flatten(u, 1), w3s, b3)

    with torch.no_grad():
        w3 *= 3.0 / max(float(forward(w3).std()), 1e-6)  # moderate class scores
        probs = torch.softmax(forward(w3), 1)
    inits = [numpy_helper.from_array(t.numpy().astype(np.float32), name)
             for t, name in [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (w3, "w3"), (b3, "b3")]]
    nodes = [
        helper.make_node("Conv", ["data", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c1"], ["pool", "pool_idx"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("MaxUnpool", ["c2", "pool_idx"], ["unpool"], name="unpool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["unpool"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "w3", "b3"], ["fc"], name="fc", transB=1),
        helper.make_node("Softmax", ["fc"], ["scores"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(nodes, "unpool",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["batch", 3, size, size])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, f"{out}/unpool.onnx")
    x.permute(0, 2, 3, 1).contiguous().numpy().astype(np.float32).tofile(f"{out}/unpool.in.f32")
    probs.numpy().astype(np.float32).tofile(f"{out}/unpool.probs.f32")
    print(f"unpool: input {tuple(x.shape)}, probabilities {tuple(probs.shape)}, max {float(probs.max()):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
