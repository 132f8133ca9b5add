#!/usr/bin/env bash
# The segmentation twin's losses are dltrain's: scripts/bench/pytorch_segment.py's
# generalized_dice, focal_cross_entropy and tversky (on N x K x H x W logits) give the loss and the
# logits' gradient of tests/data/losses/torch_losses.txt's dice, unweighted focal and tversky cases,
# the numbers tests/backend/test_cpu_losses.cpp checks dltrain's CPU kernels against (1e-9
# relative, float64 here); loss_of reads the loss from a resolved config's output layer or
# training.Loss.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
$PY -c "import torch, yaml" 2>/dev/null || skip "/usr/bin/python3 lacks torch/yaml (apt-get install python3-torch python3-yaml)"
$PY - "$SRC" <<'PYEOF' || fail "pytorch_segment.py's losses differ from dltrain's (above)"
import sys, torch
sys.path.insert(0, sys.argv[1] + "/scripts/bench")
import pytorch_segment as ps

cases, cur = [], None
for line in open(sys.argv[1] + "/tests/data/losses/torch_losses.txt"):
    key, *vals = line.split()
    if key == "case":
        cur = {"name": " ".join(vals)}
    elif key == "end":
        cases.append(cur)
    elif cur is not None:
        cur[key] = vals if key == "kind" else [float(v) for v in vals]

def close(what, got, want):
    want = torch.tensor(want, dtype=torch.float64)
    err = ((got - want).abs() / want.abs().clamp(min=1e-3)).max().item()
    print(f"{what}: max relative error {err:.2e}")
    if err > 1e-9:
        raise SystemExit(f"{what}: got {got.tolist()[:6]}..., want {want.tolist()[:6]}...")

checked = 0
for c in cases:
    kind, n, k = c["kind"][0], int(c["images"][0]), int(c["width"][0])
    if kind == "dice":
        px = len(c["labels"]) // n
        x = torch.tensor(c["logits"], dtype=torch.float64).reshape(n, px, k)
        y = torch.tensor(c["labels"]).long().reshape(n, px, 1)
        loss_fn = lambda logits, y: ps.generalized_dice(logits, y, torch)
    elif kind == "focal" and "class_weights" not in c:
        x = torch.tensor(c["logits"], dtype=torch.float64).reshape(1, n, k)  # one image of n pixels
        y = torch.tensor(c["labels"]).long().reshape(1, n, 1)
        loss_fn = lambda logits, y: ps.focal_cross_entropy(logits, y, c["gamma"][0], c["alpha"][0], torch)
    elif kind == "tversky":
        px = len(c["labels"]) // n
        x = torch.tensor(c["logits"], dtype=torch.float64).reshape(n, px, k)
        y = torch.tensor(c["labels"]).long().reshape(n, px, 1)
        loss_fn = lambda logits, y: ps.tversky(logits, y, c["alpha"][0], c["beta"][0], torch)
    else:
        continue
    logits = x.permute(0, 2, 1).unsqueeze(3).contiguous().requires_grad_()  # N K H 1
    loss = loss_fn(logits, y)
    loss.backward()
    close(f"{c['name']} loss", loss.detach().reshape(1), c["loss"])
    close(f"{c['name']} gradient", logits.grad.squeeze(3).permute(0, 2, 1).reshape(-1), c["grad"])
    checked += 1
if checked != 4:
    raise SystemExit(f"checked {checked} cases, expected the dice case, the unweighted focal case and two tversky cases")

seg = [{"type": "softmax", "Name": "softmax"}]
assert ps.loss_of({"layers": seg + [{"type": "dicePixelClassification"}]})[0] == "generalized-dice"
assert ps.loss_of({"layers": seg + [{"type": "pixelClassification"}]})[0] == "crossentropy"
assert ps.loss_of({"layers": seg + [{"type": "focalLoss", "Gamma": 3}]})[1]["Gamma"] == 3
assert ps.loss_of({"layers": seg, "training": {"Loss": "generalized-dice"}})[0] == "generalized-dice"
assert ps.loss_of({"layers": seg + [{"type": "tverskyPixelClassification", "Beta": 0.9}]})[1]["Beta"] == 0.9
assert ps.loss_of({"layers": seg, "training": {"Loss": "tversky"}})[0] == "tversky"
try:
    ps.loss_of({"layers": seg + [{"type": "regression"}]})
    raise AssertionError("loss_of took a regression output")
except SystemExit as e:
    assert "regression" in str(e), e
PYEOF
echo "pytorch_segment_losses: ok"
