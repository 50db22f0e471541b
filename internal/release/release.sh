#!/usr/bin/env bash
# make release: heddle's release in dist/ (docs/operations.md, "Releases and
# the container image"), emptied first:
#
#   heddle_VERSION_OS_ARCH.tar.gz  heddle, LICENSE and README.md, per platform
#   heddle_VERSION_image.oci.tar   the container image of the linux platforms,
#                                  an OCI image layout in a tar file
#   SHA256SUMS                     the SHA-256 of each, as sha256sum -c reads them
#
# VERSION defaults to git describe --tags (v0.0.0-COMMIT without a tag),
# with -dirty when the tree has changes; PLATFORMS (comma- or space-
# separated) to linux and darwin, amd64 and arm64. The binaries are built
# with CGO_ENABLED=0 -trimpath -buildvcs=false, the version and the commit
# stamped with -ldflags (heddle version prints them), and packed with the
# commit's time, so that one commit builds the same bytes.
#
# The image is built by ko without a Docker daemon. ko reads its base from
# a registry, so crane serves one in memory on 127.0.0.1 for the length of
# the build, stopped on exit; the base is a single layer: the build host's
# CA bundle (CA_CERTIFICATES), /etc/passwd and /etc/group with the user
# nonroot (65532), its home and /tmp. The image runs heddle as that user.
# internal/release/ocitar packs ko's layout into the tarball and checks it;
# the linux binary of the host's architecture extracted from the image must
# be the archive's, byte for byte. ko and crane are installed, at the
# versions below, under .cache/release.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/../.."

KO_VERSION=v0.19.1
CRANE_VERSION=v0.21.7
IMAGE_USER=65532
CA_CERTIFICATES=${CA_CERTIFICATES:-/etc/ssl/certs/ca-certificates.crt}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
read -r -a platforms <<<"${PLATFORMS//,/ }"

# A release records no VCS state of its own (-buildvcs=false): the commit,
# its time and whether the tree had changes are stamped instead, as the go
# command would record them.
commit=$(git rev-parse HEAD)
commit_time=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
modified=false
[[ -z $(git status --porcelain) ]] || modified=true
if [[ -z ${VERSION:-} ]]; then
	VERSION=$(git describe --tags --match 'v[0-9]*' 2>/dev/null) || VERSION=v0.0.0-$(git rev-parse --short=12 HEAD)
	[[ $modified == false ]] || VERSION+=-dirty
fi
# The version names files and the image's tag: a tag's characters only.
if [[ ! $VERSION =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]]; then
	echo "release: VERSION=$VERSION: want letters, digits, '.', '_' and '-' (an image tag)" >&2
	exit 2
fi
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export SOURCE_DATE_EPOCH CGO_ENABLED=0 GOFLAGS=-buildvcs=false
pkg=github.com/heddlehq/heddle/heddlecmd
ldflags="-s -w -X $pkg.Version=$VERSION -X $pkg.Revision=$commit -X $pkg.RevisionTime=$commit_time -X $pkg.RevisionModified=$modified"

work=$(mktemp -d)
# ko takes its layout's path for a repository's name: lower case, relative.
layout=.cache/release/layout
registry_pid=
cleanup() {
	if [[ -n $registry_pid ]]; then kill "$registry_pid" 2>/dev/null || true; fi
	rm -rf "$work" "$layout"
}
trap cleanup EXIT

# tarball DIR OUT FILE...: FILEs of DIR in a tar file, owned by root and
# dated with the commit, in a fixed order.
tarball() {
	local dir=$1 out=$2
	shift 2
	tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf "$out" "$@"
}

# quietly CMD...: runs CMD, its stderr shown only when it fails.
quietly() {
	"$@" 2>"$work/stderr" || { local rc=$?; cat "$work/stderr" >&2; return $rc; }
}

# tool NAME PACKAGE VERSION: the path of NAME, installed once per version.
tool() {
	local dir=$PWD/.cache/release/$1@$3
	[[ -x $dir/$1 ]] || GOBIN=$dir go install "$2@$3"
	echo "$dir/$1"
}

rm -rf dist "$layout"
mkdir -p dist .cache/release
echo "release $VERSION ($commit, modified: $modified): ${platforms[*]}"

linux=()
for p in "${platforms[@]}"; do
	if [[ ! $p =~ ^[a-z0-9]+/[a-z0-9]+$ ]]; then
		echo "release: PLATFORMS: $p is not OS/ARCH" >&2
		exit 2
	fi
	name=heddle_${VERSION}_${p%/*}_${p#*/}
	mkdir "$work/$name"
	GOOS=${p%/*} GOARCH=${p#*/} go build -trimpath -ldflags "$ldflags" -o "$work/$name/heddle" ./cmd/heddle
	install -m 0644 LICENSE README.md "$work/$name/"
	tarball "$work/$name" - heddle LICENSE README.md | gzip -9n >"dist/$name.tar.gz"
	echo "  dist/$name.tar.gz"
	[[ $p != linux/* ]] || linux+=("$p")
done

if ((${#linux[@]} > 0)); then
	ko=$(tool ko github.com/google/ko "$KO_VERSION")
	crane=$(tool crane github.com/google/go-containerregistry/cmd/crane "$CRANE_VERSION")

	: >"$work/registry.log"
	"$crane" registry serve --address 127.0.0.1:0 >"$work/registry.log" 2>&1 &
	registry_pid=$!
	port=
	for _ in {1..100}; do
		port=$(sed -n 's/.*serving on port \([0-9][0-9]*\).*/\1/p' "$work/registry.log")
		[[ -z $port ]] || break
		sleep 0.1
	done
	if [[ -z $port ]]; then
		echo "release: crane registry serve did not start:" >&2
		cat "$work/registry.log" >&2
		exit 1
	fi
	registry=127.0.0.1:$port

	# The base: one layer, an image of it per platform, and their index.
	if [[ ! -s $CA_CERTIFICATES ]]; then
		echo "release: no CA bundle at $CA_CERTIFICATES (Debian: apt-get install ca-certificates), which heddle needs to reach servers over HTTPS" >&2
		exit 1
	fi
	root=$work/base
	mkdir -p "$root/etc/ssl/certs" "$root/home/nonroot" "$root/tmp"
	install -m 0644 "$CA_CERTIFICATES" "$root/etc/ssl/certs/ca-certificates.crt"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' $IMAGE_USER $IMAGE_USER >"$root/etc/passwd"
	printf 'root:x:0:\nnonroot:x:%s:\n' $IMAGE_USER >"$root/etc/group"
	chmod 0644 "$root/etc/passwd" "$root/etc/group"
	chmod 0755 "$root/etc" "$root/etc/ssl" "$root/etc/ssl/certs" "$root/home"
	chmod 0750 "$root/home/nonroot"
	chmod 1777 "$root/tmp"
	tarball "$root" "$work/base.tar" --exclude=home/nonroot etc home tmp
	tar -C "$root" --owner=$IMAGE_USER --group=$IMAGE_USER --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -rf "$work/base.tar" home/nonroot
	manifests=()
	for p in "${linux[@]}"; do
		ref=$(quietly "$crane" append --oci-empty-base -f "$work/base.tar" -t "$registry/heddle-base:${p//\//-}")
		ref=$(quietly "$crane" mutate --set-platform "$p" "$ref")
		manifests+=(-m "$ref")
	done
	quietly "$crane" index append "${manifests[@]}" -t "$registry/heddle-base" >/dev/null

	image_platforms=$(IFS=,; echo "${linux[*]}")
	KO_DEFAULTBASEIMAGE=$registry/heddle-base KO_DOCKER_REPO=heddle quietly "$ko" build ./cmd/heddle \
		--bare --push=false --sbom=none --oci-layout-path="$layout" \
		--platform="$image_platforms" --image-user=$IMAGE_USER --ldflags="$ldflags" \
		--image-label=org.opencontainers.image.title=heddle \
		--image-label=org.opencontainers.image.version="$VERSION" \
		--image-label=org.opencontainers.image.revision="$commit" \
		--image-label=org.opencontainers.image.source=https://github.com/heddlehq/heddle \
		--image-label=org.opencontainers.image.licenses=Apache-2.0 >/dev/null
	image=dist/heddle_${VERSION}_image.oci.tar
	go run ./internal/release/ocitar pack -name "heddle:$VERSION" "$layout" "$image"
	echo "  $image"

	# The image's binary for this machine, when it has one, is the archive's.
	host=linux/$(go env GOARCH)
	extract=()
	[[ " ${linux[*]} " != *" $host "* ]] || extract=(-extract "$work/image-heddle" -extract-platform "$host")
	go run ./internal/release/ocitar check -platforms "$image_platforms" -user $IMAGE_USER "${extract[@]}" "$image" | sed 's/^/    /'
	if ((${#extract[@]} > 0)); then
		cmp "$work/image-heddle" "$work/heddle_${VERSION}_linux_${host#*/}/heddle"
		echo "    its $host binary is the archive's"
	fi
fi

(cd dist && sha256sum -- heddle_* >SHA256SUMS)
echo "  dist/SHA256SUMS"
