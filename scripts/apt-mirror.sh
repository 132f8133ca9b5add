#!/usr/bin/env bash
# apt-mirror.sh: the Debian mirror this machine's apt already uses, read from its sources lists.
#
#   scripts/apt-mirror.sh [--suite SUITE] [FILE...]
#
# Prints "mirror URL" for the first enabled deb entry whose suites include SUITE (default
# bookworm) and "security URL" for the first one with SUITE-security (that line is left out
# when there is none). FILEs default to /etc/apt/sources.list, /etc/apt/sources.list.d/*.list
# (one-line format) and /etc/apt/sources.list.d/*.sources (deb822). Only http, https and file
# URLs count (what debootstrap can fetch from). Sourced, it defines apt_mirror_find instead.
# Exit 0 with a mirror found; 1 when none of the files names one; 2 for a bad argument.

# apt_mirror_entries FILE...: "URL SUITE" per enabled deb entry and suite, in file order.
apt_mirror_entries() {
  local f
  for f in "$@"; do
    [[ -r $f ]] || continue
    if [[ $f == *.sources ]]; then
      # deb822: stanzas separated by blank lines; keys case-insensitive; continuation lines
      # begin with white space; "#" lines are comments.
      awk '
        function flush(   i, j, nu, ns, u, s) {
          if (types ~ /(^|[ \t])deb([ \t]|$)/ && tolower(enabled) != "no") {
            nu = split(uris, u, /[ \t]+/); ns = split(suites, s, /[ \t]+/)
            for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) if (u[i] != "" && s[j] != "") print u[i], s[j]
          }
          types = uris = suites = enabled = ""; key = ""
        }
        /^[ \t]*#/ { next }
        /^[ \t]*$/ { flush(); next }
        /^[ \t]/ { value = $0; sub(/^[ \t]+/, "", value)
                   if (key == "types") types = types " " value; else if (key == "uris") uris = uris " " value
                   else if (key == "suites") suites = suites " " value
                   next }
        { key = tolower($0); sub(/:.*/, "", key); value = $0; sub(/^[^:]*:[ \t]*/, "", value)
          if (key == "types") types = value; else if (key == "uris") uris = value
          else if (key == "suites") suites = value; else if (key == "enabled") enabled = value }
        END { flush() }' "$f"
    else
      # One-line format: deb [options] URI SUITE COMPONENT...; "#" starts a comment.
      awk '
        { sub(/#.*/, ""); if ($1 != "deb") next
          line = $0; sub(/^[ \t]*deb[ \t]+/, "", line); sub(/^\[[^]]*\][ \t]*/, "", line)
          n = split(line, w, /[ \t]+/); if (n >= 2) print w[1], w[2] }' "$f"
    fi
  done
}

# apt_mirror_find SUITE FILE...: prints "mirror URL" and, when there is one, "security URL";
# returns 1 when no entry serves SUITE.
apt_mirror_find() {
  local suite=$1 url s mirror="" security=""
  shift
  while read -r url s; do
    [[ $url =~ ^(https?|file): ]] || continue
    url=${url%/}
    if [[ -z $mirror && $s == "$suite" ]]; then mirror=$url; fi
    if [[ -z $security && $s == "$suite-security" ]]; then security=$url; fi
  done < <(apt_mirror_entries "$@")
  [[ -n $mirror ]] || return 1
  echo "mirror $mirror"
  if [[ -n $security ]]; then echo "security $security"; fi
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  suite=bookworm
  files=()
  while (($#)); do
    case $1 in
      --suite) [[ $# -ge 2 ]] || { echo "apt-mirror: --suite needs a value" >&2; exit 2; }; suite=$2; shift 2 ;;
      -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
      -*) echo "apt-mirror: unknown argument '$1' (see --help)" >&2; exit 2 ;;
      *) files+=("$1"); shift ;;
    esac
  done
  if ((${#files[@]} == 0)); then
    shopt -s nullglob
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
      if [[ -f $f ]]; then files+=("$f"); fi
    done
  fi
  apt_mirror_find "$suite" "${files[@]}" || {
    echo "apt-mirror: no enabled deb entry for $suite in ${files[*]:-no sources files}" >&2
    exit 1
  }
fi
