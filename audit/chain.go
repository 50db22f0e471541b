package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/heddlehq/heddle/internal/canonjson"
	"github.com/heddlehq/heddle/runtime"
)

// MinKeyBytes is the shortest key Open and Verify accept.
const MinKeyBytes = 32

// mac is chain.mac: the hex HMAC-SHA256 under key of prev (the previous
// record's MAC, as written) followed by body, the canonical JSON of the
// record without chain.mac.
func mac(key []byte, prev string, body []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(prev))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// chainPrefix starts the chain object in a record's canonical JSON before
// its MAC is set: keys are sorted, and every quote inside a string value is
// escaped, so its first occurrence is the record's own chain.
var chainPrefix = []byte(`"chain":{"prev":`)

// seal sets r's chain (seq, prev, and the MAC over the rest) and returns
// its line, without the newline.
func seal(key []byte, r *Record, seq uint64, prev string) ([]byte, error) {
	r.Chain = Chain{Seq: seq, Prev: prev}
	body, err := canonjson.Marshal(r)
	if err != nil {
		return nil, err
	}
	r.Chain.MAC = mac(key, prev, body)
	i := bytes.Index(body, chainPrefix)
	if i < 0 {
		return nil, fmt.Errorf("audit: a record's canonical JSON has no chain")
	}
	i += len(`"chain":{`)
	line := make([]byte, 0, len(body)+len(`"mac":"",`)+len(r.Chain.MAC))
	line = append(line, body[:i]...)
	line = append(line, `"mac":"`...)
	line = append(line, r.Chain.MAC...)
	line = append(line, `",`...)
	line = append(line, body[i:]...)
	return line, nil
}

// ArgsDigest is the digest a record holds of a call's arguments
// (runtime.ArgsDigest): an auditor who holds the arguments checks them
// against it.
func ArgsDigest(args map[string]any) string { return runtime.ArgsDigest(args) }
