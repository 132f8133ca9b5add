#!/usr/bin/env bash
# MNIST as class folders of greyscale PNGs: DEST/train/<digit>/*.png, DEST/test/<digit>/*.png.
# Online it downloads the four official IDX .gz files; offline --from takes a folder holding
# them (gzipped or not) or a tar of class folders (train/<class>/...).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

FILES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
MD5S=(f68b3c2dcbeaaa9fbdd348bbdeb94873 d53e105ee54ea40749a09fcbcd1e9432
      9fb629c4189551a2d022fa330f9573f3 ec29112dd5afa0611ce80d1b7f02629c)
MIRRORS=(https://ossci-datasets.s3.amazonaws.com/mnist
         https://storage.googleapis.com/cvdf-datasets/mnist
         http://yann.lecun.com/exdb/mnist)

usage() {
  cat <<USAGE
usage: datasets/get-mnist.sh DEST [--from DIR|ARCHIVE]
  DEST      folder to create DEST/train/<digit>/ and DEST/test/<digit>/ in
  --from    a folder with the four IDX files (${FILES[*]}, .gz or not),
            or a tar of class folders (train/<class>/*.png, test/<class>/*.png)
Without --from it downloads the IDX files from the first mirror that answers:
  ${MIRRORS[*]}
USAGE
}

parse_args "$@"
mkdir -p "$DEST"
STAGE="$(mktemp -d "$DEST/.get-mnist.XXXXXX")"
trap 'rm -rf "$STAGE"; rmdir "$DEST" 2>/dev/null || true' EXIT
mkdir -p "$STAGE/idx"

if [ -z "$FROM" ]; then
  for i in 0 1 2 3; do
    f="${FILES[$i]}.gz"; ok=0
    for m in "${MIRRORS[@]}"; do
      if download "$m/$f" "$STAGE/idx/$f"; then ok=1; break; fi
    done
    [ $ok = 1 ] || die "could not download $f from any mirror (offline? use --from)"
    check_md5 "$STAGE/idx/$f" "${MD5S[$i]}"
  done
  FROM="$STAGE/idx"
fi

if [ -f "$FROM" ]; then
  tar_has_class_folders "$FROM" || die "$FROM is not a tar of train/<class>/ folders (give the folder of IDX files instead)"
  say "unpacking class folders from $FROM"
  mkdir -p "$STAGE/out" && tar -xf "$FROM" -C "$STAGE/out" && finish "$STAGE/out" "$DEST"
  exit 0
fi
[ -d "$FROM" ] || die "$FROM does not exist"
for f in "${FILES[@]}"; do
  if [ -f "$FROM/$f" ]; then
    [ "$FROM/$f" -ef "$STAGE/idx/$f" ] || cp "$FROM/$f" "$STAGE/idx/$f"
  elif [ -f "$FROM/$f.gz" ]; then
    gunzip -c "$FROM/$f.gz" > "$STAGE/idx/$f" || die "$FROM/$f.gz is not a valid gzip file"
  else
    die "$FROM has neither $f nor $f.gz"
  fi
done
dltrain="$(find_dltrain)"
say "converting IDX files with $dltrain"
"$dltrain" make-dataset mnist-idx "$STAGE/out" --from "$STAGE/idx" >&2
finish "$STAGE/out" "$DEST"
