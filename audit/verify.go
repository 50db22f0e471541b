package audit

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/heddlehq/heddle/internal/canonjson"
)

// BrokenError names the first record at which a chain does not hold.
type BrokenError struct {
	File string
	Line int // 1-based
	// Seq is the record's chain.seq, or -1 when the line has none.
	Seq    int64
	Reason string
}

func (e *BrokenError) Error() string {
	seq := "no seq"
	if e.Seq >= 0 {
		seq = "seq " + strconv.FormatInt(e.Seq, 10)
	}
	return fmt.Sprintf("%s:%d (%s): %s", e.File, e.Line, seq, e.Reason)
}

// Summary is what Verify read.
type Summary struct {
	Records int
	// FirstSeq is the first record's seq: above 0 when the chain began in
	// a file not given (rotated away), which the first record names.
	FirstSeq, LastSeq uint64
	// LastMAC is the last record's MAC: an auditor who keeps it can tell
	// later that no record was cut from the end.
	LastMAC string
}

// Verify checks the chain of the files, read in the order given (the
// oldest rotated file first). It returns a *BrokenError for the first
// record that was changed, removed, reordered or added without the key, or
// an error reading a file.
func Verify(key []byte, files ...string) (Summary, error) {
	var s Summary
	for _, name := range files {
		if err := verifyFile(key, name, &s); err != nil {
			return s, err
		}
	}
	return s, nil
}

func verifyFile(key []byte, name string, s *Summary) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		broken := func(seq int64, format string, a ...any) error {
			return &BrokenError{File: name, Line: line, Seq: seq, Reason: fmt.Sprintf(format, a...)}
		}
		c, body, err := parseLine(sc.Bytes())
		if err != nil {
			return broken(-1, "not an audit record: %v", err)
		}
		seq := int64(c.Seq)
		if want := mac(key, c.Prev, body); !hmac.Equal([]byte(want), []byte(c.MAC)) {
			return broken(seq, "its MAC does not match: the record was changed, or written without the key")
		}
		switch {
		case s.Records == 0 && c.Seq == 0 && c.Prev != "":
			return broken(seq, "the first record of a chain names a previous record")
		case s.Records == 0:
			s.FirstSeq = c.Seq
		case c.Prev != s.LastMAC:
			return broken(seq, "chain.prev is not the MAC of the record before it (seq %d): a record was removed or moved", s.LastSeq)
		case c.Seq != s.LastSeq+1:
			return broken(seq, "seq %d follows seq %d", c.Seq, s.LastSeq)
		}
		s.Records++
		s.LastSeq, s.LastMAC = c.Seq, c.MAC
	}
	return sc.Err()
}

// parseLine returns a line's chain and the canonical JSON its MAC covers:
// the record without chain.mac.
func parseLine(b []byte) (Chain, []byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return Chain{}, nil, err
	}
	if d.More() {
		return Chain{}, nil, fmt.Errorf("more than one JSON value on the line")
	}
	cm, ok := m["chain"].(map[string]any)
	if !ok {
		return Chain{}, nil, fmt.Errorf("no chain")
	}
	var c Chain
	n, _ := cm["seq"].(json.Number)
	seq, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		return Chain{}, nil, fmt.Errorf("chain.seq is not a sequence number")
	}
	c.Seq = seq
	c.Prev, _ = cm["prev"].(string)
	c.MAC, _ = cm["mac"].(string)
	if _, ok := cm["prev"].(string); !ok || c.MAC == "" {
		return Chain{}, nil, fmt.Errorf("chain.prev or chain.mac is missing")
	}
	delete(cm, "mac")
	body, err := canonjson.Marshal(m)
	if err != nil {
		return Chain{}, nil, err
	}
	return c, body, nil
}
