#!/usr/bin/env bash
# CamVid road scenes for semantic segmentation: DEST/{train,val}/{images,labels}/<name>.* (an
# image and its label image share the file name's stem).
#  --from ARCHIVE (a tar, or a folder, of camvid/{train,val}/{images,labels}, as SegNet's
#   CamVid: 360x480, labels 8-bit index PNGs 0..10 and 11 = void): unpacked as it is; configs
#   use LabelIDs [0, 1, ..., 10] (configs/camvid-segnet-basic.yaml). TESTED (with
#   /work/shared/datasets/camvid.tar: 367 train, 101 val pairs).
#  Online (seed 003's official URLs, the files MATLAB's example downloads), or --from a folder
#   holding those two zips: 701 960x720 frames whose labels are RGB colour-coded in 32 classes.
#   They are kept as RGB PNGs (<name>_L.png renamed <name>.png); configs must then use RGB
#   LabelIDs grouping the 32 colours into 11 classes (configs/camvid-rgb-labelids.yaml, from
#   MATLAB's camvidPixelLabelIDs). Split: sequence Seq05VD (171 frames) is val, the other 530
#   frames train. NOT TESTED: this machine has no internet and no copy of the zips.
set -euo pipefail
SPLITS="train val"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

IMAGES_URL="http://web4.cs.ucl.ac.uk/staff/g.brostow/MotionSegRecData/files/701_StillsRaw_full.zip"
LABELS_URL="http://web4.cs.ucl.ac.uk/staff/g.brostow/MotionSegRecData/data/LabeledApproved_full.zip"
VAL_SEQUENCE="Seq05VD"

usage() {
  cat <<USAGE
usage: datasets/get-camvid.sh DEST [--from ARCHIVE]
  DEST      folder to create DEST/train/{images,labels}/ and DEST/val/{images,labels}/ in
  --from    a tar (or folder) of camvid/{train,val}/{images,labels} with index-PNG labels
            (11 classes, 11 = void), such as SegNet's CamVid; or a folder holding the official
            701_StillsRaw_full.zip and LabeledApproved_full.zip
Without --from it downloads the official zips (RGB labels, 32 colours; see
configs/camvid-rgb-labelids.yaml for the LabelIDs):
  $IMAGES_URL
  $LABELS_URL
USAGE
}

parse_args "$@"
mkdir -p "$DEST"
STAGE="$(mktemp -d "$DEST/.get-camvid.XXXXXX")"
trap 'rm -rf "$STAGE"; rmdir "$DEST" 2>/dev/null || true' EXIT

# check_pairs DIR: every DIR/<split>/images file has a DIR/<split>/labels file of the same stem.
check_pairs() {
  local s
  for s in $SPLITS; do
    [ -d "$1/$s/images" ] && [ -d "$1/$s/labels" ] || die "no $s/images and $s/labels in $1"
    local unpaired
    unpaired="$(comm -3 <(find "$1/$s/images" -type f -printf '%f\n' | sed 's/\.[^.]*$//' | sort) \
                        <(find "$1/$s/labels" -type f -printf '%f\n' | sed 's/\.[^.]*$//' | sort) |
                head -n 3 | tr -d '\t' | tr '\n' ' ')"
    [ -z "$unpaired" ] || die "$s: images and labels do not pair up (e.g. $unpaired)"
    [ -n "$(ls -A "$1/$s/images")" ] || die "$s/images is empty"
  done
}

# from_layout SRC: SRC holds {train,val}/{images,labels} (or camvid/ around them).
from_layout() {
  local src="$1"
  [ -d "$src/camvid" ] && src="$src/camvid"
  check_pairs "$src"
  mkdir -p "$STAGE/out"
  local s
  for s in $SPLITS; do
    case "$src" in
      "$STAGE"/*) mv "$src/$s" "$STAGE/out/" ;;  # unpacked here: move
      *) cp -r "$src/$s" "$STAGE/out/" ;;        # the user's folder: copy
    esac
  done
  finish "$STAGE/out" "$DEST"
}

# from_official_zips IMAGES_ZIP LABELS_ZIP: pairs <name>.png with <name>_L.png, splits off
# $VAL_SEQUENCE as val.
from_official_zips() {
  command -v unzip >/dev/null 2>&1 || die "unzip is not installed (needed for the official zips)"
  say "unpacking $1 and $2"
  mkdir -p "$STAGE/zip/images" "$STAGE/zip/labels"
  unzip -q "$1" -d "$STAGE/zip/images"
  unzip -q "$2" -d "$STAGE/zip/labels"
  local s f name split n=0
  for s in $SPLITS; do mkdir -p "$STAGE/out/$s/images" "$STAGE/out/$s/labels"; done
  while IFS= read -r f; do
    name="$(basename "$f" .png)"
    local label
    label="$(find "$STAGE/zip/labels" -type f -name "${name}_L.png" -print -quit)"
    [ -n "$label" ] || die "$(basename "$1"): frame $name has no ${name}_L.png in $(basename "$2")"
    case "$name" in "$VAL_SEQUENCE"*) split=val ;; *) split=train ;; esac
    mv "$f" "$STAGE/out/$split/images/$name.png"
    mv "$label" "$STAGE/out/$split/labels/$name.png"
    n=$((n + 1))
  done < <(find "$STAGE/zip/images" -type f -name '*.png' | sort)
  [ "$n" -gt 0 ] || die "$(basename "$1") holds no .png frames"
  check_pairs "$STAGE/out"
  finish "$STAGE/out" "$DEST"
  say "labels are RGB colour-coded (32 classes): use the LabelIDs of configs/camvid-rgb-labelids.yaml"
}

if [ -z "$FROM" ]; then
  download "$IMAGES_URL" "$STAGE/701_StillsRaw_full.zip" || die "download failed (offline? use --from)"
  download "$LABELS_URL" "$STAGE/LabeledApproved_full.zip" || die "download failed (offline? use --from)"
  from_official_zips "$STAGE/701_StillsRaw_full.zip" "$STAGE/LabeledApproved_full.zip"
elif [ -d "$FROM" ]; then
  if [ -f "$FROM/701_StillsRaw_full.zip" ] && [ -f "$FROM/LabeledApproved_full.zip" ]; then
    from_official_zips "$FROM/701_StillsRaw_full.zip" "$FROM/LabeledApproved_full.zip"
  else
    from_layout "$FROM"
  fi
elif [ -f "$FROM" ]; then
  { tar -tf "$FROM" 2>/dev/null || true; } | grep -Eq '^(\./)?(camvid/)?train/images/[^/]+$' ||
    die "$FROM is not a tar of camvid/{train,val}/{images,labels} (use the folder of the official zips instead)"
  say "unpacking $FROM"
  mkdir -p "$STAGE/tar" && tar -xf "$FROM" -C "$STAGE/tar"
  from_layout "$STAGE/tar"
else
  die "$FROM does not exist"
fi
