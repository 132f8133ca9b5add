#!/usr/bin/env bash
# CIFAR-10 as class folders: DEST/train/<class>/*.png and DEST/test/<class>/*.png.
# Online it downloads the official binary version; offline --from takes the official
# cifar-10-binary.tar.gz, its unpacked folder, or a tar of class folders (train/<class>/...).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

URL="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
MD5="c32a1d4ab5d03f1284b67883e8d87530"

usage() {
  cat <<USAGE
usage: datasets/get-cifar10.sh DEST [--from ARCHIVE]
  DEST      folder to create DEST/train/<class>/ and DEST/test/<class>/ in
  --from    cifar-10-binary.tar.gz (official), its unpacked folder, or a tar of class folders
            such as cifar10-jpg.tar (train/<class>/*.jpg, test/<class>/*.jpg)
Without --from it downloads $URL.
USAGE
}

parse_args "$@"
mkdir -p "$DEST"
STAGE="$(mktemp -d "$DEST/.get-cifar10.XXXXXX")"
trap 'rm -rf "$STAGE"; rmdir "$DEST" 2>/dev/null || true' EXIT

convert_bin() {  # folder holding data_batch_*.bin
  local dltrain; dltrain="$(find_dltrain)"
  say "converting binary batches in $1 with $dltrain"
  "$dltrain" make-dataset cifar10-bin "$STAGE/out" --from "$1" >&2
  finish "$STAGE/out" "$DEST"
}

if [ -z "$FROM" ]; then
  download "$URL" "$STAGE/cifar-10-binary.tar.gz" || die "download failed (offline? use --from)"
  check_md5 "$STAGE/cifar-10-binary.tar.gz" "$MD5"
  FROM="$STAGE/cifar-10-binary.tar.gz"
fi
if [ -d "$FROM" ]; then
  if [ -f "$FROM/data_batch_1.bin" ]; then convert_bin "$FROM"
  elif [ -f "$FROM/cifar-10-batches-bin/data_batch_1.bin" ]; then convert_bin "$FROM/cifar-10-batches-bin"
  elif [ -d "$FROM/train" ] && [ -d "$FROM/test" ]; then
    mkdir -p "$STAGE/out" && cp -r "$FROM/train" "$FROM/test" "$STAGE/out/" && finish "$STAGE/out" "$DEST"
  else die "$FROM holds neither data_batch_1.bin nor train/ and test/ folders"; fi
elif [ -f "$FROM" ]; then
  if tar_has_class_folders "$FROM"; then
    say "unpacking class folders from $FROM"
    mkdir -p "$STAGE/out" && tar -xf "$FROM" -C "$STAGE/out" && finish "$STAGE/out" "$DEST"
  elif tar_has_cifar_batches "$FROM"; then
    say "unpacking $FROM"
    tar -xf "$FROM" -C "$STAGE"
    convert_bin "$(dirname "$(find "$STAGE" -name data_batch_1.bin | head -n 1)")"
  else die "$FROM is neither the CIFAR-10 binary tar.gz nor a tar of train/<class>/ folders"; fi
else
  die "$FROM does not exist"
fi
