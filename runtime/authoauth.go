package runtime

// The oauth strategy's live half (auth/oauth) registers its builder: oauth
// is built in, so a runtime that opens a plan naming it carries it.
import _ "github.com/heddlehq/heddle/auth/oauth"
