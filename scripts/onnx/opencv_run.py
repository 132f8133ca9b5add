#!/usr/bin/python3
"""Test helper: runs an ONNX file in OpenCV's dnn module (an independent runtime) on raw
float32 NHWC images, one image at a time (OpenCV 4.6's MaxUnpool takes a batch of 1), and
writes the outputs as raw float32 (a segmentation network's per pixel, in NHWC order).
Usage: opencv_run.py MODEL.onnx IN.f32 H W C OUT.f32"""
import sys
import numpy as np
import cv2

model, inp, h, w, c, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
x = np.fromfile(inp, np.float32).reshape(-1, h, w, c).transpose(0, 3, 1, 2).copy()
net = cv2.dnn.readNetFromONNX(model)
net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
outs = []
for i in range(x.shape[0]):
    net.setInput(x[i:i + 1])
    outs.append(net.forward().copy())
y = np.concatenate(outs)
if y.ndim == 4:  # scores per pixel (N, K, H, W): dltrain's (N, H, W, K) order
    y = y.transpose(0, 2, 3, 1)
y.astype(np.float32).tofile(out)
print(f"opencv {cv2.__version__}: {model} -> output {y.shape}")
