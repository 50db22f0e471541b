package serve

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 document of the front door: the invoke API,
// the probes and /metrics, with the schema of every answer, errors
// included. It is served at GET /v1/openapi.json; docs/openapi.json is a
// copy written by `go run ./internal/gendocs`, and a test holds real
// answers to it.
//
//go:embed openapi.json
var OpenAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}
