#!/usr/bin/env python3
"""An independent reader of TensorBoard event files, written from the TFRecord and Event specs
(tensorflow/core/lib/io/record_writer.cc, event.proto, summary.proto), no TensorFlow:
checks every record's framing CRCs (masked CRC-32C), decodes the protobuf wire format by
hand, and compares every scalar at every iteration with the run's log.csv.

usage: tfevents_check.py EVENT_DIR LOG_CSV [--expect-image] [--json OUT]
Exit 0 when everything matches, 1 with a line saying what does not."""
import csv
import glob
import json
import math
import os
import struct
import sys


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    raw = open(path, "rb").read()
    at = 0
    while at < len(raw):
        if at + 12 > len(raw):
            raise ValueError(f"{path}: {len(raw) - at} bytes after the last record")
        (length,) = struct.unpack_from("<Q", raw, at)
        (length_crc,) = struct.unpack_from("<I", raw, at + 8)
        if masked(raw[at:at + 8]) != length_crc:
            raise ValueError(f"{path}: length CRC wrong at byte {at}")
        data = raw[at + 12:at + 12 + length]
        if len(data) != length or at + 16 + length > len(raw):
            raise ValueError(f"{path}: record at byte {at} cut short")
        (data_crc,) = struct.unpack_from("<I", raw, at + 12 + length)
        if masked(data) != data_crc:
            raise ValueError(f"{path}: data CRC wrong in the record at byte {at}")
        yield data
        at += 16 + length


def varint(buf, at):
    v = shift = 0
    while True:
        b = buf[at]
        at += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, at


def fields(buf):
    """(field number, wire type, value) of a message: ints, bytes, or raw 4/8 bytes."""
    at = 0
    while at < len(buf):
        key, at = varint(buf, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, at = varint(buf, at)
        elif wire == 1:
            v, at = buf[at:at + 8], at + 8
        elif wire == 2:
            n, at = varint(buf, at)
            v, at = buf[at:at + n], at + n
        elif wire == 5:
            v, at = buf[at:at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire} (field {field}) not expected")
        yield field, wire, v


def decode_event(data):
    e = {"wall_time": None, "step": 0, "file_version": None, "values": []}
    for f, w, v in fields(data):
        if f == 1 and w == 1:
            e["wall_time"] = struct.unpack("<d", v)[0]
        elif f == 2 and w == 0:
            e["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif f == 3 and w == 2:
            e["file_version"] = v.decode()
        elif f == 5 and w == 2:
            for sf, sw, sv in fields(v):
                if sf != 1 or sw != 2:
                    continue
                value = {}
                for vf, vw, vv in fields(sv):
                    if vf == 1 and vw == 2:
                        value["tag"] = vv.decode()
                    elif vf == 2 and vw == 5:
                        value["simple_value"] = struct.unpack("<f", vv)[0]
                    elif vf == 4 and vw == 2:
                        image = {}
                        for jf, jw, jv in fields(vv):
                            image[{1: "height", 2: "width", 3: "colorspace", 4: "encoded"}.get(jf, jf)] = jv
                        value["image"] = image
                e["values"].append(value)
    return e


# log.csv column -> TensorBoard tag
FIXED = {"minibatch_loss": "train/loss", "minibatch_accuracy": "train/accuracy",
         "base_learning_rate": "train/learn_rate", "validation_loss": "validation/loss",
         "validation_accuracy": "validation/accuracy"}


def tag_of(column):
    if column in FIXED:
        return FIXED[column]
    if column.startswith("validation_"):
        return "validation/" + column[len("validation_"):]
    return None


def main():
    args = sys.argv[1:]
    expect_image = "--expect-image" in args
    out_json = args[args.index("--json") + 1] if "--json" in args else None
    event_dir, log_csv = args[0], args[1]
    files = sorted(glob.glob(os.path.join(event_dir, "events.out.tfevents.*")))
    if len(files) != 1:
        sys.exit(f"FAIL: {len(files)} event files in {event_dir}, expected 1")
    events = [decode_event(r) for r in records(files[0])]
    if not events or events[0]["file_version"] != "brain.Event:2":
        sys.exit("FAIL: the first record is not file_version brain.Event:2")
    scalars, images = {}, []
    for e in events[1:]:
        if e["wall_time"] is None or not e["wall_time"] > 1.5e9:
            sys.exit(f"FAIL: event at step {e['step']} has wall_time {e['wall_time']}")
        for v in e["values"]:
            if "simple_value" in v:
                steps = scalars.setdefault(v["tag"], {})
                if e["step"] in steps:
                    sys.exit(f"FAIL: {v['tag']} twice at step {e['step']}")
                steps[e["step"]] = v["simple_value"]
            elif "image" in v:
                img = v["image"]
                png = img.get("encoded", b"")
                if png[:8] != b"\x89PNG\r\n\x1a\n":
                    sys.exit(f"FAIL: image {v['tag']} at step {e['step']} is not a PNG")
                w, h = struct.unpack(">II", png[16:24])
                if (img.get("width"), img.get("height")) != (w, h):
                    sys.exit(f"FAIL: image {v['tag']} says {img.get('width')}x{img.get('height')}, PNG is {w}x{h}")
                images.append({"tag": v["tag"], "step": e["step"], "width": w, "height": h, "bytes": len(png)})
    rows = list(csv.DictReader(open(log_csv)))
    checked = 0
    for column in rows[0].keys():
        tag = tag_of(column)
        if tag is None:
            continue
        have = scalars.get(tag, {})
        want = {int(r["iteration"]): float(r[column]) for r in rows if r[column] != ""}
        if set(have) != set(want):
            missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
            sys.exit(f"FAIL: {tag}: steps missing {missing[:5]}, not in log.csv {extra[:5]}")
        for step, value in want.items():
            got = have[step]
            if not (math.isclose(got, value, rel_tol=2e-5, abs_tol=1e-12)
                    or (math.isnan(got) and math.isnan(value))):
                sys.exit(f"FAIL: {tag} at step {step}: event file {got!r}, log.csv {value!r}")
            checked += 1
    ips = scalars.get("train/images_per_second", {})
    if set(ips) != {int(r["iteration"]) for r in rows} or not all(v > 0 for v in ips.values()):
        sys.exit("FAIL: train/images_per_second is not a positive value at every iteration")
    if expect_image and not images:
        sys.exit("FAIL: no progress image")
    summary = {"file": os.path.basename(files[0]), "records": len(events),
               "tags": {t: len(s) for t, s in sorted(scalars.items())},
               "values_checked": checked, "images": len(images)}
    if out_json:
        json.dump(summary, open(out_json, "w"))
    print(f"ok: {len(events)} records, CRCs right; {checked} scalars equal log.csv's over {len(rows)} "
          f"iterations; tags {', '.join(sorted(scalars))}; {len(images)} progress images")


if __name__ == "__main__":
    try:
        main()
    except ValueError as e:
        sys.exit(f"FAIL: {e}")
