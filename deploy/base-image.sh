#!/bin/sh
# Makes the image deploy/Dockerfile builds on where python:3.11-slim cannot be pulled (no
# container registry, only Debian's package mirror): a minimal Debian bookworm (debootstrap
# --variant=minbase) with Debian's python3 (3.11), python3-venv and ca-certificates, imported
# into the local Docker engine as aiorocketmq-base:bookworm. Needs root, debootstrap (apt-get
# install debootstrap) and a running Docker engine; takes a few minutes and ~170 MB.
#
# The base trusts what this host trusts: the certificate authorities added here
# (/usr/local/share/ca-certificates/*.crt, e.g. a TLS-inspecting proxy's, without which pip in
# the build cannot reach PyPI) are added to its store, and pip is told to use that store
# (PIP_CERT; pip's own bundle knows only the public authorities).
#
#   sh deploy/base-image.sh [TAG]            # default TAG: aiorocketmq-base:bookworm
#   docker build -f deploy/Dockerfile --build-arg BASE=aiorocketmq-base:bookworm -t aiorocketmq:local .
#
# DEBIAN_MIRROR overrides the mirror (default http://deb.debian.org/debian).
set -eu

TAG=${1:-aiorocketmq-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" != 0 ]; then
    echo "base-image.sh: debootstrap needs root" >&2
    exit 2
fi
command -v debootstrap >/dev/null || { echo "base-image.sh: apt-get install debootstrap" >&2; exit 2; }
docker version >/dev/null || { echo "base-image.sh: no Docker engine answers" >&2; exit 2; }

ROOTFS=$(mktemp -d /tmp/aiorocketmq-rootfs.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT

echo "== debootstrap: Debian bookworm (minbase) with python3, python3-venv, ca-certificates into $ROOTFS"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$ROOTFS" "$MIRROR"

LOCAL_CAS=${LOCAL_CAS:-/usr/local/share/ca-certificates}
if ls "$LOCAL_CAS"/*.crt >/dev/null 2>&1; then
    echo "== trusting this host's added certificate authorities: $(cd "$LOCAL_CAS" && echo *.crt)"
    cp "$LOCAL_CAS"/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
    chroot "$ROOTFS" update-ca-certificates
fi

# the security and point-release updates, as the official images have them
cat > "$ROOTFS/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
SOURCES
# no package lists or downloaded packages in the image (a Dockerfile runs apt-get update)
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb

echo "== docker import $TAG"
tar -C "$ROOTFS" --numeric-owner -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["python3"]' \
    - "$TAG"
docker run --rm "$TAG" python3 -c 'import sys, venv; print("== " + sys.argv[1] + ": python " + sys.version.split()[0])' "$TAG"
