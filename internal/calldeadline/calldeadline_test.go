package calldeadline

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestScope: a call's context ends at its deadline (DeadlineExceeded,
// expired) or with its caller's (the caller's error, not expired), and End
// cancels it at once.
func TestScope(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dl := time.Now().Add(50 * time.Millisecond)
			s := New(context.Background(), dl)
			defer s.End()
			if d, ok := s.Context().Deadline(); !ok || !d.Equal(dl) {
				t.Errorf("Deadline = %v, %v; want %v", d, ok, dl)
			}
			if s.Context().Err() != nil || Expired(s.Context()) {
				t.Fatal("ended before its deadline")
			}
			<-s.Context().Done()
			if got := time.Since(dl); got != 0 {
				t.Errorf("ended %v after its deadline", got)
			}
			if !errors.Is(s.Context().Err(), context.DeadlineExceeded) || !Expired(s.Context()) {
				t.Errorf("Err = %v, expired = %v; want DeadlineExceeded, true", s.Context().Err(), Expired(s.Context()))
			}
		})
	})
	t.Run("caller-cancels", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			parent, cancel := context.WithCancel(context.Background())
			s := New(parent, time.Now().Add(time.Minute))
			defer s.End()
			cancel()
			<-s.Context().Done()
			if !errors.Is(s.Context().Err(), context.Canceled) || Expired(s.Context()) {
				t.Errorf("Err = %v, expired = %v; want Canceled, false", s.Context().Err(), Expired(s.Context()))
			}
		})
	})
	t.Run("caller-deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			parent, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			s := New(parent, time.Now().Add(time.Minute))
			defer s.End()
			<-s.Context().Done()
			if !errors.Is(s.Context().Err(), context.DeadlineExceeded) || Expired(s.Context()) {
				t.Errorf("Err = %v, expired = %v; want DeadlineExceeded, false", s.Context().Err(), Expired(s.Context()))
			}
		})
	})
	t.Run("end", func(t *testing.T) {
		s := New(context.Background(), time.Now().Add(time.Minute))
		s.End()
		if !errors.Is(s.Context().Err(), context.Canceled) || Expired(s.Context()) {
			t.Errorf("End: Err = %v; want Canceled at once", s.Context().Err())
		}
	})
}
