package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Media types and annotations of the OCI image specification, and the
// Docker media types a layout may hold too.
const (
	mediaIndex        = "application/vnd.oci.image.index.v1+json"
	mediaManifest     = "application/vnd.oci.image.manifest.v1+json"
	mediaDockerList   = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaDockerImage  = "application/vnd.docker.distribution.manifest.v2+json"
	annotationRefName = "org.opencontainers.image.ref.name"
)

// baseAnnotations are the annotations about the base image that pack
// drops.
var baseAnnotations = []string{"org.opencontainers.image.base.name", "org.opencontainers.image.base.digest"}

func isIndex(mediaType string) bool {
	return mediaType == mediaIndex || mediaType == mediaDockerList
}

func isManifest(mediaType string) bool {
	return mediaType == mediaManifest || mediaType == mediaDockerImage
}

// document is a JSON document of the image specification, decoded so that
// the fields ocitar does not read survive encoding again.
type document = map[string]any

func decode(b []byte) (document, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var d document
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	return d, nil
}

// blobPath is where a layout holds the blob of a digest.
func blobPath(digest string) (string, error) {
	alg, sum, _ := strings.Cut(digest, ":")
	if alg != "sha256" || len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return "", fmt.Errorf("digest %q: want sha256: and 64 hexadecimal digits", digest)
	}
	return "blobs/sha256/" + sum, nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// pack writes the image layout src to w as a tar file: the package comment
// says what it changes and why.
func pack(src fs.FS, name string, mtime time.Time, w io.Writer) error {
	raw, err := fs.ReadFile(src, "index.json")
	if err != nil {
		return err
	}
	top, err := decode(raw)
	if err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	images, _ := top["manifests"].([]any)
	if len(images) != 1 {
		return fmt.Errorf("index.json holds %d manifests; want one, the image", len(images))
	}
	image, ok := images[0].(document)
	if !ok {
		return fmt.Errorf("index.json: manifests[0] is not a descriptor")
	}
	p := &packer{src: src, blobs: map[string][]byte{}}
	if err := p.add(image); err != nil {
		return err
	}
	ann, _ := image["annotations"].(document)
	if ann == nil {
		ann = document{}
	}
	ann[annotationRefName] = name
	image["annotations"] = ann
	index, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return err
	}
	layoutFile, err := fs.ReadFile(src, "oci-layout")
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	write := func(name string, body []byte) error {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if strings.HasSuffix(name, "/") {
			hdr.Mode, hdr.Typeflag = 0o755, tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := write("oci-layout", layoutFile); err != nil {
		return err
	}
	if err := write("index.json", append(index, '\n')); err != nil {
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := write(dir, nil); err != nil {
			return err
		}
	}
	for _, digest := range slices.Sorted(maps.Keys(p.blobs)) {
		file, _ := blobPath(digest)
		if err := write(file, p.blobs[digest]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// packer gathers the blobs an image reaches from a layout.
type packer struct {
	src   fs.FS
	blobs map[string][]byte // by digest
}

// add adds the blob desc names and every blob it reaches to p.blobs, with
// the base image's annotations dropped from the manifests and indexes among
// them; when that changes a blob, add sets desc's digest and size to the
// new blob's.
func (p *packer) add(desc document) error {
	digest, _ := desc["digest"].(string)
	mediaType, _ := desc["mediaType"].(string)
	file, err := blobPath(digest)
	if err != nil {
		return err
	}
	b, err := fs.ReadFile(p.src, file)
	if err != nil {
		return err
	}
	if !isIndex(mediaType) && !isManifest(mediaType) {
		p.blobs[digest] = b
		return nil
	}
	d, err := decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", digest, err)
	}
	changed := false
	if ann, ok := d["annotations"].(document); ok {
		for _, key := range baseAnnotations {
			if _, ok := ann[key]; ok {
				delete(ann, key)
				changed = true
			}
		}
		if len(ann) == 0 {
			delete(d, "annotations")
		}
	}
	var refs []any
	if isIndex(mediaType) {
		refs, _ = d["manifests"].([]any)
	} else {
		refs, _ = d["layers"].([]any)
		refs = append(refs, d["config"])
	}
	for _, r := range refs {
		ref, ok := r.(document)
		if !ok {
			return fmt.Errorf("%s: a reference that is not a descriptor", digest)
		}
		before := ref["digest"]
		if err := p.add(ref); err != nil {
			return err
		}
		changed = changed || ref["digest"] != before
	}
	if changed {
		if b, err = json.Marshal(d); err != nil {
			return err
		}
		digest = digestOf(b)
		desc["digest"], desc["size"] = digest, json.Number(strconv.Itoa(len(b)))
	}
	p.blobs[digest] = b
	return nil
}
