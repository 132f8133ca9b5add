#!/usr/bin/env bash
# scripts/apt-mirror.sh, which scripts/check-fresh-machine.sh uses to find the Debian mirror
# this machine's apt already uses: one-line and deb822 sources lists (options in brackets,
# comments, disabled stanzas, several URIs and suites, deb-src, unusable URL schemes), the
# security mirror, no entry for the suite (exit 1), and check-fresh-machine's --mirror check.
source "$(dirname "$0")/common.sh" "$@"
MIRROR="$SRC/scripts/apt-mirror.sh"

cat > "$TMP/one.list" <<'EOF'
# a comment line
deb-src http://src.example/debian bookworm main
deb cdrom:[Debian 12]/ bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://mirror.example/debian/ bookworm main contrib # trailing
deb http://mirror.example/debian bookworm-updates main
deb https://sec.example/debian-security bookworm-security main
EOF
out=$(bash "$MIRROR" "$TMP/one.list") || fail "one-line list: exit $?"
[[ $out == $'mirror http://mirror.example/debian\nsecurity https://sec.example/debian-security' ]] ||
  fail "one-line list gave: $out"
echo "ok: one-line format -> $(tr '\n' ' ' <<< "$out")"

cat > "$TMP/deb.sources" <<'EOF'
# Disabled: skipped
Types: deb
URIs: http://old.example/debian
Suites: bookworm
Enabled: no
Components: main

Types: deb-src deb
# a comment inside a stanza
URIs: http://a.example/debian
 http://b.example/debian
Suites: bookworm
  bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
out=$(bash "$MIRROR" "$TMP/deb.sources") || fail "deb822: exit $?"
[[ $out == "mirror http://a.example/debian" ]] || fail "deb822 gave: $out"
echo "ok: deb822 format (disabled stanza skipped, no security entry) -> $out"

# Several files: the first in order wins; the security mirror can come from another file.
printf 'Types: deb\nURIs: file:/srv/debian-security\nSuites: bookworm-security\n' > "$TMP/sec.sources"
out=$(bash "$MIRROR" "$TMP/deb.sources" "$TMP/one.list" "$TMP/sec.sources") || fail "three files: exit $?"
[[ $out == $'mirror http://a.example/debian\nsecurity https://sec.example/debian-security' ]] ||
  fail "three files gave: $out"
printf 'Types: deb\nURIs: file:/srv/debian/\nSuites: trixie\n' > "$TMP/trixie.sources"
out=$(bash "$MIRROR" --suite trixie "$TMP/one.list" "$TMP/trixie.sources") || fail "--suite: exit $?"
[[ $out == "mirror file:/srv/debian" ]] || fail "--suite trixie gave: $out"

# Sourced: the function alone. (Its first line taken without `| head -1`: under pipefail the
# function's SIGPIPE, when head has exited before the second line, failed this script silently.)
out=$(source "$MIRROR" && apt_mirror_find bookworm "$TMP/one.list")
out=${out%%$'\n'*}
[[ $out == "mirror http://mirror.example/debian" ]] || fail "sourced apt_mirror_find gave: $out"
echo "ok: several files in order, --suite, sourced function"

rc=0
err=$(bash "$MIRROR" --suite sid "$TMP/one.list" "$TMP/deb.sources" 2>&1 >/dev/null) || rc=$?
[[ $rc -eq 1 && $err == "apt-mirror: no enabled deb entry for sid in "* ]] || fail "no sid entry: exit $rc, $err"
rc=0
bash "$MIRROR" --bogus 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || fail "--bogus: exit $rc"
echo "ok: no entry for the suite -> exit 1 ($err); a bad argument -> exit 2"

# check-fresh-machine refuses a --mirror that is not a URL before it needs root.
rc=0
err=$(bash "$SRC/scripts/check-fresh-machine.sh" --mirror mirror.example 2>&1) || rc=$?
[[ $rc -eq 2 && $err == *"--mirror needs an http, https or file URL"* ]] || fail "check-fresh-machine --mirror: $rc $err"
echo "ok: check-fresh-machine --mirror mirror.example -> exit 2"
