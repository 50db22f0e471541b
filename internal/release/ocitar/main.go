// Command ocitar packs the OCI image layout ko writes into the tarball that
// make release ships, and checks such a tarball without a container
// runtime, a daemon or a registry. internal/release/release.sh runs both:
//
//	go run ./internal/release/ocitar pack -name heddle:v1.2.3 LAYOUT OUT.oci.tar
//	go run ./internal/release/ocitar check -platforms linux/amd64,linux/arm64 -user 65532 \
//	    -extract heddle OUT.oci.tar
//
// pack writes the image layout LAYOUT as a tar file: index.json names the
// image (org.opencontainers.image.ref.name, which podman load reads), and
// the annotations ko writes about the base image
// (org.opencontainers.image.base.name and base.digest) are dropped: that
// base lives only for the length of the build, in a registry on 127.0.0.1
// whose port is in its name and in the index's digest of it, so they would
// name nothing anyone can fetch, and make each build's image differ. The
// tar holds only the blobs the index reaches, in a fixed order, owned by
// root and dated SOURCE_DATE_EPOCH (or 1970), so that the same layout packs
// to the same bytes.
//
// check reads such a tarball and verifies, for each platform: every blob
// matches its digest and every layer its diff_id; the configuration's
// platform is the index's; the image runs as -user, which /etc/passwd
// names; its entrypoint is an executable file; it holds a CA bundle at
// /etc/ssl/certs/ca-certificates.crt; /tmp is writable by all (1777). It
// prints a line per platform. -platforms requires exactly those platforms;
// -extract writes the entrypoint of -extract-platform's image (by default
// linux and the host's architecture) to a file, to be run.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "pack":
		err = packCommand(os.Args[2:])
	case "check":
		err = checkCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ocitar:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: ocitar pack -name NAME LAYOUT OUT.tar
       ocitar check [-platforms LIST] [-user UID] [-extract FILE [-extract-platform OS/ARCH]] TARBALL`)
	os.Exit(2)
}

func packCommand(args []string) error {
	fs := flag.NewFlagSet("pack", flag.ExitOnError)
	name := fs.String("name", "", "the image's name, written to index.json as "+annotationRefName)
	_ = fs.Parse(args)
	if *name == "" || fs.NArg() != 2 {
		usage()
	}
	mtime := time.Unix(0, 0)
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		mtime = time.Unix(sec, 0)
	}
	out, err := os.Create(fs.Arg(1))
	if err != nil {
		return err
	}
	if err := pack(os.DirFS(fs.Arg(0)), *name, mtime, out); err != nil {
		out.Close()
		os.Remove(fs.Arg(1))
		return err
	}
	return out.Close()
}

func checkCommand(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	platforms := fs.String("platforms", "", "the platforms the image must hold, no more and no fewer (comma- or space-separated)")
	user := fs.String("user", "65532", "the user the image must run as")
	extract := fs.String("extract", "", "write the entrypoint of -extract-platform's image to this file")
	extractPlatform := fs.String("extract-platform", "linux/"+runtime.GOARCH, "the platform whose entrypoint -extract writes")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		usage()
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	opts := checkOptions{User: *user, Platforms: strings.Fields(strings.ReplaceAll(*platforms, ",", " "))}
	if *extract != "" {
		opts.Extract = *extractPlatform
	}
	rep, err := check(f, opts)
	for _, p := range rep.Platforms {
		fmt.Printf("%-12s %s  entrypoint %s  user %s  %d layers, %.1f MB\n",
			p.Platform, p.Digest, strings.Join(p.Entrypoint, " "), p.User, p.Layers, float64(p.Size)/1e6)
	}
	if err != nil {
		return err
	}
	if *extract != "" {
		return os.WriteFile(*extract, rep.Extracted, 0o755)
	}
	return nil
}
