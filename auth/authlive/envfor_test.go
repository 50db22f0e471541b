package authlive_test

import (
	"log/slog"
	"reflect"
	"testing"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
)

// TestEnvForFillsEveryField: the auth environment a kind derives from the
// one it was opened with has every field set, so that a field added to Env
// fails here until EnvFor fills it (an A2A agent once lost the plan's
// plugins to an Env built field by field). URL is the one field EnvFor
// cannot know: it is the dependency's own, which the kind sets.
func TestEnvForFillsEveryField(t *testing.T) {
	env := driver.Env{
		Plan:    &plan.Plan{AuthPlugins: map[string]*plan.AuthPlugin{"vault": {}}},
		Secrets: secrets.New(secrets.Options{}),
		Logger:  slog.New(slog.DiscardHandler),
	}
	got := authlive.EnvFor(env, "a2a", "remote agent triage")
	v := reflect.ValueOf(got)
	for i := range v.NumField() {
		if v.Field(i).IsZero() && v.Type().Field(i).Name != "URL" {
			t.Errorf("EnvFor leaves %s unset", v.Type().Field(i).Name)
		}
	}
	if got.Plugins["vault"] == nil || got.Purpose != "a2a" || got.Name != "remote agent triage" {
		t.Errorf("EnvFor = %+v", got)
	}
}
