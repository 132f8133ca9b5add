# Shared helpers for datasets/get-*.sh (sourced, not run).

die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }
say() { echo "$(basename "$0"): $*" >&2; }

# The dltrain binary: $DLTRAIN, then PATH, then the repository's build folders.
find_dltrain() {
  if [ -n "${DLTRAIN:-}" ]; then echo "$DLTRAIN"; return; fi
  if command -v dltrain >/dev/null 2>&1; then command -v dltrain; return; fi
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local b
  for b in "$root"/build/dltrain "$root"/build*/dltrain; do
    if [ -x "$b" ]; then echo "$b"; return; fi
  done
  die "cannot find the dltrain binary (build it, put it on PATH, or set DLTRAIN=/path/to/dltrain)"
}

# download URL FILE: curl or wget, to a temporary name then renamed.
download() {
  say "downloading $1"
  if command -v curl >/dev/null 2>&1; then
    curl -fL --retry 3 -o "$2.part" "$1" || { rm -f "$2.part"; return 1; }
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2.part" "$1" || { rm -f "$2.part"; return 1; }
  else
    die "neither curl nor wget is installed (or pass --from with a local copy)"
  fi
  mv "$2.part" "$2"
}

# check_md5 FILE MD5: warns (does not stop) on a mismatch; conversion checks the content.
check_md5() {
  command -v md5sum >/dev/null 2>&1 || return 0
  local got; got="$(md5sum "$1" | cut -d' ' -f1)"
  [ "$got" = "$2" ] || say "warning: $1 has MD5 $got, expected $2 (incomplete download?)"
}

# True when the tar archive holds class folders (train/<class>/file).
tar_has_class_folders() {
  { tar -tf "$1" 2>/dev/null || true; } | grep -Eq '^(\./)?train/[^/]+/[^/]+$'
}

# True when the tar archive holds CIFAR-10 binary batches.
tar_has_cifar_batches() {
  { tar -tf "$1" 2>/dev/null || true; } | grep -q 'data_batch_1\.bin$'
}

# The split folders a script produces; get-camvid.sh sets SPLITS="train val" before parse_args.
SPLITS="${SPLITS:-train test}"

# finish STAGE DEST: moves the STAGE/<split> folders into DEST (created) and counts files.
finish() {
  local s
  for s in $SPLITS; do
    [ -d "$1/$s" ] || die "no $s/ folder was produced in $1 (expected: $SPLITS)"
  done
  mkdir -p "$2"
  for s in $SPLITS; do rm -rf "${2:?}/$s"; done
  for s in $SPLITS; do mv "$1/$s" "$2/"; done
  local counts="" n
  for s in $SPLITS; do
    n=$(find "$2/$s" -type f | wc -l)
    counts="$counts${counts:+, }$2/$s ($n files)"
  done
  say "done: $counts"
}

# parse_args "$@": sets DEST and FROM; prints usage for -h.
parse_args() {
  DEST=""; FROM=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --from) [ $# -ge 2 ] || die "--from needs a path"; FROM="$2"; shift 2 ;;
      --from=*) FROM="${1#--from=}"; shift ;;
      -h|--help) usage; exit 0 ;;
      -*) die "unknown option $1 (see --help)" ;;
      *) [ -z "$DEST" ] || die "only one DEST folder, got '$DEST' and '$1'"; DEST="$1"; shift ;;
    esac
  done
  [ -n "$DEST" ] || { usage >&2; exit 2; }
  local s all=1
  for s in $SPLITS; do [ -d "$DEST/$s" ] || all=0; done
  if [ "$all" = 1 ]; then
    say "$DEST already holds ${SPLITS// // and }/; nothing to do (delete them to redo)"
    exit 0
  fi
}
