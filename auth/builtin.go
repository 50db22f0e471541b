package auth

// The strategies of this package need no live half beyond package authlive,
// which every runtime links. Strategies with live halves of their own (oauth,
// and auth plugins) are registered, both halves together, by package
// builtin.
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
}
