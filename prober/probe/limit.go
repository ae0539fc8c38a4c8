package probe

import "io"

// LimitedReader reads from R until N bytes were read, then fails with Err:
// a target's reply read up to a limit must fail past it, not end as
// io.LimitReader does (an EOF would read as the target closing).
type LimitedReader struct {
	R   io.Reader
	N   int64
	Err error
}

func (l *LimitedReader) Read(p []byte) (int, error) {
	if l.N <= 0 {
		return 0, l.Err
	}
	if int64(len(p)) > l.N {
		p = p[:l.N]
	}
	n, err := l.R.Read(p)
	l.N -= int64(n)
	return n, err
}
