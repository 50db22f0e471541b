package serve

import (
	"net/http"
	"net/url"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/modelfmt"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/wire"
)

// writeProviderTools answers GET /v1/agents/{agent}/tools?format=…: the
// tools as a model API's tools parameter takes them (modelfmt), or, for
// format=json, as the invoke API lists them. strict=true is OpenAI's strict
// mode. An unknown format, a strict that is not true or false, or strict
// with a format that has none is 400 REQUEST_INVALID.
func writeProviderTools(w http.ResponseWriter, q url.Values, tools []runtime.Tool) {
	format := q.Get("format")
	var strict bool
	switch q.Get("strict") {
	case "", "false":
	case "true":
		strict = true
	default:
		Error(w, http.StatusBadRequest, diag.New(diag.RequestInvalid, "strict is true or false"))
		return
	}
	if format == "" || format == "json" {
		if strict {
			Error(w, http.StatusBadRequest, diag.New(diag.RequestInvalid, "strict is a choice of format=%s and format=%s", modelfmt.OpenAIChat, modelfmt.OpenAIResponses))
			return
		}
		writeJSON(w, http.StatusOK, wire.Tools(tools))
		return
	}
	f, err := modelfmt.ParseFormat(format)
	if err != nil {
		Error(w, http.StatusBadRequest, diag.New(diag.RequestInvalid, "unknown format: json (the default), %s, %s, %s or %s", modelfmt.Anthropic, modelfmt.OpenAIChat, modelfmt.OpenAIResponses, modelfmt.Gemini))
		return
	}
	raw, err := modelfmt.Render(f, tools, modelfmt.Options{Strict: strict})
	if err != nil {
		Error(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, http.StatusOK, raw)
}
