#!/usr/bin/env bash
# customize.sh ROOTFS SUITE MIRROR: finish a debootstrapped rootfs before it is imported as the base image.
set -euo pipefail
root=$1 suite=$2 mirror=$3

# apt: the suite plus its updates and security pockets; no recommends, no translations, no docs.
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
SOURCES
cat >"$root/etc/apt/apt.conf.d/90kafka-chaos" <<'APT'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
APT
cat >"$root/etc/dpkg/dpkg.cfg.d/90kafka-chaos-nodoc" <<'DPKG'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
DPKG

# what debootstrap leaves behind and an image does not need
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/log/*.log "$root"/usr/share/man/* \
  "$root"/usr/share/info/*
find "$root/usr/share/doc" -type f ! -name copyright -delete
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
# update-alternatives (e.g. in openjdk's postinst) fails if the man directories it links into are gone
mkdir -p "$root"/usr/share/man/man{1,5,7,8}
