package oauth

import "github.com/heddlehq/heddle/auth"

// Settings is the config half of the oauth strategy: the settings an auth
// block of kind oauth accepts. Package builtin registers it together with
// the live half (Builder), so a program that accepts oauth can also open it.
var Settings = auth.Strategy{
	Kind: "oauth",
	Doc:  "The MCP client's own OAuth flows (go-sdk): authorization code with PKCE, client credentials, or the enterprise flow (SEP-990); or calls made as the caller (token_exchange, RFC 8693).",
	Settings: map[string]auth.Setting{
		"flow":                  {Type: auth.StringSetting, OneOf: []string{"authorization_code", "client_credentials", "enterprise", "token_exchange"}, Doc: "default authorization_code"},
		"client_id":             {Type: auth.StringSetting, Doc: "a pre-registered client id (or a client ID metadata document URL)"},
		"client_id_ref":         {Type: auth.RefSetting, Doc: "reference to a pre-registered client id"},
		"client_secret_ref":     {Type: auth.RefSetting, Doc: "reference to the client secret"},
		"token_endpoint_auth":   {Type: auth.StringSetting, OneOf: []string{"client_secret_basic", "client_secret_post", "none"}},
		"scopes":                {Type: auth.ListSetting, Doc: "scopes to request"},
		"redirect_url":          {Type: auth.StringSetting, Doc: "loopback redirect URL heddle listens at for the authorization code"},
		"refresh_token_ref":     {Type: auth.RefSetting, Doc: "a pre-provisioned refresh token, for headless deployments"},
		"idp_issuer":            {Type: auth.StringSetting, Doc: "enterprise and token_exchange flows: the identity provider's issuer URL"},
		"idp_token_ref":         {Type: auth.RefSetting, Doc: "enterprise flow: reference to the identity provider's ID token"},
		"idp_token_endpoint":    {Type: auth.StringSetting, Doc: "enterprise and token_exchange flows: the identity provider's token endpoint (skips its metadata)"},
		"resource":              {Type: auth.StringSetting, Doc: "token_exchange flow: the resource (RFC 8707) exchanged tokens are for; default the server's URL"},
		"audience":              {Type: auth.StringSetting, Doc: "token_exchange flow: the audience (RFC 8693) exchanged tokens are for"},
		"idp_client_id":         {Type: auth.StringSetting, Doc: "enterprise flow: client id at the identity provider"},
		"idp_client_secret_ref": {Type: auth.RefSetting, Doc: "enterprise flow: client secret at the identity provider"},
	},
}
