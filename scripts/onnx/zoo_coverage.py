#!/usr/bin/env python3
"""ONNX import coverage of torchvision's classification zoo, both PyTorch exporters.

For every architecture in torchvision.models.list_models(module=torchvision.models) (random
weights from a fixed seed, num_classes=10) and both exporters (torch.onnx.export with
dynamo=True at its default opset, and dynamo=False at opset 17): the model is wrapped so the
graph holds the ImageNet input normalisation ((x - 255 mean) / (255 std) on 0..255 pixels, one
Sub and one Div) and a closing softmax; its last Linear (or Conv) is scaled so the logits of
the fixed images have a standard deviation of 2 (random heads give near-uniform or near-one-hot
probabilities, which hide differences). Then: export, `dltrain import`, `dltrain classify
--json` on the fixed images (PNG files) against onnxruntime's probabilities on the same
decoded pixels, `dltrain export` and onnxruntime on that file against the original. The
transformers (vit, swin, maxvit) are exported with one image, as their users export them, and
onnxruntime runs that file image by image. Each step runs under a time limit. The markdown table goes to stdout and, with --write-docs, into
docs/transfer.md between the zoo-coverage markers.
timm's models run the same way when named timm:NAME in --models (timm.create_model(NAME,
pretrained=False, num_classes=10), at the input size of NAME's pretrained configuration, every
LayerScale gamma drawn in [0.5, 1.5] where its 1e-5 start would hide how the import reads it);
a run of timm models alone writes its own table, between the zoo-coverage-timm markers.
torchvision's segmentation models run the same way when named seg:NAME (NAME from
torchvision.models.segmentation: weights and weights_backbone None, num_classes 10, no
auxiliary head, the graph's output its "out" scores with a softmax over each pixel's classes,
the last Conv scaled): dltrain's per-pixel probabilities (`dltrain export --debug-forward`, the
network's own output) are compared with onnxruntime's; a run of them alone writes its own table,
between the zoo-coverage-seg markers.

Runs in a virtual environment with PyPI's torch, torchvision, onnx, onnxruntime, onnxscript
(--venv, default build/zoo-venv, created when missing); re-executes itself there.
Usage: scripts/onnx/zoo_coverage.py [--venv DIR] [--dltrain build/dltrain] [--models a,b]
       [--exporters dynamo,torchscript] [--write-docs] [--keep DIR]
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PACKAGES = ["torch", "torchvision", "onnx", "onnxruntime", "onnxscript", "timm", "transformers"]
BEGIN, END = "<!-- zoo-coverage begin -->", "<!-- zoo-coverage end -->"
TIMM_BEGIN, TIMM_END = "<!-- zoo-coverage-timm begin -->", "<!-- zoo-coverage-timm end -->"
TIMM = "timm:"
SEG_BEGIN, SEG_END = "<!-- zoo-coverage-seg begin -->", "<!-- zoo-coverage-seg end -->"
SEG = "seg:"
EXPORTERS = {"dynamo": "dynamo=True, default opset", "torchscript": "dynamo=False, opset 17"}
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
LOGIT_STD = 2.0


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--venv", default=os.path.join(ROOT, "build", "zoo-venv"),
                   help="virtual environment with PyPI's torch etc. (default build/zoo-venv; created when missing)")
    p.add_argument("--dltrain", default=os.path.join(ROOT, "build", "dltrain"), help="the dltrain binary")
    p.add_argument("--models", default="", help="comma-separated architectures (default: all of torchvision's)")
    p.add_argument("--exporters", default="dynamo,torchscript", help="dynamo, torchscript or both (default)")
    p.add_argument("--size", type=int, default=64, help="input height and width where the architecture allows (64)")
    p.add_argument("--images", type=int, default=4, help="fixed test images (4)")
    p.add_argument("--threads", type=int, default=2, help="threads for PyTorch, onnxruntime and dltrain (2)")
    p.add_argument("--jobs", type=int, default=1,
                   help="dltrain checks run at once, beside the exports (1; they only compare, so 2 is safe)")
    p.add_argument("--timeout", type=int, default=300, help="seconds per step of one model (300)")
    p.add_argument("--max-params", type=float, default=150e6,
                   help="architectures with more parameters are listed as not run (150e6)")
    p.add_argument("--write-docs", action="store_true", help="write the table into docs/transfer.md")
    p.add_argument("--keep", default="", help="keep the exported files (ONNX, images, probabilities) in this folder")
    p.add_argument("--reuse", action="store_true",
                   help="with --keep: reuse the exports a previous run left there (only dltrain's side runs again)")
    p.add_argument("--json", default="", help="also write one JSON line per architecture and exporter here")
    p.add_argument("--merge", default="",
                   help="the --json lines of an earlier run: its rows fill the table for the architectures this run "
                        "leaves out (e.g. a run of the large ones with --max-params raised, merged into the full table)")
    p.add_argument("--export-arch", nargs=5, metavar=("ARCH", "EXPORTERS", "SIZE", "IMAGES", "DIR"),
                   help=argparse.SUPPRESS)  # the child process that builds, exports and runs one model
    return p.parse_args(argv)


# ---------------------------------------------------------------- the virtual environment

def ensure_venv(args, script=__file__):
    """Re-executes SCRIPT with the venv's python (creating the venv when missing)."""
    venv = os.path.abspath(args.venv)
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    if not os.path.exists(py):
        print(f"== creating {venv} with PyPI's {' '.join(PACKAGES)} (a large download)", file=sys.stderr)
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--timeout", "20", "--retries", "1"] + PACKAGES,
                       check=True)
    probe = subprocess.run([py, "-c", "import " + ", ".join(PACKAGES)], capture_output=True, text=True)
    if probe.returncode != 0:
        sys.exit(f"zoo_coverage: {venv} cannot import {', '.join(PACKAGES)}: {probe.stderr.strip().splitlines()[-1:]}"
                 f" (pip install them there, or --venv DIR)")
    os.execv(py, [py, os.path.abspath(script)] + sys.argv[1:])


# ---------------------------------------------------------------- models (child process)

def input_size(arch, size):
    """The input side for ARCH: SIZE where the architecture allows, else its smallest."""
    if arch.startswith(TIMM):  # timm's transformers fix their input size
        import timm
        return timm.get_pretrained_cfg(arch[len(TIMM):]).input_size[-1]
    if arch == "inception_v3":
        return max(size, 75)
    if arch == "alexnet" or arch.startswith("vgg") or arch == "maxvit_t":
        return 224  # adaptive pooling to 6x6 / 7x7 is only an identity (exportable) there; maxvit fixes 224
    if arch.startswith("vit_"):
        return size - size % int(arch.split("_")[2])  # a multiple of the patch size
    return size


def segmentation_out(net):
    """torchvision's segmentation models return {"out": scores, "aux": ...}: the scores alone."""
    import torch

    class SegmentationOut(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)["out"]

    return SegmentationOut(net)


# Hugging Face's SegFormer (transformers' SegformerForSemanticSegmentation) with the encoder sizes
# of NVIDIA's mit-b0, b1 and b2 checkpoints: seg:segformer_b0 etc. in the segmentation table.
SEGFORMER = {"segformer_b0": {"hidden_sizes": [32, 64, 160, 256], "depths": [2, 2, 2, 2], "decoder_hidden_size": 256},
             "segformer_b1": {"hidden_sizes": [64, 128, 320, 512], "depths": [2, 2, 2, 2], "decoder_hidden_size": 256},
             "segformer_b2": {"hidden_sizes": [64, 128, 320, 512], "depths": [3, 4, 6, 3], "decoder_hidden_size": 768}}


def segformer(name):
    """SegFormer of SEGFORMER's sizes with 10 classes."""
    return segformer_model(num_labels=10, num_attention_heads=[1, 2, 5, 8], sr_ratios=[8, 4, 2, 1], **SEGFORMER[name])


def segformer_model(**config):
    """transformers' SegformerForSemanticSegmentation of SegformerConfig(**config), its logits (a
    quarter of the input's size) resized to the input as post_process_semantic_segmentation does."""
    import torch
    import torch.nn.functional as F
    from transformers import SegformerConfig, SegformerForSemanticSegmentation
    cfg = SegformerConfig(**config)

    class Segformer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = SegformerForSemanticSegmentation(cfg)

        def forward(self, x):
            logits = self.net(pixel_values=x).logits
            return F.interpolate(logits, size=x.shape[2:], mode="bilinear", align_corners=False)

    return Segformer()


def segmentation_kwargs(arch):
    kwargs = {"weights": None, "weights_backbone": None, "num_classes": 10}
    if not arch[len(SEG):].startswith("lraspp"):
        kwargs["aux_loss"] = False
    return kwargs


def build_model(arch, side):
    import torch
    import torchvision
    if arch.startswith(SEG):
        torch.manual_seed(0)
        if arch[len(SEG):] in SEGFORMER:
            model = segformer(arch[len(SEG):]).eval()
            draw_zeros(model)
            return model
        return segmentation_out(torchvision.models.get_model(arch[len(SEG):], **segmentation_kwargs(arch)).eval())
    if arch.startswith(TIMM):
        import timm
        torch.manual_seed(0)
        model = timm.create_model(arch[len(TIMM):], pretrained=False, num_classes=10).eval()
        draw_zeros(model)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("gamma"):  # LayerScale
                    p.uniform_(0.5, 1.5)
        return model
    kwargs = {"weights": None, "num_classes": 10}
    if arch.startswith("vit_"):
        kwargs["image_size"] = side
    torch.manual_seed(0)
    model = torchvision.models.get_model(arch, **kwargs).eval()
    if one_image(arch):
        draw_zeros(model)
    return model


def draw_zeros(model, std=0.2):
    """Draws the parameters that start at zero (torchvision's transformers start their head, class
    token and attention biases so): a zero head gives uniform probabilities, which compare equal
    whatever the network computes."""
    import torch
    with torch.no_grad():
        for p in model.parameters():
            if not p.abs().sum():
                p.normal_(0.0, std)


def make_images(n, side, seed=0):
    """N smooth colour images with noise (uint8, N x H x W x 3), the same for every model."""
    import numpy as np
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side] / side
    out = []
    for i in range(n):
        f = rng.uniform(1, 4, size=(3, 2))
        ph = rng.uniform(0, 6.3, size=3)
        img = np.stack([127 + 100 * np.sin(6.3 * (f[c, 0] * x + f[c, 1] * y) + ph[c]) for c in range(3)], -1)
        img += rng.normal(0, 20, size=img.shape)
        out.append(np.clip(img, 0, 255).astype(np.uint8))
    return np.stack(out)


def write_pngs(images, folder):
    from PIL import Image
    paths = []
    for i, img in enumerate(images):
        p = os.path.join(folder, f"img{i}.png")
        Image.fromarray(img).save(p)
        paths.append(p)
    return paths


def read_pngs(paths):
    import numpy as np
    from PIL import Image
    return np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths])


def scale_head(model, x):
    """Scales the last Linear (else Conv2d) so the logits of x have standard deviation LOGIT_STD
    over the classes (averaged over the images). Returns the factor."""
    import torch
    last = None
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            last = m
    if last is None:
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                last = m
    with torch.no_grad():
        logits = model(x)
        spread = float(logits.std(dim=1).mean())
        factor = LOGIT_STD / spread if spread > 0 else 1.0
        last.weight.mul_(factor)
        if last.bias is not None:
            last.bias.mul_(factor)
    return factor


def wrap(model):
    """ImageNet normalisation of 0..255 pixels in the graph (one Sub, one Div), softmax at the end."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.register_buffer("mean", torch.tensor([255 * m for m in MEAN]).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor([255 * s for s in STD]).view(1, 3, 1, 1))

        def forward(self, x):
            return torch.softmax(self.net((x - self.mean) / self.std), dim=1)

    return Wrapped(model).eval()


def export(model, x, path, exporter, keep_batchnorm=False, dynamic_batch=False):
    """Exports in inference mode. Both exporters fold BatchNormalization into the convolution
    before it (the dynamo exporter through onnxscript's rewrite rules, TorchScript's in its eval
    pass), which is right for inference but leaves nothing for fine-tuning to normalise with:
    keep_batchnorm=True keeps the BatchNormalization nodes (their running statistics) instead.
    dynamic_batch: the batch a symbolic dimension (what onnxruntime runs a transformer at any
    batch with; dltrain reads the fixed one-image export)."""
    import torch
    dynamic = {"dynamic_axes": {"input": {0: "N"}, "prob": {0: "N"}}} if dynamic_batch else {}
    if exporter == "dynamo":
        import onnxscript.rewriter as rewriter
        default_rules = rewriter._DEFAULT_REWRITE_RULES
        if keep_batchnorm:
            from onnxscript.rewriter.rules.common import _fuse_batchnorm
            bn_rules = set(map(id, _fuse_batchnorm.rules.rules))
            rewriter._DEFAULT_REWRITE_RULES = tuple(r for r in default_rules if id(r) not in bn_rules)
        try:
            torch.onnx.export(model, (x,), path, dynamo=True, input_names=["input"], output_names=["prob"], **dynamic)
        finally:
            rewriter._DEFAULT_REWRITE_RULES = default_rules
    else:
        mode = torch.onnx.TrainingMode.PRESERVE if keep_batchnorm else torch.onnx.TrainingMode.EVAL
        torch.onnx.export(model, (x,), path, dynamo=False, opset_version=17, input_names=["input"],
                          output_names=["prob"], training=mode, **dynamic)


def one_image(arch):
    """Transformers are exported with one image, as their users do: both exporters bake the batch
    into the attention's Reshape targets, and dltrain reads such graphs per image."""
    name = arch.split(":", 1)[-1]  # without timm: or seg:
    return arch.startswith(TIMM) or name.startswith(("vit", "deit", "swin", "maxvit", "mobilevit", "coatnet", "cross",
                                                     "tinyvit", "fastvit", "efficientformer", "poolformer",
                                                     "caformer", "mambaout", "pvt", "segformer", "beit", "pit", "twins", "davit", "xcit", "edgenext", "levit", "cait", "convit", "eva",
                                                     "visformer", "nextvit", "mobilenetv4", "shvit", "efficientvit", "gcvit", "nest", "flatten_max"))


def export_probs(model, x, path, exporter, threads, single):
    """Exports (single: with the first image only) and returns onnxruntime's probabilities of all
    of x (single: image by image)."""
    import numpy as np
    if not single:
        export(model, x, path, exporter)
        return ort_probs(path, x.numpy(), threads)
    export(model, x[:1], path, exporter)
    return np.concatenate([ort_probs(path, x[i:i + 1].numpy(), threads) for i in range(x.shape[0])])


def ort_probs(path, x_nchw, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x_nchw})[0]


def export_arch(arch, exporters, side, n_images, folder, threads):
    """Child: PNGs, the model with its scaled head and, per exporter, FOLDER/EXPORTER/model.onnx,
    onnxruntime's probabilities (probs.npy) and result.json (the opset, or the exporter's error)."""
    import traceback
    import numpy as np
    import onnx
    import torch
    torch.set_num_threads(threads)
    side = int(side)
    paths = write_pngs(make_images(int(n_images), side), folder)
    pixels = read_pngs(paths)  # the decoded PNGs: what dltrain classify reads too
    x = torch.from_numpy(pixels.astype(np.float32)).permute(0, 3, 1, 2).contiguous()
    np.save(os.path.join(folder, "input.npy"), x.numpy())
    net = build_model(arch, side)
    mean = torch.tensor(MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD).view(1, 3, 1, 1) * 255
    factor = scale_head(net, (x - mean) / std)
    model = wrap(net)
    for e in exporters.split(","):
        sub = os.path.join(folder, e)
        os.makedirs(sub, exist_ok=True)
        path = os.path.join(sub, "model.onnx")
        res = {"images": paths, "head_scale": factor}
        try:
            probs = export_probs(model, x, path, e, threads, one_image(arch))
            np.save(os.path.join(sub, "probs.npy"), probs)
            ops = [o.version for o in onnx.load(path, load_external_data=False).opset_import
                   if o.domain in ("", "ai.onnx")]
            res.update(opset=ops[0] if ops else None, max_prob=float(probs.max()), min_prob=float(probs.min()))
        except Exception as ex:  # the exporter's (or onnxruntime's) refusal is this cell's result
            lines = traceback.format_exception_only(type(ex), ex)
            res["error"] = " ".join(lines[0].split()) if lines else type(ex).__name__
        with open(os.path.join(sub, "result.json"), "w") as f:
            json.dump(res, f)


# ---------------------------------------------------------------- the driver

def run_limited(cmd, timeout, env=None, stdout_only=False):
    """Runs cmd in its own process group; kills the group after timeout s. Returns (rc, output):
    rc None after a timeout; output is stdout and stderr together, or with stdout_only
    (stdout, stderr)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE if stdout_only else subprocess.STDOUT,
                         text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = None
    return rc, ((out, err) if stdout_only else out)


def first_error(out, folder):
    """The first line that says what failed, shortened (the temporary folder removed)."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    pick = None
    for ln in lines:
        if re.search(r"\berror\b|Error|Exception|error:", ln) and not ln.startswith("Traceback"):
            pick = ln
            break
    if pick is None:
        pick = lines[-1] if lines else "(no output)"
    pick = pick.replace(folder + "/", "").replace(folder, ".")
    pick = re.sub(r"^dltrain: error: ", "", pick)
    pick = re.sub(r"^(dynamo|torchscript)/model\.onnx: ", "", pick)
    return pick[:160] + ("..." if len(pick) > 160 else "")


def classify_probs(dltrain, model_bin, images, classes, threads, timeout):
    """dltrain classify --json: every class's probability per image (N x classes), or None."""
    import numpy as np
    rc, (out, err) = run_limited([dltrain, "classify", model_bin] + images +
                                 ["--json", "--top", str(classes), "--batch", str(len(images)), "--threads",
                                  str(threads)], timeout, stdout_only=True)
    if rc != 0:
        return None, rc, err + out
    doc = json.loads(out)
    index = {c: i for i, c in enumerate(doc["classes"])}
    by_path = {p["path"]: p for p in doc["predictions"]}
    probs = np.zeros((len(images), len(index)), np.float32)
    for i, path in enumerate(images):
        for t in by_path[path]["top"]:
            probs[i, index[t["label"]]] = t["score"]
    return probs, 0, out


def pixel_probs(dltrain, model_bin, x_nchw, folder, timeout):
    """A segmentation network's probabilities per pixel (N x K x H x W), from `dltrain export
    --debug-forward` on the same pixels (NHWC float32), or None."""
    import numpy as np
    raw, out_path = os.path.join(folder, "input.f32"), os.path.join(folder, "pixels.f32")
    np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1), dtype=np.float32).tofile(raw)
    rc, out = run_limited([dltrain, "export", model_bin, "--debug-forward", raw, "--output", out_path], timeout)
    if rc != 0:
        return None, rc, out
    n, _, h, w = x_nchw.shape
    probs = np.fromfile(out_path, dtype=np.float32).reshape(n, h, w, -1).transpose(0, 3, 1, 2)
    os.remove(out_path)
    return probs, 0, out


def export_all(args, arch, exporters, side, folder):
    """Runs the child for one architecture under the time limit; returns {exporter: error or None}."""
    t0 = time.time()
    rc, out = run_limited([sys.executable, os.path.abspath(__file__), "--export-arch", arch, ",".join(exporters),
                           str(side), str(args.images), folder], args.timeout,
                          env=dict(os.environ, ZOO_THREADS=str(args.threads)))
    seconds = f"{time.time() - t0:.1f} s"
    errors = {}
    for e in exporters:
        res_path = os.path.join(folder, e, "result.json")
        if os.path.exists(res_path):
            errors[e] = json.load(open(res_path)).get("error")
        elif rc is None:
            errors[e] = f"timeout after {args.timeout} s"
        else:
            errors[e] = first_error(out, folder)
    return errors, seconds


def check_one(args, arch, exporter, side, folder, export_error):
    """dltrain's side of one architecture and exporter; returns a result dict."""
    import numpy as np
    r = {"arch": arch, "exporter": exporter, "size": side}
    if export_error:
        r["status"] = "export"
        r["error"] = export_error[:160]
        return r
    sub = os.path.join(folder, exporter)
    info = json.load(open(os.path.join(sub, "result.json")))
    r["opset"] = info["opset"]
    r["max_prob"] = round(info["max_prob"], 3)
    ref = np.load(os.path.join(sub, "probs.npy"))
    onnx_path = os.path.join(sub, "model.onnx")
    bin_path = os.path.join(sub, "model.bin")
    t0 = time.time()
    rc, out = run_limited([args.dltrain, "import", onnx_path, "--output", bin_path], args.timeout)
    r["import_s"] = round(time.time() - t0, 1)
    if rc != 0:
        r["status"] = "import"
        r["error"] = f"timeout after {args.timeout} s" if rc is None else first_error(out, folder)
        return r
    if arch.startswith(SEG):
        probs, rc, out = pixel_probs(args.dltrain, bin_path, np.load(os.path.join(folder, "input.npy")), sub,
                                     args.timeout)
    else:
        probs, rc, out = classify_probs(args.dltrain, bin_path, info["images"], ref.shape[1], args.threads,
                                        args.timeout)
    if probs is None:
        r["status"] = "classify"
        r["error"] = f"timeout after {args.timeout} s" if rc is None else first_error(out, folder)
        return r
    r["diff_import"] = float(np.abs(probs - ref).max())
    out_onnx = os.path.join(sub, "dltrain.onnx")
    rc, out = run_limited([args.dltrain, "export", bin_path, "--output", out_onnx], args.timeout)
    if rc != 0:
        r["status"] = "export back"
        r["error"] = f"timeout after {args.timeout} s" if rc is None else first_error(out, folder)
        return r
    try:
        again = ort_probs(out_onnx, np.load(os.path.join(folder, "input.npy")), args.threads)
    except Exception as e:  # onnxruntime refusing dltrain's file is a result, not a crash
        r["status"] = "onnxruntime on the export"
        r["error"] = first_error(f"{type(e).__name__}: {e}", folder)
        return r
    r["diff_export"] = float(np.abs(again - ref).max())
    r["status"] = "ok"
    for f in (bin_path, out_onnx):
        os.remove(f)
    return r


def param_count(arch, side):
    """The parameter count, without allocating the weights: parameters are created on the meta
    device (regnet's builder computes its widths with tensors, so the whole build cannot be)."""
    import torch
    import torchvision
    if arch.startswith(TIMM):
        import timm
        with torch.device("meta"):
            return sum(p.numel() for p in timm.create_model(arch[len(TIMM):], pretrained=False,
                                                             num_classes=10).parameters())
    if arch[len(SEG):] in SEGFORMER:
        with torch.device("meta"):
            return sum(p.numel() for p in segformer(arch[len(SEG):]).parameters())
    kwargs = {"weights": None, "num_classes": 10}
    if arch.startswith("vit_"):
        kwargs["image_size"] = side
    if arch.startswith(SEG):
        arch, kwargs = arch[len(SEG):], segmentation_kwargs(arch)
    register = torch.nn.Module.register_parameter

    def on_meta(module, name, param):
        if param is not None:
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta
    try:
        m = torchvision.models.get_model(arch, **kwargs)
    finally:
        torch.nn.Module.register_parameter = register
    return sum(p.numel() for p in m.parameters())


def cell(r):
    if r is None:
        return "—"
    if r["status"] == "skipped":
        return r["error"]
    if r["status"] != "ok":  # the exporter colours its messages: the escapes dropped
        return re.sub(r"\x1b\[[0-9;]*m", "", f"{r['status']}: {r['error']}").replace("|", "\\|")
    return f"ok {r['diff_import']:.1e} / {r['diff_export']:.1e}"


def isa():
    """The widest vector ISA /proc/cpuinfo lists: what oneDNN and the peers may use."""
    flags = open("/proc/cpuinfo").read()
    if "avx512_bf16" in flags:
        return "AVX-512 (bf16)"
    if "avx512f" in flags:
        return "AVX-512"
    return "AVX2" if "avx2" in flags else "SSE"


def write_time_config(path, onnx_path, batch, pixels=False):
    """A config for `dltrain time` on an imported classifier (pixels: segmentation network): base:
    the ONNX file, its last two layers (softmax and the output) replaced by dltrain's, as a user's
    transfer config has them."""
    output = "pixelClassification" if pixels else "classification"
    with open(path, "w") as f:
        f.write(f"base:\n  Model: {onnx_path}\n  RemoveLast: 2\nlayers:\n"
                f"  - {{type: softmax, Name: prob_timed}}\n  - {{type: {output}, Name: out_timed}}\n"
                f"training:\n  MiniBatchSize: {batch}\n")


def dltrain_version(dltrain):
    """The binary's own version line ("dltrain 0.1.0"). Tables in docs/ name it; the commit it was
    built from belongs in the issue note, not in the reference page."""
    out = subprocess.run([dltrain, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return out[0] if out else "dltrain ?"


def cpu_model():
    """lscpu's model name, family and model, and the core count."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return platform.processor() or "unknown CPU"
    field = {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in out.splitlines())}
    name = field.get("Model name", platform.processor() or "unknown CPU")
    if "CPU family" in field and "Model" in field:
        name += f" (family {field['CPU family']} model {field['Model']})"
    return f"{name}, {os.cpu_count()} cores"


def opsets(results, exporter):
    """': N', the opset the files of an exporter at its default opset have (it changes between releases)."""
    seen = sorted({r["opset"] for (a, e), r in results.items() if e == exporter and r.get("opset")})
    return (": " + "/".join(map(str, seen))) if seen and EXPORTERS[exporter].endswith("default opset") else ""


def table(results, archs, exporters, versions, minutes, args, reused, merged=0):
    seg = all(a.startswith(SEG) for a in archs)
    ok = {e: [a for a in archs if results.get((a, e), {}).get("status") == "ok"] for e in exporters}
    lines = [
        f"Generated by `scripts/onnx/zoo_coverage.py` on {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
        f"{versions['dltrain']}: "
        f"torch {versions['torch']}, torchvision {versions['torchvision']}, onnx {versions['onnx']}, "
        f"onnxruntime {versions['onnxruntime']}, onnxscript {versions['onnxscript']}"
        + (f", timm {versions['timm']}" if "timm" in versions else "")
        + (f", transformers {versions['transformers']}" if "transformers" in versions else "") + f"; {cpu_model()}, "
        f"{args.threads} threads"
        + (f", {minutes:.0f} min for " + (
            f"the {len(archs) - merged} architectures run here; the rows of the other {merged} are earlier "
            f"runs' (--merge {os.path.basename(args.merge)}), from the same script" if merged else "the whole table")
           if not reused else "") + ".",
        ("Random weights (seed 0), num_classes 10, no auxiliary head, the ImageNet normalisation and a softmax "
           "over each pixel's classes inside the graph (the model's `out` scores; SegFormer's logits resized to "
           "the input, bilinear, as transformers' post-processing does), the last Conv scaled so the "
           f"logits of the {args.images} fixed images have standard deviation {LOGIT_STD:g} over the classes. "
           f"Input {args.size}x{args.size}. A cell reads `ok A / B`: A = largest |probability difference| over the "
           "pixels of dltrain's forward (`dltrain export --debug-forward`) against onnxruntime on the exported "
           "file, " if seg else
           "Random weights (seed 0; the transformers' zero-initialised parameters drawn too), num_classes 10, the "
           "ImageNet normalisation and a softmax inside the graph, the "
           f"last Linear (squeezenet: Conv) scaled so the logits of the {args.images} fixed PNG images have standard "
           f"deviation {LOGIT_STD:g} over the classes. "
           + ("Input: each model's pretrained size; LayerScale gammas drawn in [0.5, 1.5]. " if "timm" in versions
              else f"Input {args.size}x{args.size} (inception_v3 75, alexnet / vgg / maxvit 224). ")
           + "A cell reads `ok A / B`: A = largest |probability difference| of `dltrain classify` against "
           "onnxruntime on the exported file, ")
        + "B = onnxruntime on `dltrain export`'s file against the same; otherwise the "
        "step that failed and its first error line.",
        "",
        "| architecture | input | " + " | ".join(f"{e} ({EXPORTERS[e]}{opsets(results, e)})" for e in exporters) + " |",
        "|---|---|" + "---|" * len(exporters),
    ]
    for a in archs:
        side = next((results[(a, e)].get("size") for e in exporters if (a, e) in results), "")
        lines.append(f"| {a} | {side} | " + " | ".join(cell(results.get((a, e))) for e in exporters) + " |")
    lines.append("")
    for e in exporters:
        diffs = [max(results[(a, e)]["diff_import"], results[(a, e)]["diff_export"]) for a in ok[e]]
        worst = f", largest difference {max(diffs):.1e}" if diffs else ""
        within = sum(d <= 1e-4 for d in diffs)
        lines.append(f"- {e}: {len(ok[e])} of {len(archs)} import and export back ({within} within 1e-4){worst}.")
    return "\n".join(lines) + "\n"


def write_docs(text, run="torchvision"):
    """run: torchvision, timm or seg (each has its own table)."""
    path = os.path.join(ROOT, "docs", "transfer.md")
    doc = open(path).read()
    begin, end = {"timm": (TIMM_BEGIN, TIMM_END), "seg": (SEG_BEGIN, SEG_END)}.get(run, (BEGIN, END))
    if begin in doc and end in doc:
        head, rest = doc.split(begin, 1)
        doc = head + begin + "\n" + text + end + rest.split(end, 1)[1]
    else:
        title = {"timm": "timm's transformers", "seg": "torchvision's segmentation models"}.get(run,
                                                                                               "torchvision's zoo")
        doc = doc.rstrip("\n") + f"\n\n## Coverage of {title}\n\n" + begin + "\n" + text + end + "\n"
    with open(path, "w") as f:
        f.write(doc)
    print(f"wrote the table into {path}", file=sys.stderr)


def sweep(args, archs, exporters, work):
    """Exports one architecture after the other (or reuses the kept exports); dltrain's side runs
    on --jobs threads meanwhile. Returns ({(arch, exporter): result}, architectures reused)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    results = {}
    reused = 0
    lock = threading.Lock()
    jsonl = open(args.json, "w") if args.json else None
    pending = {}  # arch -> dltrain checks still running (its folder is removed after the last)

    def finish(a, e, side, folder, error, export_s):
        t0 = time.time()
        r = check_one(args, a, e, side, folder, error)
        r["seconds"] = round(time.time() - t0, 1)
        r["export_s"] = export_s
        with lock:
            results[(a, e)] = r
            print(f"{a:22s} {e:11s} {cell(r)}  (export {export_s}, dltrain {r['seconds']} s)", file=sys.stderr,
                  flush=True)
            if jsonl:
                jsonl.write(json.dumps(r) + "\n")
                jsonl.flush()
            pending[a] -= 1
            if pending[a] == 0 and not args.keep:
                shutil.rmtree(folder, ignore_errors=True)

    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = []
            for a in archs:
                side = input_size(a, args.size)
                n = param_count(a, side)
                if n > args.max_params:
                    for e in exporters:
                        results[(a, e)] = {"arch": a, "exporter": e, "size": side, "status": "skipped",
                                           "error": f"not run: {n / 1e6:.0f}M parameters > --max-params"}
                    continue
                folder = os.path.join(work, a)
                stored = [os.path.join(folder, e, "result.json") for e in exporters]
                if args.reuse and all(os.path.exists(p) for p in stored):
                    errors = {e: json.load(open(p)).get("error") for e, p in zip(exporters, stored)}
                    export_s = "reused"
                    reused += 1
                else:
                    shutil.rmtree(folder, ignore_errors=True)
                    os.makedirs(folder)
                    errors, export_s = export_all(args, a, exporters, side, folder)
                with lock:
                    pending[a] = len(exporters)
                for e in exporters:
                    futures.append(pool.submit(finish, a, e, side, folder, errors.get(e), export_s))
            for f in futures:
                f.result()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        if jsonl:
            jsonl.close()
    return results, reused


def main():
    args = parse_args(sys.argv[1:])
    if args.export_arch:
        export_arch(*args.export_arch, int(os.environ.get("ZOO_THREADS", "2")))
        return 0
    ensure_venv(args)
    import onnx
    import onnxruntime
    import onnxscript
    import torch
    import torchvision
    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__, "onnxscript": onnxscript.__version__}
    if not os.access(args.dltrain, os.X_OK):
        sys.exit(f"zoo_coverage: no dltrain binary at {args.dltrain} (build it, or --dltrain PATH)")
    exporters = [e for e in args.exporters.split(",") if e]
    for e in exporters:
        if e not in EXPORTERS:
            sys.exit(f"zoo_coverage: unknown exporter '{e}' (dynamo, torchscript)")
    all_archs = torchvision.models.list_models(module=torchvision.models)
    archs = [a for a in args.models.split(",") if a] or all_archs
    timm_run = any(a.startswith(TIMM) for a in archs)
    seg_run = any(a.startswith(SEG) for a in archs)
    if seg_run and (not all(a.startswith(SEG) for a in archs) or args.merge):
        sys.exit("zoo_coverage: seg:NAME models run alone (their own table), without --merge")
    if timm_run:
        import timm
        versions["timm"] = timm.__version__
        if not all(a.startswith(TIMM) for a in archs) or args.merge:
            sys.exit("zoo_coverage: timm:NAME models run alone (their own table), without --merge")
    for a in archs:
        if a.startswith(SEG):
            if a[len(SEG):] in SEGFORMER:
                import transformers
                versions["transformers"] = transformers.__version__
            elif a[len(SEG):] not in torchvision.models.list_models(module=torchvision.models.segmentation):
                sys.exit(f"zoo_coverage: '{a[len(SEG):]}' is not one of torchvision's segmentation models nor "
                         f"{', '.join(SEGFORMER)}")
        elif a.startswith(TIMM):
            if a[len(TIMM):] not in timm.list_models():
                sys.exit(f"zoo_coverage: '{a[len(TIMM):]}' is not one of timm's models")
        elif a not in all_archs:
            sys.exit(f"zoo_coverage: '{a}' is not one of torchvision's classification models")
    if args.reuse and not args.keep:
        sys.exit("zoo_coverage: --reuse needs --keep DIR (the folder of the earlier run)")
    versions["dltrain"] = dltrain_version(args.dltrain)
    work = args.keep or tempfile.mkdtemp(prefix="zoo_coverage.")
    os.makedirs(work, exist_ok=True)
    start = time.time()
    results, reused = sweep(args, archs, exporters, work)
    merged = set()
    if args.merge:
        with open(args.merge) as f:
            for line in f:
                r = json.loads(line)
                if r["arch"] not in archs and r["exporter"] in exporters:
                    results[(r["arch"], r["exporter"])] = r
                    merged.add(r["arch"])
        for a in all_archs:  # the earlier run's architectures over --max-params: listed as not run, as it did
            side = input_size(a, args.size)
            if a not in archs and a not in merged and param_count(a, side) > args.max_params:
                for e in exporters:
                    results[(a, e)] = {"arch": a, "exporter": e, "size": side, "status": "skipped",
                                       "error": f"not run: {param_count(a, side) / 1e6:.0f}M parameters > --max-params"}
                merged.add(a)
        archs = [a for a in all_archs if a in archs or a in merged]
    text = table(results, archs, exporters, versions, (time.time() - start) / 60, args, reused, len(merged))
    print(text)
    if args.write_docs:
        write_docs(text, "timm" if timm_run else "seg" if seg_run else "torchvision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
