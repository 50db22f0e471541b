package mcpfacade

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
)

// A Sealer seals the requestState of the facade's input_required results
// (MCP 2026-07-28) and opens what a host echoes: AES-256-GCM, so a state
// the host altered, or one sealed with another key, does not open. Each
// state is bound to the agent, the caller, the tool and a digest of the
// arguments of the call it belongs to, expires, and is accepted once. It is
// safe for concurrent use.
//
// The states it has accepted are remembered until they expire: in this
// process, or in a store a fleet shares (WithSpent), so that a fleet
// accepts each state once.
type Sealer struct {
	aeads []cipher.AEAD // the first seals; each opens
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex
	spent map[string]time.Time // id → expiry of the states accepted
	// pruned is when spent was last rid of expired ids.
	pruned time.Time
	// shared, when set, remembers the accepted states instead of spent.
	shared Spender
}

// A Spender remembers, for a fleet, the states that were accepted: Spend
// reports whether id is new (and records it until until), or an error when
// it cannot tell (the caller refuses the state).
type Spender interface {
	Spend(ctx context.Context, id string, until time.Time) (bool, error)
}

// WithSpent has s remember the states it accepts in sp, which a fleet
// shares, rather than in this process; it returns s.
func (s *Sealer) WithSpent(sp Spender) *Sealer {
	s.shared = sp
	return s
}

// DefaultStateTTL is how long a sealed requestState is accepted.
const DefaultStateTTL = 10 * time.Minute

// MinKeyLen is the shortest key NewSealer takes.
const MinKeyLen = 32

// maxSpent bounds the states a Sealer remembers having accepted; past it,
// new states are refused until old ones expire.
const maxSpent = 100_000

// maxUpstreamState bounds an upstream server's own requestState the facade
// wraps in its own.
const maxUpstreamState = 64 << 10

// NewSealer returns a Sealer with the keys in keys: one, or two separated
// by white space or a comma while a key rotates (the first seals, both
// open). Each key is at least MinKeyLen characters (a random string: say
// `openssl rand -base64 48`); keys are used through HKDF-SHA256, never
// shown. ttl 0 is DefaultStateTTL.
func NewSealer(keys string, ttl time.Duration) (*Sealer, error) {
	fields := strings.FieldsFunc(keys, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	switch {
	case len(fields) == 0:
		return nil, errors.New("the approval key is empty")
	case len(fields) > 2:
		return nil, fmt.Errorf("the approval key holds %d keys; give one, or two while rotating (the new one first)", len(fields))
	}
	var secrets [][]byte
	for i, f := range fields {
		if len(f) < MinKeyLen {
			return nil, fmt.Errorf("approval key %d of %d is %d characters; at least %d are needed (value not shown)", i+1, len(fields), len(f), MinKeyLen)
		}
		secrets = append(secrets, []byte(f))
	}
	return newSealer(secrets, ttl)
}

// RandomSealer returns a Sealer with a key of its own, made now: the states
// it seals open in this process only.
func RandomSealer(ttl time.Duration) *Sealer {
	s, err := newSealer([][]byte{[]byte(rand.Text() + rand.Text())}, ttl)
	if err != nil {
		panic(err) // a fixed-size key: cannot fail
	}
	return s
}

func newSealer(secrets [][]byte, ttl time.Duration) (*Sealer, error) {
	if ttl <= 0 {
		ttl = DefaultStateTTL
	}
	s := &Sealer{ttl: ttl, now: time.Now, spent: map[string]time.Time{}}
	for _, secret := range secrets {
		key, err := hkdf.Key(sha256.New, secret, nil, "heddle mcp facade requestState v1", 32)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		s.aeads = append(s.aeads, aead)
	}
	return s, nil
}

// state is what a sealed requestState holds.
type state struct {
	// Kind says what the host was asked: stateApproval, the facade's own
	// approval of the call; stateInput, an upstream server's input.
	Kind   string `json:"k"`
	Agent  string `json:"a"`
	Caller string `json:"c"` // callerDigest
	Tool   string `json:"t"`
	Args   string `json:"d"` // argsDigest
	// Expires is when the state stops being accepted (Unix ms).
	Expires int64 `json:"e"`
	// ID makes the state single-use.
	ID string `json:"n"`
	// Approved records that the call was approved in an earlier round.
	Approved bool `json:"p,omitempty"`
	// Upstream is the upstream server's own requestState (stateInput).
	Upstream string `json:"u,omitempty"`
	// Session is a session's initialize (stateSession: a sealed session
	// id, fleet.go).
	Session *sessionInit `json:"s,omitempty"`
}

const (
	stateApproval = "approval"
	stateInput    = "input"
	stateSession  = "session"
)

// binding is what a state must be bound to for a call to accept it.
type binding struct {
	agent, caller, tool, args string
}

func bind(agent string, caller heddle.Identity, tool string, args map[string]any) binding {
	return binding{agent: agent, caller: callerDigest(caller), tool: tool, args: argsDigest(args)}
}

// stateAAD is the additional data every state is sealed with.
var stateAAD = []byte("heddle/mcp-facade/requestState/v1")

// seal returns st, bound to b, as a requestState.
func (s *Sealer) seal(st state, b binding) (string, error) {
	return s.sealFor(st, b, s.ttl)
}

// sealFor is seal with an expiry of its own.
func (s *Sealer) sealFor(st state, b binding, ttl time.Duration) (string, error) {
	if len(st.Upstream) > maxUpstreamState {
		return "", diag.New(diag.RequestStateInvalid, "the upstream server's requestState is %d bytes; the facade carries at most %d", len(st.Upstream), maxUpstreamState)
	}
	st.Agent, st.Caller, st.Tool, st.Args = b.agent, b.caller, b.tool, b.args
	st.Expires = s.now().Add(ttl).UnixMilli()
	st.ID = rand.Text()
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	aead := s.aeads[0]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, stateAAD)), nil
}

// open returns the state sealed in text when it opens with one of the
// keys, is bound to b, has not expired and was not accepted before; it is
// then accepted. Otherwise the error is REQUEST_STATE_INVALID, saying why.
func (s *Sealer) open(ctx context.Context, text string, b binding) (*state, error) {
	st, err := s.unseal(text)
	if err != nil {
		return nil, err
	}
	if st.Kind == stateSession || st.Agent != b.agent || st.Caller != b.caller || st.Tool != b.tool || st.Args != b.args {
		return nil, diag.New(diag.RequestStateInvalid, "the requestState belongs to another call (another agent, caller, tool or arguments); start the call again without it")
	}
	if err := s.spend(ctx, st.ID, time.UnixMilli(st.Expires), s.now()); err != nil {
		return nil, err
	}
	return st, nil
}

// openSession returns the session a sealed session id holds, when it
// opens and has not expired; its binding is the caller's to check. A
// session id is not single-use: every request of the session carries it.
func (s *Sealer) openSession(id string) (*state, error) {
	st, err := s.unseal(id)
	if err != nil {
		return nil, err
	}
	if st.Kind != stateSession {
		return nil, diag.New(diag.RequestStateInvalid, "not a session")
	}
	return st, nil
}

// unseal opens text with one of the keys, and refuses it when it has
// expired: REQUEST_STATE_INVALID saying why.
func (s *Sealer) unseal(text string) (*state, error) {
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(text) > 2*maxUpstreamState {
		return nil, diag.New(diag.RequestStateInvalid, "the requestState is not one this server sealed; start the call again without it")
	}
	var plain []byte
	for _, aead := range s.aeads {
		if len(raw) < aead.NonceSize() {
			break
		}
		if plain, err = aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], stateAAD); err == nil {
			break
		}
	}
	if plain == nil {
		return nil, diag.New(diag.RequestStateInvalid, "the requestState was altered, or was sealed with a key this server does not hold; start the call again without it")
	}
	var st state
	if err := json.Unmarshal(plain, &st); err != nil || st.ID == "" {
		return nil, diag.New(diag.RequestStateInvalid, "the requestState is not one this server sealed; start the call again without it")
	}
	now := s.now()
	expires := time.UnixMilli(st.Expires)
	if !now.Before(expires) {
		return nil, diag.New(diag.RequestStateInvalid, "the requestState expired %s ago; start the call again without it", now.Sub(expires).Round(time.Second))
	}
	return &st, nil
}

// spend accepts the state id once.
func (s *Sealer) spend(ctx context.Context, id string, expires, now time.Time) error {
	if s.shared != nil {
		fresh, err := s.shared.Spend(ctx, id, expires)
		switch {
		case err != nil:
			return err
		case !fresh:
			return diag.New(diag.RequestStateInvalid, "the requestState was used already: each is accepted once; start the call again without it")
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, used := s.spent[id]; used {
		return diag.New(diag.RequestStateInvalid, "the requestState was used already: each is accepted once; start the call again without it")
	}
	// Expired ids are forgotten once a minute, and at most once a second
	// while the bound is reached.
	if since := now.Sub(s.pruned); since >= time.Minute || len(s.spent) >= maxSpent && since >= time.Second {
		s.pruned = now
		for k, exp := range s.spent {
			if !now.Before(exp) {
				delete(s.spent, k)
			}
		}
	}
	if len(s.spent) >= maxSpent {
		return diag.New(diag.RequestStateInvalid, "too many calls await their host's input; try again later")
	}
	s.spent[id] = expires
	return nil
}

// callerDigest identifies a caller without holding their claims.
func callerDigest(id heddle.Identity) string {
	b, _ := json.Marshal(struct {
		S string            `json:"s"`
		R []string          `json:"r"`
		C map[string]string `json:"c"`
	}{id.Subject, id.Roles, id.Claims})
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// argsDigest identifies a call's arguments (encoding/json sorts keys).
func argsDigest(args map[string]any) string {
	b, _ := json.Marshal(args)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
