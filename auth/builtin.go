package auth

func init() {
	Register(Strategy{
		Kind: "bearer",
		Doc:  "Sends Authorization: Bearer <token>.",
		Settings: map[string]Setting{
			"token_ref": {Type: RefSetting, Required: true, Doc: "reference to the token"},
		},
	})
	Register(Strategy{
		Kind: "static",
		Doc:  "Sends fixed headers from a Name=value payload (the headers_ref shorthand).",
		Settings: map[string]Setting{
			"headers_ref": {Type: RefSetting, Required: true, Doc: "reference to a Name=value payload"},
		},
	})
	Register(Strategy{
		Kind: "oauth",
		Doc:  "The MCP client's own OAuth flows (go-sdk): authorization code with PKCE, client credentials, or the enterprise flow (SEP-990).",
		Settings: map[string]Setting{
			"flow":                  {Type: StringSetting, OneOf: []string{"authorization_code", "client_credentials", "enterprise"}, Doc: "default authorization_code"},
			"client_id":             {Type: StringSetting, Doc: "a pre-registered client id (or a client ID metadata document URL)"},
			"client_id_ref":         {Type: RefSetting, Doc: "reference to a pre-registered client id"},
			"client_secret_ref":     {Type: RefSetting, Doc: "reference to the client secret"},
			"token_endpoint_auth":   {Type: StringSetting, OneOf: []string{"client_secret_basic", "client_secret_post", "none"}},
			"scopes":                {Type: ListSetting, Doc: "scopes to request"},
			"redirect_url":          {Type: StringSetting, Doc: "loopback redirect URL heddle listens at for the authorization code"},
			"refresh_token_ref":     {Type: RefSetting, Doc: "a pre-provisioned refresh token, for headless deployments"},
			"idp_issuer":            {Type: StringSetting, Doc: "enterprise flow: the identity provider's issuer URL"},
			"idp_token_ref":         {Type: RefSetting, Doc: "enterprise flow: reference to the identity provider's ID token"},
			"idp_token_endpoint":    {Type: StringSetting, Doc: "enterprise flow: the identity provider's token endpoint (skips its metadata)"},
			"idp_client_id":         {Type: StringSetting, Doc: "enterprise flow: client id at the identity provider"},
			"idp_client_secret_ref": {Type: RefSetting, Doc: "enterprise flow: client secret at the identity provider"},
		},
	})
}
