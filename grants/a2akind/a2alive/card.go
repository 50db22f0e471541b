package a2alive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/heddlehq/heddle/internal/netwhy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CardPath is where an agent's card is served, relative to its URL.
const CardPath = "/.well-known/agent-card.json"

// maxCardBytes caps the card read at start-up.
const maxCardBytes = 1 << 20

// maxCardText caps the card text shown to the model in the tool description.
const maxCardText = 2000

// card is the part of an agent card heddle reads: A2A 1.0 fields and the
// A2A 0.3 ones an older agent serves instead.
type card struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Skills      []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"skills"`

	// A2A 1.0.
	SupportedInterfaces []cardInterface `json:"supportedInterfaces"`

	// A2A 0.3.
	URL                  string `json:"url"`
	ProtocolVersion      string `json:"protocolVersion"`
	PreferredTransport   string `json:"preferredTransport"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
}

type cardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant"`
}

// endpoint is where and how calls are sent.
type endpoint struct {
	url    string
	legacy bool   // A2A 0.3: message/send, tasks/get
	tenant string // A2A 1.0 tenant, when the card names one
}

// safeError is a failure whose text is heddle's own and safe to show: no
// URL, nothing the remote party wrote.
type safeError struct{ msg string }

func (e *safeError) Error() string { return e.msg }

func safef(format string, args ...any) error { return &safeError{fmt.Sprintf(format, args...)} }

// safeReason is err's text when heddle wrote it, what went wrong on the
// network with host (netwhy: never the network stack's own text, which can
// name the URL), or a generic phrase.
func safeReason(err error, host string) string {
	var s *safeError
	if errors.As(err, &s) {
		return s.msg
	}
	if reason, _ := netwhy.Reason(err, host); reason != "" {
		return "the agent card could not be fetched: " + reason
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the agent card was not fetched before the deadline"
	}
	return "the agent card could not be fetched"
}

// cardURL is the card's address: the agent's URL with CardPath appended,
// unless the URL already names the card.
func (a *remote) cardURL() string {
	u := strings.TrimSuffix(a.spec.URL, "/")
	if strings.HasSuffix(u, CardPath) {
		return u
	}
	return u + CardPath
}

// fetchCard fetches and decodes the card through the agent's auth strategy.
func (a *remote) fetchCard(ctx context.Context) (*card, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cardURL(), nil)
	if err != nil {
		return nil, safef("its url cannot be used (value redacted)")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(versionHeader, version1)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, safef("fetching the agent card answered HTTP %d", resp.StatusCode)
	}
	var c card
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxCardBytes)).Decode(&c); err != nil {
		return nil, safef("the agent card is not valid JSON (or larger than %d bytes)", maxCardBytes)
	}
	return &c, nil
}

// choose picks the endpoint calls go to: the card's A2A 1.0 JSON-RPC
// interface, else an A2A 0.3 JSON-RPC one. It must be on the agent's own
// origin.
func (a *remote) choose(c *card) (*endpoint, error) {
	var cands []endpoint
	for _, i := range c.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") && major(i.ProtocolVersion) == "1" {
			cands = append(cands, endpoint{url: i.URL, tenant: i.Tenant})
		}
	}
	for _, i := range c.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") && major(i.ProtocolVersion) == "0" {
			cands = append(cands, endpoint{url: i.URL, legacy: true})
		}
	}
	if len(c.SupportedInterfaces) == 0 && c.URL != "" {
		// An A2A 0.3 card: url with its preferred transport (JSONRPC by
		// default), and further interfaces.
		if c.PreferredTransport == "" || strings.EqualFold(c.PreferredTransport, "JSONRPC") {
			cands = append(cands, endpoint{url: c.URL, legacy: true})
		}
		for _, i := range c.AdditionalInterfaces {
			if strings.EqualFold(i.Transport, "JSONRPC") {
				cands = append(cands, endpoint{url: i.URL, legacy: true})
			}
		}
	}
	if len(cands) == 0 {
		return nil, safef("its agent card offers no JSON-RPC interface in a protocol version heddle speaks (A2A 1.0 or 0.3)")
	}
	cardURL, _ := url.Parse(a.cardURL())
	for _, ep := range cands {
		u, err := cardURL.Parse(ep.url) // a relative URL is relative to the card
		if err != nil {
			continue
		}
		if sameOrigin(a.origin, u) {
			ep.url = u.String()
			return &ep, nil
		}
	}
	return nil, safef("its agent card names a JSON-RPC endpoint on another origin; heddle sends the agent's credentials only to the configured origin")
}

// major returns the major version of a protocol version ("1.0" → "1").
func major(v string) string {
	m, _, _ := strings.Cut(strings.TrimSpace(v), ".")
	return m
}

// describe builds the agent's tool from its card (nil before the card has
// been fetched).
func (a *remote) describe(c *card) *mcp.Tool {
	var b strings.Builder
	if c == nil {
		fmt.Fprintf(&b, "Send a message to the remote agent %s (over A2A) and return its answer.", a.name)
	} else {
		title := oneLine(c.Name)
		if title == "" {
			title = a.name
		}
		fmt.Fprintf(&b, "Send a message to the remote agent %s (over A2A) and return its answer.", title)
		if d := oneLine(c.Description); d != "" {
			fmt.Fprintf(&b, " %s", d)
		}
		for i, s := range c.Skills {
			if i == 0 {
				b.WriteString(" Skills:")
			} else {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s", oneLine(s.Name))
			if d := oneLine(s.Description); d != "" {
				fmt.Fprintf(&b, " (%s)", d)
			}
		}
	}
	f, t := false, true
	return a.classified(&mcp.Tool{
		Name:        a.name,
		Description: capText(b.String(), maxCardText),
		InputSchema: inputSchema,
		// A remote agent is open-world; whether what it does destroys
		// anything is for policy rules on tool.kind == "a2a" to say.
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &t},
	})
}

// inputSchema is the input of every a2a tool.
var inputSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"the message to send to the agent, in plain language"}},"required":["message"],"additionalProperties":false}`)

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// capText cuts s to at most n bytes, on a character boundary.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
