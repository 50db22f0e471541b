package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
)

// checkOptions are what check requires beyond a sound image.
type checkOptions struct {
	User      string   // the user every image runs as; "" for any
	Platforms []string // exactly these platforms, when not empty
	Extract   string   // the platform whose entrypoint check returns, or ""
}

// report is what check found: a line per platform, and the entrypoint of
// checkOptions.Extract's.
type report struct {
	Platforms []platformReport
	Extracted []byte
}

type platformReport struct {
	Platform   string
	Digest     string // the manifest's
	Entrypoint []string
	User       string
	Layers     int
	Size       int64 // of the layers as stored
}

// descriptor, manifest and config are the fields of the image
// specification's documents that check reads.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	} `json:"platform"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"` // of an index
	Config    descriptor   `json:"config"`    // of an image
	Layers    []descriptor `json:"layers"`
}

type config struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant"`
	Config       struct {
		User       string   `json:"User"`
		Entrypoint []string `json:"Entrypoint"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// check reads an image tarball as pack writes it and checks it: the
// package comment lists what it verifies. The error joins every problem
// found, each naming its platform.
func check(r io.Reader, opts checkOptions) (report, error) {
	var rep report
	files, err := readTar(r)
	if err != nil {
		return rep, err
	}
	if _, ok := files["oci-layout"]; !ok {
		return rep, errors.New("no oci-layout file: not an OCI image layout")
	}
	var problems []error
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if sum, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && digestOf(files[name]) != "sha256:"+sum {
			problems = append(problems, fmt.Errorf("%s does not match its digest", name))
		}
	}
	var top manifest
	if err := json.Unmarshal(files["index.json"], &top); err != nil {
		return rep, fmt.Errorf("index.json: %w", err)
	}
	images, err := imagesOf(files, top.Manifests)
	if err != nil {
		return rep, err
	}
	var seen []string
	for _, img := range images {
		p, fsys, err := readImage(files, img)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		rep.Platforms = append(rep.Platforms, p)
		seen = append(seen, p.Platform)
		for _, problem := range checkImage(p, fsys, opts) {
			problems = append(problems, fmt.Errorf("%s: %s", p.Platform, problem))
		}
		if p.Platform == opts.Extract && len(p.Entrypoint) > 0 {
			rep.Extracted = fsys[strings.TrimPrefix(path.Clean("/"+p.Entrypoint[0]), "/")].body
		}
	}
	if len(opts.Platforms) > 0 {
		for _, want := range opts.Platforms {
			if !slices.Contains(seen, want) {
				problems = append(problems, fmt.Errorf("no image for %s (the tarball holds %s)", want, strings.Join(seen, ", ")))
			}
		}
		for _, got := range seen {
			if !slices.Contains(opts.Platforms, got) {
				problems = append(problems, fmt.Errorf("an image for %s, which was not asked for", got))
			}
		}
	}
	if opts.Extract != "" && rep.Extracted == nil && !slices.Contains(seen, opts.Extract) {
		problems = append(problems, fmt.Errorf("no image for %s to extract its entrypoint", opts.Extract))
	}
	return rep, errors.Join(problems...)
}

func readTar(r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")] = b
	}
}

// blob returns the blob a descriptor names, checking its size.
func blob(files map[string][]byte, d descriptor) ([]byte, error) {
	file, err := blobPath(d.Digest)
	if err != nil {
		return nil, err
	}
	b, ok := files[file]
	if !ok {
		return nil, fmt.Errorf("blob %s is missing", d.Digest)
	}
	if int64(len(b)) != d.Size {
		return nil, fmt.Errorf("blob %s holds %d bytes; its descriptor says %d", d.Digest, len(b), d.Size)
	}
	return b, nil
}

// imagesOf returns the image manifests' descriptors that descs reach
// through indexes.
func imagesOf(files map[string][]byte, descs []descriptor) ([]descriptor, error) {
	var images []descriptor
	for _, d := range descs {
		switch {
		case isManifest(d.MediaType):
			images = append(images, d)
		case isIndex(d.MediaType):
			b, err := blob(files, d)
			if err != nil {
				return nil, err
			}
			var idx manifest
			if err := json.Unmarshal(b, &idx); err != nil {
				return nil, fmt.Errorf("index %s: %w", d.Digest, err)
			}
			more, err := imagesOf(files, idx.Manifests)
			if err != nil {
				return nil, err
			}
			images = append(images, more...)
		default:
			return nil, fmt.Errorf("%s: media type %q is neither an index nor an image", d.Digest, d.MediaType)
		}
	}
	return images, nil
}

// file is an entry of an image's file system.
type file struct {
	hdr  *tar.Header
	body []byte
}

// readImage reads the image a descriptor names: its configuration and its
// file system, the layers applied in order.
func readImage(files map[string][]byte, d descriptor) (platformReport, map[string]file, error) {
	p := platformReport{Digest: d.Digest}
	b, err := blob(files, d)
	if err != nil {
		return p, nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return p, nil, fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	b, err = blob(files, m.Config)
	if err != nil {
		return p, nil, err
	}
	var c config
	if err := json.Unmarshal(b, &c); err != nil {
		return p, nil, fmt.Errorf("config %s: %w", m.Config.Digest, err)
	}
	p.Platform = platformString(c.OS, c.Architecture, c.Variant)
	if d.Platform != nil {
		if in := platformString(d.Platform.OS, d.Platform.Architecture, d.Platform.Variant); in != p.Platform {
			return p, nil, fmt.Errorf("%s: the index says %s, the image's configuration %s", d.Digest, in, p.Platform)
		}
	}
	p.Entrypoint, p.User, p.Layers = c.Config.Entrypoint, c.Config.User, len(m.Layers)
	if len(m.Layers) != len(c.RootFS.DiffIDs) {
		return p, nil, fmt.Errorf("%s: %d layers, %d diff_ids", p.Platform, len(m.Layers), len(c.RootFS.DiffIDs))
	}
	fsys := map[string]file{}
	for i, l := range m.Layers {
		p.Size += l.Size
		if err := applyLayer(files, l, c.RootFS.DiffIDs[i], fsys); err != nil {
			return p, nil, fmt.Errorf("%s: layer %d: %w", p.Platform, i, err)
		}
	}
	return p, fsys, nil
}

func platformString(os, arch, variant string) string {
	if variant != "" {
		return os + "/" + arch + "/" + variant
	}
	return os + "/" + arch
}

// applyLayer adds a layer's files to fsys, after removing what its
// whiteouts remove.
func applyLayer(files map[string][]byte, l descriptor, diffID string, fsys map[string]file) error {
	b, err := blob(files, l)
	if err != nil {
		return err
	}
	switch {
	case strings.HasSuffix(l.MediaType, "+gzip") || strings.HasSuffix(l.MediaType, ".tar.gzip"):
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		if b, err = io.ReadAll(zr); err != nil {
			return err
		}
	case strings.HasSuffix(l.MediaType, ".tar") || strings.HasSuffix(l.MediaType, ".tar.v1"):
	default:
		return fmt.Errorf("media type %q is not read here", l.MediaType)
	}
	if digestOf(b) != diffID {
		return fmt.Errorf("does not match its diff_id %s", diffID)
	}
	var added []string
	remove := func(dir string, keepDir bool) {
		for name := range fsys {
			if (name == dir && !keepDir) || strings.HasPrefix(name, dir+"/") {
				delete(fsys, name)
			}
		}
	}
	tr := tar.NewReader(bytes.NewReader(b))
	layer := map[string]file{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		dir, base := path.Split(name)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case base == ".wh..wh..opq":
			remove(dir, true)
			continue
		case strings.HasPrefix(base, ".wh."):
			remove(path.Join(dir, strings.TrimPrefix(base, ".wh.")), false)
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		layer[name] = file{hdr: hdr, body: body}
		added = append(added, name)
	}
	for _, name := range added {
		fsys[name] = layer[name]
	}
	return nil
}

// checkImage returns what is wrong with one platform's image.
func checkImage(p platformReport, fsys map[string]file, opts checkOptions) []string {
	var problems []string
	regular := func(name string) (file, bool) {
		f, ok := fsys[strings.TrimPrefix(path.Clean("/"+name), "/")]
		return f, ok && f.hdr.Typeflag == tar.TypeReg
	}
	if opts.User != "" && p.User != opts.User {
		problems = append(problems, fmt.Sprintf("runs as user %q; want %q", p.User, opts.User))
	}
	if uid, _, _ := strings.Cut(p.User, ":"); uid != "" && uid != "0" && uid != "root" {
		passwd, _ := regular("/etc/passwd")
		if !slices.ContainsFunc(strings.Split(string(passwd.body), "\n"), func(line string) bool {
			fields := strings.Split(line, ":")
			return len(fields) > 2 && (fields[2] == uid || fields[0] == uid)
		}) {
			problems = append(problems, fmt.Sprintf("/etc/passwd does not name user %s", uid))
		}
	}
	if len(p.Entrypoint) == 0 {
		problems = append(problems, "no entrypoint")
	} else if f, ok := regular(p.Entrypoint[0]); !ok || f.hdr.Mode&0o111 == 0 {
		problems = append(problems, fmt.Sprintf("entrypoint %s is not an executable file", p.Entrypoint[0]))
	}
	if f, ok := regular("/etc/ssl/certs/ca-certificates.crt"); !ok || !bytes.Contains(f.body, []byte("-----BEGIN CERTIFICATE-----")) {
		problems = append(problems, "no CA certificates at /etc/ssl/certs/ca-certificates.crt")
	}
	if f, ok := fsys["tmp"]; !ok || f.hdr.Typeflag != tar.TypeDir || f.hdr.Mode&0o7777 != 0o1777 {
		problems = append(problems, "/tmp is not a directory with mode 1777")
	}
	return problems
}
