package server

import (
	"fmt"
	"testing"

	"github.com/probelet/probelet/prober"
)

func reasons(evs []prober.Event) string {
	s := ""
	for _, ev := range evs {
		s += ev.Reason
	}
	return s
}

func TestEventLogRing(t *testing.T) {
	tests := []struct {
		size int
		add  string
		want string
	}{
		{size: 3, add: "", want: ""},
		{size: 3, add: "ab", want: "ab"},
		{size: 3, add: "abc", want: "abc"},
		{size: 3, add: "abcd", want: "bcd"},
		{size: 3, add: "abcdefg", want: "efg"},
		{size: 1, add: "abc", want: "c"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%s", tt.size, tt.add), func(t *testing.T) {
			l := newEventLog(tt.size)
			for _, r := range tt.add {
				l.add(prober.Event{Reason: string(r)})
			}
			if got := reasons(l.snapshot()); got != tt.want {
				t.Errorf("retained %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEventLogFollowers(t *testing.T) {
	l := newEventLog(4)
	l.add(prober.Event{Reason: "a"})
	past, ch, cancel := l.follow(1)
	if reasons(past) != "a" {
		t.Fatalf("past %q", reasons(past))
	}
	l.add(prober.Event{Reason: "b"})
	l.add(prober.Event{Reason: "c"}) // the follower's buffer is full: dropped, not blocked
	if got := (<-ch).Reason; got != "b" {
		t.Fatalf("followed %q, want b", got)
	}
	if _, dropped, _ := l.followers.Stats(); dropped != 1 {
		t.Errorf("dropped %d, want 1", dropped)
	}
	cancel()
	cancel() // idempotent
	l.add(prober.Event{Reason: "d"})
	if _, open := <-ch; open {
		t.Error("a cancelled follower still receives")
	}
}
