package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// entry is a file of a test image's layer.
type entry struct {
	name string
	mode int64
	dir  bool
	body string
}

// image describes a test image for one platform, as ko builds heddle's.
type image struct {
	os, arch  string
	indexArch string // the index's platform, when it should differ
	user      string
	layers    [][]entry
}

func baseLayer() []entry {
	return []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
}

func heddleImage(arch string) image {
	return image{os: "linux", arch: arch, user: "65532", layers: [][]entry{
		baseLayer(),
		{{name: "ko-app/heddle", mode: 0o755, body: "heddle for " + arch}},
	}}
}

// writeLayout writes an image layout as ko writes it: index.json holds an
// index of the platforms' images, which, like the images, carries the base
// image's annotations; one more blob is reached by nothing.
func writeLayout(t *testing.T, images ...image) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	blob := func(mediaType string, body []byte) map[string]any {
		digest := digestOf(body)
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")), body, 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"mediaType": mediaType, "digest": digest, "size": len(body)}
	}
	jsonBlob := func(mediaType string, v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return blob(mediaType, b)
	}
	base := map[string]string{
		"org.opencontainers.image.base.name":   "127.0.0.1:40617/heddle-base:latest",
		"org.opencontainers.image.base.digest": "sha256:491cdad86f0911903cf1d9a357f294074d90e34fe2161c01aa374aba4745059e",
	}
	var manifests []any
	for _, img := range images {
		var layers []any
		var diffIDs []string
		for _, entries := range img.layers {
			var tarred bytes.Buffer
			tw := tar.NewWriter(&tarred)
			for _, e := range entries {
				hdr := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
				if e.dir {
					hdr.Typeflag = tar.TypeDir
				}
				if err := tw.WriteHeader(hdr); err != nil {
					t.Fatal(err)
				}
				if _, err := tw.Write([]byte(e.body)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			var zipped bytes.Buffer
			zw := gzip.NewWriter(&zipped)
			zw.Write(tarred.Bytes())
			zw.Close()
			diffIDs = append(diffIDs, digestOf(tarred.Bytes()))
			layers = append(layers, blob("application/vnd.oci.image.layer.v1.tar+gzip", zipped.Bytes()))
		}
		config := jsonBlob("application/vnd.oci.image.config.v1+json", map[string]any{
			"os": img.os, "architecture": img.arch,
			"config": map[string]any{"User": img.user, "Entrypoint": []string{"/ko-app/heddle"}},
			"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs},
		})
		desc := jsonBlob(mediaManifest, map[string]any{
			"schemaVersion": 2, "mediaType": mediaManifest, "config": config, "layers": layers, "annotations": base,
		})
		arch := img.arch
		if img.indexArch != "" {
			arch = img.indexArch
		}
		desc["platform"] = map[string]string{"os": img.os, "architecture": arch}
		manifests = append(manifests, desc)
	}
	index := jsonBlob(mediaIndex, map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": manifests, "annotations": base})
	blob("application/octet-stream", []byte("reached by nothing"))
	for name, v := range map[string]any{
		"oci-layout": map[string]string{"imageLayoutVersion": "1.0.0"},
		"index.json": map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": []any{index}},
	} {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func packed(t *testing.T, layout string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := pack(os.DirFS(layout), "heddle:v1.2.3", time.Unix(1764547200, 0), &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestPack: the tarball names the image, holds the blobs the index reaches
// and nothing else, says nothing of the build's base, checks clean, and is
// the same bytes each time.
func TestPack(t *testing.T) {
	layout := writeLayout(t, heddleImage("amd64"), heddleImage("arm64"))
	b := packed(t, layout)
	if !bytes.Equal(b, packed(t, layout)) {
		t.Error("the same layout packed twice differs")
	}
	files, err := readTar(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, body := range files {
		names = append(names, name)
		if bytes.Contains(body, []byte("org.opencontainers.image.base.")) {
			t.Errorf("%s still names the base image:\n%s", name, body)
		}
		if string(body) == "reached by nothing" {
			t.Errorf("%s is a blob the index does not reach", name)
		}
	}
	// oci-layout, index.json, the nested index, per platform a manifest, a
	// config and heddle's layer, and the base layer the platforms share.
	if len(names) != 3+2*3+1 {
		t.Errorf("the tarball holds %d files, want 10: %v", len(names), names)
	}
	var index struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v\n%s", err, files["index.json"])
	}
	if got := index.Manifests[0].Annotations[annotationRefName]; got != "heddle:v1.2.3" {
		t.Errorf("index.json names the image %q, want heddle:v1.2.3", got)
	}

	rep, err := check(bytes.NewReader(b), checkOptions{User: "65532", Platforms: []string{"linux/amd64", "linux/arm64"}, Extract: "linux/arm64"})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if got := string(rep.Extracted); got != "heddle for arm64" {
		t.Errorf("extracted %q, want linux/arm64's entrypoint", got)
	}
	var platforms []string
	for _, p := range rep.Platforms {
		platforms = append(platforms, p.Platform)
		if p.Digest == "" || p.User != "65532" || !slices.Equal(p.Entrypoint, []string{"/ko-app/heddle"}) || p.Layers != 2 || p.Size == 0 {
			t.Errorf("report %+v", p)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
}

// TestCheckFinds: what check refuses, each on its own, named with the
// platform it concerns.
func TestCheckFinds(t *testing.T) {
	std := checkOptions{User: "65532"}
	for _, tc := range []struct {
		name   string
		change func(*image)
		opts   checkOptions
		want   string
	}{
		{name: "runs as root", change: func(img *image) { img.user = "0" }, opts: std, want: `linux/arm64: runs as user "0"`},
		{name: "any user, not in passwd", change: func(img *image) { img.user = "1000" }, want: "linux/arm64: /etc/passwd does not name user 1000"},
		{name: "no CA bundle", change: func(img *image) {
			img.layers[0] = slices.DeleteFunc(img.layers[0], func(e entry) bool { return strings.HasSuffix(e.name, ".crt") })
		}, opts: std, want: "linux/arm64: no CA certificates"},
		{name: "CA bundle removed by a whiteout", change: func(img *image) {
			img.layers = append(img.layers, []entry{{name: "etc/ssl/certs/.wh.ca-certificates.crt", mode: 0o644}})
		}, opts: std, want: "linux/arm64: no CA certificates"},
		{name: "CA bundle under an opaque directory", change: func(img *image) {
			img.layers = append(img.layers, []entry{{name: "etc/ssl/.wh..wh..opq", mode: 0o644}})
		}, opts: std, want: "linux/arm64: no CA certificates"},
		{name: "tmp not writable by all", change: func(img *image) { img.layers[0][3].mode = 0o755 }, opts: std, want: "linux/arm64: /tmp is not a directory with mode 1777"},
		{name: "entrypoint not executable", change: func(img *image) { img.layers[1][0].mode = 0o644 }, opts: std, want: "linux/arm64: entrypoint /ko-app/heddle is not an executable file"},
		{name: "platform mismatch", change: func(img *image) { img.indexArch = "amd64" }, opts: std, want: "the index says linux/amd64, the image's configuration linux/arm64"},
		{name: "platform missing", opts: checkOptions{User: "65532", Platforms: []string{"linux/amd64", "linux/arm64", "linux/s390x"}}, want: "no image for linux/s390x"},
		{name: "platform not asked for", opts: checkOptions{User: "65532", Platforms: []string{"linux/amd64"}}, want: "an image for linux/arm64, which was not asked for"},
		{name: "nothing to extract", opts: checkOptions{User: "65532", Extract: "linux/riscv64"}, want: "no image for linux/riscv64 to extract"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arm := heddleImage("arm64")
			if tc.change != nil {
				tc.change(&arm)
			}
			_, err := check(bytes.NewReader(packed(t, writeLayout(t, heddleImage("amd64"), arm))), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check: %v\nwant an error saying %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "linux/amd64:") {
				t.Errorf("check found something wrong with linux/amd64, which is sound: %v", err)
			}
		})
	}
}

// TestCheckFindsACorruptBlob: a blob whose bytes are not its digest's.
func TestCheckFindsACorruptBlob(t *testing.T) {
	b := packed(t, writeLayout(t, heddleImage("amd64")))
	files, err := readTar(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if strings.HasPrefix(name, "blobs/") && bytes.HasPrefix(body, []byte{0x1f, 0x8b}) && len(body) > 100 {
			body = slices.Clone(body)
			body[len(body)-1] ^= 0xff
		}
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write(body)
	}
	tw.Close()
	if _, err := check(&out, checkOptions{}); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("check: %v; want a blob that does not match its digest", err)
	}
}
