package auth_test

import (
	"testing"

	"github.com/heddlehq/heddle/auth"
)

func TestCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "token": true, "API_KEY": true, "api_key": true, "apiKey": true,
		"X-Api-Key": true, "client_secret": true, "clientSecret": true, "DB_PASSWORD": true,
		"PGPASSWD": true, "GITHUB_PAT": true, "GOOGLE_CREDENTIALS": true, "BASIC_AUTH": true,
		"AWS_SECRET_ACCESS_KEY": true, "GITHUBTOKEN": true, "OPENAIAPIKEY": true, "Authorization": true,
		"SECRET_VALUE": true, "private_key": true,

		"KEYBOARD": false, "MONKEY": false, "KEYBOARD_LAYOUT": false, "COMPAT": false,
		"PATH": false, "HOME": false, "TOKEN_URL": false, "token_url": false, "auth_url": false,
		"AUTH_PORT": false, "KEY_ID": false, "AWS_ACCESS_KEY_ID": false, "GITHUB_TOKEN_FILE": false,
		"MAX_TOKENS": false, "TOKENIZER": false, "USE_OAUTH": false, "PATTERN": false,
		"X-Tenant-Id": false, "audience": false, "tenant": false, "": false, "_": false,
	} {
		if got := auth.CredentialName(name); got != want {
			t.Errorf("CredentialName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHasUserinfo(t *testing.T) {
	for s, want := range map[string]bool{
		"https://user:pass@example.com/x":     true,
		"postgres://u:p@db/x":                 true,
		"https://tok@example.com":             true,
		" https://u:p@example.com ":           true,
		"https://u:p%zz@example.com/":         true, // unparsable, judged as written
		"https://example.com/a@b":             false,
		"https://example.com/?mail=a@b.c":     false,
		"mailto:someone@example.com":          false,
		"someone@example.com":                 false,
		"acme":                                false,
		"https://example.com:8443/path#frag@": false,
	} {
		if got := auth.HasUserinfo(s); got != want {
			t.Errorf("HasUserinfo(%q) = %v, want %v", s, got, want)
		}
	}
}
