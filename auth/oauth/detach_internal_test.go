package oauth

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestDetachable: a context derived from a detachable before detach is
// cancelled with the parent's error when the parent ends first, and never
// when detach comes first — also when the parent then ends, which the
// derived context's own goroutine sees (it read a nil Err after detach, and
// the context package panicked: "missing cancel error").
func TestDetachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Minute)
		d := newDetachable(parent)
		child, stop := context.WithCancel(d)
		defer stop()
		synctest.Wait() // the derived context's goroutine waits on d.Done()
		if _, ok := d.Deadline(); !ok {
			t.Error("before detach, the parent's deadline is not the detachable's")
		}
		d.detach()
		cancel()
		synctest.Wait()
		if d.Err() != nil || child.Err() != nil {
			t.Errorf("after detach, the parent's end cancelled: detachable %v, derived %v", d.Err(), child.Err())
		}
		if _, ok := d.Deadline(); ok {
			t.Error("a detached context has the parent's deadline")
		}
		select {
		case <-d.Done():
			t.Error("a detached context is done")
		default:
		}
	})
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		d := newDetachable(parent)
		child, stop := context.WithCancel(d)
		defer stop()
		cancel()
		synctest.Wait()
		d.detach()
		if !errors.Is(d.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
			t.Errorf("the parent ended before detach: detachable %v, derived %v, want context.Canceled", d.Err(), child.Err())
		}
		<-d.Done()
	})
}
