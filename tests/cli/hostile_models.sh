#!/usr/bin/env bash
# Hostile model files (docs/reliability.md, "Hostile model files"): `dltrain import` of crafted
# ONNX files and `dltrain classify` / `info` of crafted model.bin files each end with exit 1
# and one error line, in bounded memory: peak RSS (GNU time's %M) at most the same binary's own
# `dltrain --version` peak plus MAX_RSS_MARGIN_KB (240 MiB), so the bound holds for any build
# (12 MiB to start, CUDA build included: its CUDA libraries are in the plugin a CPU run never loads). Wall time
# is printed, not bounded: a hang guard (HANG_SECONDS, 300) only stops a run that never ends.
# The files are written here by a small protobuf encoder (no onnx Python module needed).
source "$(dirname "$0")/common.sh" "$@"
if "$DLTRAIN" import /nonexistent.onnx --output "$TMP/x.bin" 2>&1 | grep -q "built without ONNX"; then
  skip "this dltrain was built without ONNX"
fi
[[ -x /usr/bin/time ]] || skip "no /usr/bin/time to measure peak memory (apt-get install time; scripts/setup.sh does)"
MAX_RSS_MARGIN_KB=${MAX_RSS_MARGIN_KB:-245760}
HANG_SECONDS=${HANG_SECONDS:-300}
base_kb=$(peak_rss_kib "$DLTRAIN" --version)
MAX_RSS_KB=$((base_kb + MAX_RSS_MARGIN_KB))
echo "dltrain --version peaks at $base_kb KiB: the limit is $MAX_RSS_KB KiB"

python3 - "$TMP" <<'PY'
import struct, sys
out = sys.argv[1]

def varint(n):
    n &= (1 << 64) - 1
    b = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        if n:
            b.append(x | 0x80)
        else:
            b.append(x)
            return bytes(b)

def key(field, wire): return varint(field << 3 | wire)
def vi(field, v): return key(field, 0) + varint(v)
def ld(field, data):
    if isinstance(data, str): data = data.encode()
    return key(field, 2) + varint(len(data)) + data

FLOAT, INT64 = 1, 7
def tensor(name, dims, raw=None, floats=None, external=None, dtype=FLOAT, offset=None):
    t = b"".join(vi(1, d) for d in dims) + vi(2, dtype) + ld(8, name)
    if raw is not None: t += ld(9, raw)
    if floats is not None: t += ld(4, struct.pack("<%df" % len(floats), *floats))
    if external is not None:
        t += ld(13, ld(1, "location") + ld(2, external)) + vi(14, 1)
        if offset is not None: t += ld(13, ld(1, "offset") + ld(2, offset))
    return t

def node(op, ins, outs, name, attrs=b""):
    return b"".join(ld(1, i) for i in ins) + b"".join(ld(2, o) for o in outs) + ld(3, name) + ld(4, op) + attrs

def value_info(name, dims):
    shape = b"".join(ld(1, vi(1, d)) for d in dims)
    return ld(1, name) + ld(2, ld(1, vi(1, FLOAT) + ld(2, shape)))

def model(w=None, nodes=None, input_dims=(1, 3, 2, 2), extra_nodes=()):
    # x (1, 3, 2, 2) -> Flatten -> Gemm (W (4, 12), transB) -> Softmax -> prob
    if w is None: w = tensor("W", [4, 12], raw=struct.pack("<48f", *([0.1] * 48)))
    b = tensor("B", [4], raw=struct.pack("<4f", 0, 0, 0, 0))
    trans_b = ld(5, ld(1, "transB") + vi(3, 1) + vi(20, 2))
    if nodes is None:
        nodes = [node("Flatten", ["x"], ["f"], "flatten"), node("Gemm", ["f", "W", "B"], ["g"], "fc", trans_b),
                 node("Softmax", ["g"], ["prob"], "softmax")]
    nodes = list(extra_nodes) + nodes
    g = b"".join(ld(1, n) for n in nodes) + ld(2, "hostile") + ld(5, w) + ld(5, b)
    g += ld(11, value_info("x", input_dims)) + ld(12, value_info("prob", [1, 4]))
    return vi(1, 7) + ld(7, g) + ld(8, vi(2, 13))

def save(name, data):
    open(f"{out}/{name}", "wb").write(data)

save("good.onnx", model())
save("ext_relative.onnx", model(w=tensor("W", [4, 12], external="../../etc/passwd")))
save("ext_absolute.onnx", model(w=tensor("W", [4, 12], external="/etc/passwd")))
save("ext_symlink.onnx", model(w=tensor("W", [4, 12], external="passwd_link")))
save("short.data", b"\0" * 8)
save("ext_past_end.onnx", model(w=tensor("W", [4, 12], external="short.data")))
save("ext_negative.onnx", model(w=tensor("W", [4, 12], external="short.data", offset="-8")))
save("negative_dims.onnx", model(w=tensor("W", [-4, -12], raw=b"\0" * 192)))
save("overflow_dims.onnx", model(w=tensor("W", [1 << 62, 4], raw=b"")))
# 22369622 x 12 floats = 1 GiB claimed, 48 values present (float_data): refused before allocating.
save("claims_1gib.onnx", model(w=tensor("W", [22369622, 12], floats=[0.5] * 48)))
save("short_raw.onnx", model(w=tensor("W", [4, 12], raw=b"\0" * 8)))
trans_b = ld(5, ld(1, "transB") + vi(3, 1) + vi(20, 2))
save("cyclic.onnx", model(nodes=[node("Flatten", ["prob"], ["f"], "flatten"), node("Gemm", ["f", "W", "B"], ["g"], "fc", trans_b),
                                 node("Softmax", ["g"], ["prob"], "softmax")]))
# An operator and node name with a line break and a terminal escape (clear screen).
save("escapes.onnx", model(nodes=[node("Flatten\n\x1b[2J", ["x"], ["f"], "flat\nten"), node("Gemm", ["f", "W", "B"], ["g"], "fc", trans_b),
                                  node("Softmax", ["g"], ["prob"], "softmax")]))
save("huge_input.onnx", model(input_dims=(1, 3, 1 << 40, 1 << 40)))
ids = [node("Identity", ["x" if i == 0 else f"i{i - 1}"], [f"i{i}"], "same") for i in range(2_000_000)]
save("two_million_nodes.onnx", model(extra_nodes=ids))
full = model()
save("truncated.onnx", full[: len(full) // 2])
save("garbage.onnx", bytes(range(256)) * 64)
PY

# run_bounded WHAT PATTERN -- command...: exit code 1, one error line matching PATTERN, peak
# RSS at most MAX_RSS_KB; killed (and failed) only when it runs past HANG_SECONDS.
measured="$TMP/measured.txt"
run_bounded() {
  local what=$1 pattern=$2
  shift 3
  local rc=0 start end rss
  start=$(date +%s.%N)
  timeout -s KILL "$HANG_SECONDS" /usr/bin/time -f %M -o "$TMP/rss" "$@" > /dev/null 2> "$TMP/err" || rc=$?
  end=$(date +%s.%N)
  ((rc != 124 && rc != 137)) || fail "$what: still running after ${HANG_SECONDS}s (a hang): killed"
  rss=$(tail -1 "$TMP/rss")
  local secs
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  [[ $rc -eq 1 ]] || fail "$what: exit code $rc, expected 1 (stderr: $(cat "$TMP/err"))"
  [[ $(wc -l < "$TMP/err") -eq 1 ]] || fail "$what: expected one line on stderr, got: $(cat "$TMP/err")"
  ! grep -q $'\x1b' "$TMP/err" || fail "$what: a terminal escape reached stderr"
  grep -q -- "$pattern" "$TMP/err" || fail "$what: stderr does not mention '$pattern': $(cat "$TMP/err")"
  at_least "$MAX_RSS_KB" "$rss" || fail "$what: peak RSS ${rss} KiB, more than ${MAX_RSS_KB} KiB ($base_kb to start)"
  printf '%-28s %8s KiB %6ss  %s\n' "$what" "$rss" "$secs" "$(cat "$TMP/err")" | tee -a "$measured"
}
import_bounded() {  # import_bounded FILE PATTERN
  run_bounded "import $1" "$2" -- "$DLTRAIN" import "$TMP/$1" --output "$TMP/out.bin"
  [[ -e "$TMP/out.bin" ]] && fail "import $1 wrote a model file"
  true
}

"$DLTRAIN" import "$TMP/good.onnx" --output "$TMP/good.bin" > /dev/null || fail "the base ONNX file does not import"
import_bounded ext_relative.onnx "tensor 'W' keeps its data at '../../etc/passwd', which leaves the model's folder through '..'"
import_bounded ext_absolute.onnx "tensor 'W' keeps its data at the absolute path '/etc/passwd'"
ln -s /etc/passwd "$TMP/passwd_link"
import_bounded ext_symlink.onnx "tensor 'W' keeps its data in '.*passwd_link', which is a link to '/etc/passwd' outside the model's folder"
import_bounded ext_past_end.onnx "tensor 'W' reads bytes 0..192 of '.*short.data', which has 8 bytes"
import_bounded ext_negative.onnx "tensor 'W' has external data offset '-8'"
import_bounded negative_dims.onnx "tensor 'W' has dimension -4 in -4x-12"
import_bounded overflow_dims.onnx "tensor 'W' claims 4611686018427387904x4 values"
import_bounded claims_1gib.onnx "tensor 'W' has 48 values for 22369622x12 = 268435464"
import_bounded short_raw.onnx "tensor 'W' has 8 bytes of data for 4x12 = 48 values"
import_bounded cyclic.onnx "node 'flatten' (Flatten): input 'prob' is neither the graph input nor an earlier"
import_bounded escapes.onnx "node 'flat\\\\nten' (Flatten\\\\n\\\\x1b\[2J): operator 'Flatten\\\\n\\\\x1b\[2J' is not supported"
import_bounded huge_input.onnx "the graph input 'x' is 1099511627776x1099511627776x3 per image"
import_bounded two_million_nodes.onnx "the graph has 2000003 nodes, more than the 100000"
import_bounded truncated.onnx "not a readable ONNX model"
import_bounded garbage.onnx "not a readable ONNX model"

# model.bin: crafted from good.bin (checksums recomputed, so the checks behind them run).
python3 - "$TMP" <<'PY'
import re, struct, sys, zlib
out = sys.argv[1]
b = open(f"{out}/good.bin", "rb").read()
def sections(b):
    pos, out = 32, []
    while pos < len(b):
        tag, n = b[pos:pos + 4], struct.unpack("<Q", b[pos + 4:pos + 12])[0]
        out.append([tag, b[pos + 12:pos + 12 + n]])
        pos += 12 + n
    return out
def build(secs, lie=None):
    payload = b"".join(t + struct.pack("<Q", len(d) if lie is None or t != lie[0] else lie[1]) + d for t, d in secs)
    head = b[:16] + struct.pack("<Q", len(payload))
    head += struct.pack("<I", zlib.crc32(head)) + struct.pack("<I", zlib.crc32(payload))
    return head + payload
def save(name, data): open(f"{out}/{name}", "wb").write(data)
secs = sections(b)
assert build(secs) == b, "the section walk does not reproduce the file"
spec = dict((t, d) for t, d in secs)[b"SPEC"].decode()
def with_spec(text):
    return build([[t, text.encode() if t == b"SPEC" else d] for t, d in secs])
save("truncated.bin", b[: len(b) // 2])
save("section_overflow.bin", build(secs, lie=(b"PARM", (1 << 64) - 16)))
save("section_past_end.bin", build(secs, lie=(b"SPEC", len(b))))
parm = dict((t, d) for t, d in secs)[b"PARM"]
# The first tensor's (fc Weights, 4x12) first dimension -> -1, -> 2^40: more than the file
# holds; its two dimensions swapped: the right count in the wrong shape.
n_layer = struct.unpack("<I", parm[4:8])[0]
at = 8 + n_layer
n_name = struct.unpack("<I", parm[at:at + 4])[0]
at += 4 + n_name + 4  # past the name and the rank
assert struct.unpack("<I", parm[at - 4:at])[0] == 2 and struct.unpack("<2Q", parm[at:at + 16]) == (4, 12)
def with_dims(dims):
    p = parm[:at] + b"".join(struct.pack("<Q", v & ((1 << 64) - 1)) for v in dims) + parm[at + 8 * len(dims):]
    return build([[t, p if t == b"PARM" else d] for t, d in secs])
save("negative_dim.bin", with_dims([-1]))
save("huge_dim.bin", with_dims([1 << 40]))
save("wrong_shape.bin", with_dims([12, 4]))
# The spec: an fc of 10^6 outputs on a 32768x32768x2 input (2^51 floats), an unknown input,
# a 200,000-deep YAML nesting, and over 4 MiB.
huge = re.sub(r"InputSize: \[[^]]*\]", "InputSize: [32768, 32768, 2]", spec)
huge = re.sub(r"OutputSize: \d+", "OutputSize: 1000000", huge)
assert huge != spec, spec
save("huge_spec.bin", with_spec(huge))
assert "type: softmax" in spec and "type: classification" in spec, spec
save("unknown_input.bin", with_spec(spec.replace("type: softmax", "type: softmax, Inputs: [nowhere]", 1)))
# softmax reads the classification layer after it, which reads softmax: a cycle.
save("cyclic_spec.bin", with_spec(spec.replace("type: softmax", "type: softmax, Inputs: [output]", 1)))
save("deep_spec.bin", with_spec("layers: " + "[" * 200000 + "]" * 200000))
save("big_spec.bin", with_spec(spec + "#" + "x" * (5 << 20) + "\n"))
PY
classify_bounded() {  # classify_bounded FILE PATTERN
  run_bounded "classify $1" "$2" -- "$DLTRAIN" classify "$TMP/$1" "$TMP"
}
classify_bounded truncated.bin "truncated at byte"
classify_bounded section_overflow.bin "section PARM needs 18446744073709551600 bytes"
classify_bounded section_past_end.bin "section SPEC needs"
classify_bounded negative_dim.bin "dimension 18446744073709551615 makes it larger than"
classify_bounded huge_dim.bin "dimension 1099511627776 makes it larger than"
classify_bounded wrong_shape.bin "wrong_shape.bin: layer 'fc' Weights is 12x4 in the model file but the network needs 4x12"
classify_bounded huge_spec.bin "huge_spec.bin: layer 'fc' Weights is 4x12 in the model file but the network needs 1000000x2147483648"
classify_bounded deep_spec.bin "the stored network spec is invalid"
classify_bounded big_spec.bin "more than the 4194304 dltrain reads"
classify_bounded unknown_input.bin "layer 'softmax' (softmax): Inputs names 'nowhere', which is not a layer"
classify_bounded cyclic_spec.bin "layer 'softmax' (softmax): Inputs names 'output'"
echo "measured (peak RSS, wall time, error):"
cat "$measured"
echo "hostile models: ok"
