package msglimit

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Bounds of what a Scanner keeps.
const (
	maxKey       = 16   // the longest member name it reads ("jsonrpc" is 7)
	maxIDBytes   = 256  // the longest id it reads
	maxResponses = 1024 // the most responses of one batch it reports
)

// Scanner reads one JSON-RPC message, or batch of messages, written to it
// in pieces of any size, and keeps the id of each response in it: a message
// object with an "id" and no "method", at the top level or as an element of
// a top-level array. Members are matched by their exact names, as go-sdk
// matches them; the id may come anywhere in its message, before its result
// or after it. A Scanner holds a few hundred bytes whatever it reads, and
// crosses strings, where a large message spends its bytes, at the speed of
// bytes.IndexByte.
//
// It does not validate the JSON: on input that is not JSON it reports what
// it found. The zero value is ready to use; a Scanner reads one message.
type Scanner struct {
	depth    int  // nesting of objects and arrays
	msgDepth int  // the depth of message objects: 1, 2 in a batch; -1 when the input is neither
	inMsg    bool // within a message object, at msgDepth
	inStr    bool
	escaped  bool

	// The member of the message object being read.
	keyNext bool // a member name comes next
	inKey   bool // the string being read is a member name
	key     []byte
	keyLong bool // the name was longer than maxKey
	haveKey bool // a name was read; its value comes after the colon
	capture bool // the value being read is the id's
	id      []byte
	idLong  bool
	hasID   bool
	hasMeth bool

	responses []jsonrpc.ID
}

// Write reads p as the next piece of the message. It never fails.
func (s *Scanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if s.inStr {
			p = s.readString(p)
			continue
		}
		b := p[0]
		p = p[1:]
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			s.inStr = true
			if s.inMsg && s.depth == s.msgDepth && s.keyNext {
				s.inKey, s.keyNext, s.key, s.keyLong = true, false, s.key[:0], false
				continue
			}
		case '{', '[':
			if s.msgDepth == 0 {
				s.msgDepth = 1
				if b == '[' {
					s.msgDepth = 2
				}
			}
			s.depth++
			if s.depth == s.msgDepth && b == '{' && !s.inMsg {
				s.startMessage()
				continue
			}
		case '}', ']':
			if s.inMsg && s.depth == s.msgDepth {
				s.endValue()
				s.endMessage()
				s.depth--
				continue
			}
			s.depth--
		case ':':
			if s.inMsg && s.depth == s.msgDepth && s.haveKey {
				s.startValue()
				continue
			}
		case ',':
			if s.inMsg && s.depth == s.msgDepth {
				s.endValue()
				s.keyNext = true
				continue
			}
		default:
			if s.msgDepth == 0 {
				s.msgDepth = -1 // a scalar: no message
			}
		}
		s.keep(b)
	}
	return n, nil
}

// readString reads p within a string, up to its closing quote or the end of
// p, and returns the rest.
func (s *Scanner) readString(p []byte) []byte {
	if s.escaped {
		s.escaped = false
		s.keep(p[0])
		return p[1:]
	}
	end := bytes.IndexByte(p, '"')
	if end < 0 {
		end = len(p)
	}
	if i := bytes.IndexByte(p[:end], '\\'); i >= 0 {
		s.keepAll(p[:i+1])
		s.escaped = true
		return p[i+1:]
	}
	s.keepAll(p[:end])
	if end == len(p) {
		return nil
	}
	s.inStr = false
	if s.inKey {
		s.inKey, s.haveKey = false, true
	} else {
		s.keep('"')
	}
	return p[end+1:]
}

// keep adds b to the name or id being read, if any.
func (s *Scanner) keep(b byte) {
	switch {
	case s.inKey:
		if len(s.key) < maxKey {
			s.key = append(s.key, b)
		} else {
			s.keyLong = true
		}
	case s.capture:
		if len(s.id) < maxIDBytes {
			s.id = append(s.id, b)
		} else {
			s.idLong = true
		}
	}
}

func (s *Scanner) keepAll(p []byte) {
	switch {
	case s.inKey:
		if len(s.key)+len(p) <= maxKey {
			s.key = append(s.key, p...)
		} else {
			s.keyLong = true
		}
	case s.capture:
		if len(s.id)+len(p) <= maxIDBytes {
			s.id = append(s.id, p...)
		} else {
			s.idLong = true
		}
	}
}

func (s *Scanner) startMessage() {
	s.inMsg, s.keyNext, s.haveKey, s.capture = true, true, false, false
	s.hasID, s.hasMeth, s.idLong = false, false, false
	s.id = s.id[:0]
}

// startValue starts the value of the member whose name was read.
func (s *Scanner) startValue() {
	s.haveKey = false
	switch s.name() {
	case "id":
		s.capture, s.id, s.idLong = true, s.id[:0], false
	case "method":
		s.hasMeth = true
	}
}

// name is the member name read, unescaped.
func (s *Scanner) name() string {
	if s.keyLong {
		return ""
	}
	if bytes.IndexByte(s.key, '\\') < 0 {
		return string(s.key)
	}
	var n string
	if json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &n) != nil {
		return ""
	}
	return n
}

// endValue ends the value of a member at the message's own level.
func (s *Scanner) endValue() {
	if s.capture {
		s.capture = false
		s.hasID = !s.idLong // a later "id" replaces an earlier one, as in go-sdk's decoder
	}
}

func (s *Scanner) endMessage() {
	s.inMsg = false
	if !s.hasID || s.hasMeth || len(s.responses) >= maxResponses {
		return
	}
	var raw any
	if json.Unmarshal(s.id, &raw) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(raw); err == nil && id.IsValid() {
		s.responses = append(s.responses, id)
	}
}

// Responses returns the ids of the responses read so far, in order.
func (s *Scanner) Responses() []jsonrpc.ID { return s.responses }
