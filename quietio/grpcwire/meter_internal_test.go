package grpcwire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"golang.org/x/net/http2"
)

// frames writes what write makes with a Framer, as a server would send it.
func frames(write func(fr *http2.Framer)) []byte {
	var b bytes.Buffer
	write(http2.NewFramer(&b, nil))
	return b.Bytes()
}

func repeated(n int, write func(fr *http2.Framer)) []byte {
	return frames(func(fr *http2.Framer) {
		for range n {
			write(fr)
		}
	})
}

// TestMeterBoundsFrames reads frames through a meter as the Framer does,
// the stream cut into reads of every size, and checks which end in which
// bound.
func TestMeterBoundsFrames(t *testing.T) {
	full := make([]byte, 16<<10)
	tests := []struct {
		name   string
		stream []byte
		budget int64
		want   error // nil: every frame read
	}{
		{name: "a reply's frames", budget: 1 << 20, stream: frames(func(fr *http2.Framer) {
			_ = fr.WriteSettings()
			_ = fr.WritePing(false, [8]byte{})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}, EndHeaders: true})
			_ = fr.WriteData(1, false, []byte{0, 0, 0, 0, 2, 8, 1})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}, EndHeaders: true, EndStream: true})
		})},
		{name: "freeFrames empty frames", budget: 1 << 20, stream: repeated(freeFrames, func(fr *http2.Framer) { _ = fr.WriteData(1, false, nil) })},
		{name: "one more", budget: 1 << 20, want: errFrames, stream: repeated(freeFrames+2, func(fr *http2.Framer) { _ = fr.WriteData(1, false, nil) })},
		{name: "window updates", budget: 1 << 20, want: errFrames, stream: repeated(freeFrames+2, func(fr *http2.Framer) { _ = fr.WriteWindowUpdate(0, 1) })},
		{name: "empty continuations", budget: 1 << 20, want: errFrames, stream: frames(func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}})
			for range freeFrames + 1 {
				_ = fr.WriteContinuation(1, false, nil)
			}
		})},
		{name: "full frames pay for themselves", budget: 64 << 20, stream: repeated(3*freeFrames/2, func(fr *http2.Framer) { _ = fr.WriteData(1, false, full) })},
		{name: "full frames past the budget", budget: 1 << 20, want: errors.New("the server sent over 1048576 bytes"),
			stream: repeated(100, func(fr *http2.Framer) { _ = fr.WriteData(1, false, full) })},
	}
	for _, tc := range tests {
		for _, chunk := range []int{1, 5, 9, 10, 4 << 10} {
			m := newMeter(chunked(tc.stream, chunk), tc.budget)
			fr := http2.NewFramer(io.Discard, m)
			var err error
			for err == nil {
				_, err = fr.ReadFrame()
			}
			got := err
			if errors.Is(err, io.EOF) {
				got = nil
			}
			if (got == nil) != (tc.want == nil) || (got != nil && got.Error() != tc.want.Error()) {
				t.Errorf("%s, read %d bytes at a time: err = %v, want %v", tc.name, chunk, err, tc.want)
			}
		}
	}
}

// chunked reads b at most n bytes at a time.
func chunked(b []byte, n int) io.Reader {
	return &chunkReader{b: b, n: n}
}

type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

func TestMeterResetsPerCall(t *testing.T) {
	stream := repeated(2*freeFrames, func(fr *http2.Framer) { _ = fr.WritePing(true, [8]byte{}) })
	m := newMeter(bytes.NewReader(stream), 1<<20)
	fr := http2.NewFramer(io.Discard, m)
	for call := range 2 {
		for range freeFrames {
			if _, err := fr.ReadFrame(); err != nil {
				t.Fatalf("call %d: %v", call, err)
			}
		}
		m.reset()
	}
}
