#!/usr/bin/env bash
# Runs the README's commands on a brand-new Debian 12: a pristine minbase root made with
# debootstrap, a clean `git archive` of HEAD copied into it, and `scripts/test.sh` (with --demo
# `scripts/demo.sh` first) run inside it with chroot as root, as a newcomer would. Nothing from
# this machine's own packages reaches the root; with /usr/local/cuda present it is bind-mounted
# read-only, so the CUDA build is checked too (a user who installed NVIDIA's toolkit).
#
#   scripts/check-fresh-machine.sh [--demo] [--keep] [--no-cuda] [--refresh]
#                                  [--mirror URL] [--security-mirror URL]
#
# The root's packages come from the Debian mirror this machine's apt already uses (its
# /etc/apt/sources.list and sources.list.d/, read by scripts/apt-mirror.sh), or --mirror URL
# (and --security-mirror URL for bookworm-security; without one the root has no security line).
# Cached between runs in $DLT_FRESH_CACHE (default /var/cache/dltrain-fresh): the pristine root
# as a tarball (made once by debootstrap) and the .deb files apt downloads. Neither can hide a
# missing install step: the root is unpacked anew each run and the packages are still installed
# by scripts/setup.sh. Uncommitted changes are not checked (HEAD is). Needs root (or sudo).
# Exit 0 when every step passed; otherwise non-zero and the failing step on the last line.
set -euo pipefail

demo=0 keep=0 cuda=1 refresh=0 mirror="" security=""
args=("$@")
while (($#)); do
  case $1 in
    --demo) demo=1 ;;
    --keep) keep=1 ;;
    --no-cuda) cuda=0 ;;
    --refresh) refresh=1 ;;
    --mirror|--security-mirror)
      [[ $# -ge 2 && $2 =~ ^(https?|file): ]] ||
        { echo "check-fresh-machine: $1 needs an http, https or file URL" >&2; exit 2; }
      if [[ $1 == --mirror ]]; then mirror=${2%/}; else security=${2%/}; fi
      shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-fresh-machine: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
set -- "${args[@]}"

if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { echo "check-fresh-machine: needs root (chroot, mount) and sudo is not installed" >&2; exit 2; }
  exec sudo -E "$0" "$@"
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
suite=bookworm
if [[ -z $mirror ]]; then
  source "$repo/scripts/apt-mirror.sh"
  shopt -s nullglob
  found=$(apt_mirror_find "$suite" /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources) || {
    echo "check-fresh-machine: this machine's apt sources name no $suite mirror; give one with --mirror URL" >&2
    exit 2
  }
  shopt -u nullglob
  mirror=$(awk '$1 == "mirror" { print $2 }' <<<"$found")
  [[ -n $security ]] || security=$(awk '$1 == "security" { print $2 }' <<<"$found")
fi
echo "check-fresh-machine: Debian mirror $mirror${security:+, security $security}"
cache=${DLT_FRESH_CACHE:-/var/cache/dltrain-fresh}
tarball=$cache/$suite-minbase.tar
debs=$cache/debs
step="start"
root=""
mounts=()

cleanup() {
  local i stuck=0
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null ||
      { echo "check-fresh-machine: could not unmount ${mounts[i]}" >&2; stuck=1; }
  done
  mounts=()
  # Mounts a test made inside the root (e.g. `ip netns add` binds /run/netns), deepest first.
  if [[ -n $root && -d $root ]]; then
    local m
    while IFS= read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
        { echo "check-fresh-machine: could not unmount $m" >&2; stuck=1; }
    done < <(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r)
  fi
  if [[ -n $root && -d $root ]]; then
    if [[ $keep -eq 1 || $stuck -eq 1 ]]; then
      echo "check-fresh-machine: root left in $root"
    else
      rm -rf --one-file-system "$root"
    fi
  fi
}
on_exit() {
  local rc=$?
  cleanup
  [[ $rc -ne 0 ]] && echo "check-fresh-machine: FAILED at step '$step' (exit $rc)" >&2
  exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

mount_in() {  # mount_in TARGET MOUNT-ARGS...: mounts and remembers it for cleanup
  local target=$1; shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounts+=("$target")
}

timed() {  # timed NAME COMMAND...: runs the step, prints its wall time
  step=$1; shift
  local t0=$SECONDS
  echo "== [fresh] $step"
  "$@"
  echo "== [fresh] $step: $((SECONDS - t0)) s"
  times+=("$step $((SECONDS - t0)) s")
}
times=()

make_root() {
  mkdir -p "$cache" "$debs"
  # One check at a time per cache: the .deb folder is shared by every root's apt.
  exec 9>"$cache/lock"
  flock -w 7200 9 || { echo "check-fresh-machine: another check holds $cache/lock" >&2; return 1; }
  if [[ $refresh -eq 1 ]]; then rm -f "$tarball"; fi
  if [[ ! -s $tarball ]]; then
    if ! command -v debootstrap >/dev/null 2>&1; then
      echo "check-fresh-machine: installing debootstrap on this machine (not in the root)"
      DEBIAN_FRONTEND=noninteractive apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
    fi
    local tmp
    tmp=$(mktemp -d /var/tmp/dltrain-debootstrap.XXXXXX)
    debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
      { tail -20 "$cache/debootstrap.log" >&2; rm -rf --one-file-system "$tmp"; return 1; }
    rm -f "$tmp"/var/cache/apt/archives/*.deb
    tar -C "$tmp" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf --one-file-system "$tmp"
  fi
  root=$(mktemp -d /var/tmp/dltrain-fresh.XXXXXX)
  tar -C "$root" -xf "$tarball"
  # mktemp -d makes (and the tarball's "." keeps) mode 700; a machine's / is 755, and tests that
  # run dltrain as an unprivileged user (cli.bad_input) need to reach /usr/lib through it.
  chmod 755 "$root"
  # What a new Debian 12 machine has: the release, its updates and security. The machine's own
  # name is deliberately not in /etc/hosts (as in containers and fresh roots): dltrain must
  # neither need nor crash on it.
  {
    echo "deb $mirror $suite main"
    echo "deb $mirror $suite-updates main"
    if [[ -n $security ]]; then echo "deb $security $suite-security main"; fi
  } >"$root/etc/apt/sources.list"
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  mount_in "$root/proc" -t proc proc
  mount_in "$root/sys" -t sysfs sysfs
  mount_in "$root/dev" --bind /dev
  mount_in "$root/dev/pts" --bind /dev/pts
  mount_in "$root/dev/shm" -t tmpfs -o mode=1777 tmpfs
  mount_in "$root/var/cache/apt/archives" --bind "$debs"
  if [[ $cuda -eq 1 && -d /usr/local/cuda ]]; then
    mount_in "$root/usr/local/cuda" --bind "$(readlink -f /usr/local/cuda)"
    mount -o remount,bind,ro "$root/usr/local/cuda"
    echo "check-fresh-machine: /usr/local/cuda bind-mounted read-only (CUDA build checked too)"
  fi
  mkdir -p "$root/root/dltrain"
  git -C "$repo" archive --format=tar HEAD | tar -C "$root/root/dltrain" -xf -
  if [[ -n $(git -C "$repo" status --porcelain --untracked-files=no) ]]; then
    echo "check-fresh-machine: note: uncommitted changes are not part of the check (HEAD $(git -C "$repo" rev-parse --short HEAD) is)"
  fi
}

in_root() {  # runs a command line inside the root as root, in the project's folder, clean env
  env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    TERM=dumb LANG=C.UTF-8 ${CI:+CI=$CI} \
    chroot "$root" /bin/bash -c "cd /root/dltrain && $1"
}

# Everything runs from main(), which bash has read whole before it starts: editing or checking
# out this file while a check runs (it takes minutes) cannot change what the check executes.
main() {
  timed "root" make_root
  in_root 'echo "inside the fresh root: Debian $(cat /etc/debian_version), $(dpkg-query -f . -W | wc -c) packages, hostname $(hostname) $(getent hosts "$(hostname)" >/dev/null && echo resolves || echo "does not resolve")"'
  if [[ $demo -eq 1 ]]; then
    timed "scripts/demo.sh" in_root 'scripts/demo.sh'
  fi
  timed "scripts/test.sh" in_root 'scripts/test.sh'
  step="done"
  echo "check-fresh-machine: passed ($(IFS=';'; echo "${times[*]}"); total $SECONDS s)"
}
main; exit
