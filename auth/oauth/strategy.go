package oauth

import "github.com/heddlehq/heddle/auth"

// Settings is the config half of the oauth strategy: the settings an auth
// block of kind oauth accepts. Package builtin registers it together with
// the live half (Builder), so a program that accepts oauth can also open it.
var Settings = auth.Strategy{
	Kind: "oauth",
	Doc:  "The MCP client's own OAuth flows (go-sdk): authorization code with PKCE, client credentials, or the enterprise flow (SEP-990).",
	Settings: map[string]auth.Setting{
		"flow":                  {Type: auth.StringSetting, OneOf: []string{"authorization_code", "client_credentials", "enterprise"}, Doc: "default authorization_code"},
		"client_id":             {Type: auth.StringSetting, Doc: "a pre-registered client id (or a client ID metadata document URL)"},
		"client_id_ref":         {Type: auth.RefSetting, Doc: "reference to a pre-registered client id"},
		"client_secret_ref":     {Type: auth.RefSetting, Doc: "reference to the client secret"},
		"token_endpoint_auth":   {Type: auth.StringSetting, OneOf: []string{"client_secret_basic", "client_secret_post", "none"}},
		"scopes":                {Type: auth.ListSetting, Doc: "scopes to request"},
		"redirect_url":          {Type: auth.StringSetting, Doc: "loopback redirect URL heddle listens at for the authorization code"},
		"refresh_token_ref":     {Type: auth.RefSetting, Doc: "a pre-provisioned refresh token, for headless deployments"},
		"idp_issuer":            {Type: auth.StringSetting, Doc: "enterprise flow: the identity provider's issuer URL"},
		"idp_token_ref":         {Type: auth.RefSetting, Doc: "enterprise flow: reference to the identity provider's ID token"},
		"idp_token_endpoint":    {Type: auth.StringSetting, Doc: "enterprise flow: the identity provider's token endpoint (skips its metadata)"},
		"idp_client_id":         {Type: auth.StringSetting, Doc: "enterprise flow: client id at the identity provider"},
		"idp_client_secret_ref": {Type: auth.RefSetting, Doc: "enterprise flow: client secret at the identity provider"},
	},
}
