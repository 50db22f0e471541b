package secrets_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/secrets"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("heddle/token", "s3cret-token\n")
	write("heddle/empty", "\n")
	write("plain", "from-file")
	env := map[string]string{"SET": "from-env", "EMPTY": ""}
	r := secrets.New(secrets.Options{Dir: dir, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})

	for _, tc := range []struct {
		ref, want string
		code      diag.Code
	}{
		{ref: "${secrets:/heddle/token}", want: "s3cret-token"},
		{ref: "${env:SET}", want: "from-env"},
		{ref: "${file:" + filepath.Join(dir, "plain") + "}", want: "from-file"},
		{ref: "${secrets:/heddle/missing}", code: diag.SecretUnresolved},
		{ref: "${env:UNSET}", code: diag.SecretUnresolved},
		{ref: "${file:/nonexistent/heddle}", code: diag.SecretUnresolved},
		{ref: "${secrets:/heddle/empty}", code: diag.SecretEmpty},
		{ref: "${env:EMPTY}", code: diag.SecretEmpty},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := r.Resolve(context.Background(), config.ParseRef(tc.ref))
			if tc.code != "" {
				if !diag.Has(err, tc.code) {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
				if !strings.Contains(err.Error(), tc.ref) {
					t.Errorf("error %q does not name the reference", err)
				}
				return
			}
			if err != nil || got.Reveal() != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// The secrets directory is required for ${secrets:…}.
	if _, err := secrets.New(secrets.Options{}).Resolve(context.Background(), config.ParseRef("${secrets:/a}")); !diag.Has(err, diag.SecretUnresolved) {
		t.Errorf("no dir: %v", err)
	}
}
