package runtime

// The plugin host registers the builder of strategies declared under
// ai.auth_plugins (live.PluginKind): a runtime opens any plan the compiler
// accepts, so it carries the host with it.
import _ "github.com/heddlehq/heddle/auth/plugin"
