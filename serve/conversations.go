package serve

import (
	"container/list"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/statestore"
)

// ConversationHeader names the conversation a request of the invoke API
// belongs to: the tools its model loaded with load_tools (a grant that
// says defer lists its tools only once they are loaded) are kept between
// its requests, for the caller who sent them. A request without it is a
// conversation of its own that ends with it.
const ConversationHeader = "Heddle-Conversation"

// The bounds of the conversations a server keeps: at most
// MaxConversations (the least recently used is forgotten first), each
// forgotten after ConversationIdle without a request. A conversation
// forgotten starts again with nothing loaded. A conversation's id is 1 to
// MaxConversationID characters of [A-Za-z0-9._:-].
const (
	MaxConversations  = 10000
	ConversationIdle  = 30 * time.Minute
	MaxConversationID = 128
)

// conversations holds the views of the conversations the invoke API has
// seen, keyed by caller, agent and id, so that no caller reaches another's
// view. Only toolsets with deferred grants need them; a view of any other
// is the toolset itself. It is safe for concurrent use.
type conversations struct {
	max  int
	idle time.Duration
	now  func() time.Time
	// shared, when set, keeps the loaded tools in the store a fleet
	// shares (serve.state kind redis) instead of here.
	shared *statestore.Conversations

	mu    sync.Mutex
	order *list.List // of *conversation, the most recently used first
	byKey map[conversationKey]*list.Element
}

type conversationKey struct{ subject, agent, id string }

type conversation struct {
	key  conversationKey
	view *runtime.View
	used time.Time
}

func newConversations() *conversations {
	return &conversations{max: MaxConversations, idle: ConversationIdle, now: time.Now,
		order: list.New(), byKey: map[conversationKey]*list.Element{}}
}

// viewKeep returns the view of the request's conversation with ts's agent,
// ctx being the request's context with its caller:
// a new one for a request without the header; otherwise the one kept for
// its caller and id, made when there is none. A view kept from an earlier
// toolset of the agent (before a reload) is carried over to ts with what
// it loaded. A malformed id is REQUEST_INVALID. keep, called once the
// request's call has ended, keeps what it loaded in the shared store (a
// no-op without one); a store that cannot be reached is STATE_UNAVAILABLE,
// from view or from keep.
func (c *conversations) viewKeep(ctx context.Context, r *http.Request, ts *runtime.Toolset) (v *runtime.View, keep func(context.Context) error, err error) {
	id := r.Header.Get(ConversationHeader)
	if id == "" {
		return ts.NewView(), noKeep, nil
	}
	if !validConversationID(id) {
		return nil, nil, diag.New(diag.RequestInvalid, "the %s header must be 1 to %d characters of A-Z, a-z, 0-9 and ._:-", ConversationHeader, MaxConversationID)
	}
	return c.viewFor(ctx, ts, heddle.Caller(ctx).Subject, id)
}

// viewFor is viewKeep for the conversation id of subject.
func (c *conversations) viewFor(ctx context.Context, ts *runtime.Toolset, subject, id string) (*runtime.View, func(context.Context) error, error) {
	if c.shared != nil && ts.Deferred() {
		return c.sharedView(ctx, ts, subject, id)
	}
	if c.shared != nil { // nothing to load: every view is the same
		return ts.NewView(), noKeep, nil
	}
	v, err := c.localView(ctx, ts, conversationKey{subject: subject, agent: ts.Agent(), id: id})
	return v, noKeep, err
}

// view is viewKeep for a request that loads nothing (a listing), its
// caller in its context.
func (c *conversations) view(r *http.Request, ts *runtime.Toolset) (*runtime.View, error) {
	v, _, err := c.viewKeep(r.Context(), r, ts)
	return v, err
}

// noKeep is the keep of a view with nothing to keep elsewhere.
func noKeep(context.Context) error { return nil }

// sharedView is the conversation's view made from the tools it loaded, as
// the shared store keeps them; keep adds those it loads.
func (c *conversations) sharedView(ctx context.Context, ts *runtime.Toolset, subject, id string) (*runtime.View, func(context.Context) error, error) {
	loaded, err := c.shared.Loaded(ctx, ts.Agent(), subject, id)
	if err != nil {
		return nil, nil, err
	}
	v := ts.NewView()
	if len(loaded) > 0 {
		if _, err := v.Load(ctx, loaded...); err != nil {
			return nil, nil, err
		}
	}
	keep := func(ctx context.Context) error {
		var added []string
		for _, n := range v.Loaded() {
			if !slices.Contains(loaded, n) {
				added = append(added, n)
			}
		}
		return c.shared.Add(ctx, ts.Agent(), subject, id, added)
	}
	return v, keep, nil
}

// localView is the conversation's view kept in this worker.
func (c *conversations) localView(ctx context.Context, ts *runtime.Toolset, key conversationKey) (*runtime.View, error) {
	now := c.now()
	c.mu.Lock()
	c.expire(now)
	var cv *conversation
	if el, ok := c.byKey[key]; ok {
		cv = el.Value.(*conversation)
		c.order.MoveToFront(el)
	} else {
		cv = &conversation{key: key, view: ts.NewView()}
		c.byKey[key] = c.order.PushFront(cv)
		for c.order.Len() > c.max {
			c.remove(c.order.Back())
		}
	}
	cv.used = now
	old := cv.view
	c.mu.Unlock()
	v, err := old.On(ctx, ts)
	if err != nil {
		return nil, err
	}
	if v != old {
		c.mu.Lock()
		cv.view = v
		c.mu.Unlock()
	}
	return v, nil
}

// expire forgets the conversations idle since before now-idle.
func (c *conversations) expire(now time.Time) {
	for el := c.order.Back(); el != nil; el = c.order.Back() {
		if now.Sub(el.Value.(*conversation).used) < c.idle {
			return
		}
		c.remove(el)
	}
}

func (c *conversations) remove(el *list.Element) {
	delete(c.byKey, el.Value.(*conversation).key)
	c.order.Remove(el)
}

// len is how many conversations are kept.
func (c *conversations) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func validConversationID(id string) bool {
	if len(id) == 0 || len(id) > MaxConversationID {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}
