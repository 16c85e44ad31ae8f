package ros

import (
	"context"
	"testing"
	"time"
)

// ManualClock.Waiting reports what a blocked WaitUntil waits for, and
// nothing once it has returned, however it returned.
func TestManualClockWaiting(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		until time.Duration // WaitUntil's target, from start
		move  func(c *ManualClock, wake chan struct{})
		want  WaitResult
	}{
		{"reached", time.Second, func(c *ManualClock, _ chan struct{}) { c.Advance(time.Second) }, Reached},
		{"woken", time.Second, func(_ *ManualClock, wake chan struct{}) { wake <- struct{}{} }, Woken},
		{"jumped", time.Second, func(c *ManualClock, _ chan struct{}) { c.Set(start.Add(-time.Second)) }, Jumped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, wake := NewManualClock(start), make(chan struct{})
			if _, ok := c.Waiting(); ok {
				t.Fatal("a waiter before any WaitUntil")
			}
			res := make(chan WaitResult, 1)
			go func() { res <- c.WaitUntil(context.Background(), start.Add(tc.until), wake) }()
			deadline := time.Now().Add(10 * time.Second)
			for {
				if w, ok := c.Waiting(); ok {
					if !w.Equal(start.Add(tc.until)) {
						t.Fatalf("Waiting = %v, want %v", w, start.Add(tc.until))
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("WaitUntil never shows as waiting")
				}
				time.Sleep(100 * time.Microsecond)
			}
			tc.move(c, wake)
			if got := <-res; got != tc.want {
				t.Errorf("WaitUntil = %v, want %v", got, tc.want)
			}
			if w, ok := c.Waiting(); ok {
				t.Errorf("Waiting = %v after WaitUntil returned", w)
			}
		})
	}
}
