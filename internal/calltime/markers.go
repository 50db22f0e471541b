package main

import (
	"fmt"
	"strings"
)

// The markers in docs/performance.md between which the tables go.
const (
	beginMarker = "<!-- calltime:begin -->"
	endMarker   = "<!-- calltime:end -->"
)

// replaceMarked returns doc with what lies between the begin and end
// markers replaced by body, the markers kept on lines of their own. Nothing
// else changes. Each marker must appear exactly once, begin before end:
// otherwise it is an error, never an append.
func replaceMarked(doc, body string) (string, error) {
	begin, err := markerAt(doc, beginMarker)
	if err != nil {
		return "", err
	}
	end, err := markerAt(doc, endMarker)
	if err != nil {
		return "", err
	}
	if end < begin {
		return "", fmt.Errorf("%s comes before %s", endMarker, beginMarker)
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	head := doc[:begin+len(beginMarker)]
	return head + "\n" + body + doc[end:], nil
}

// markerAt returns the offset of the one occurrence of marker in doc.
func markerAt(doc, marker string) (int, error) {
	switch n := strings.Count(doc, marker); n {
	case 0:
		return 0, fmt.Errorf("no %s marker", marker)
	case 1:
		return strings.Index(doc, marker), nil
	default:
		return 0, fmt.Errorf("%s appears %d times; it must appear once", marker, n)
	}
}
