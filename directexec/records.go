package directexec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// records writes the helper's wire format: a tag byte, a little-endian u32
// length and the payload, record after record.
type records struct{ b []byte }

func (w *records) add(tag byte, payload []byte) {
	w.b = append(w.b, tag)
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(payload)))
	w.b = append(w.b, payload...)
}

func (w *records) str(tag byte, s string) { w.add(tag, []byte(s)) }

func (w *records) u32(tag byte, v uint32) {
	w.add(tag, binary.LittleEndian.AppendUint32(nil, v))
}

func (w *records) u64(tag byte, v uint64) {
	w.add(tag, binary.LittleEndian.AppendUint64(nil, v))
}

func (w *records) bytes() []byte { return w.b }

// readRecords calls f for each record of b up to and including the 'Z'
// that ends them.
func readRecords(b []byte, f func(tag byte, payload []byte) error) error {
	for len(b) > 0 {
		if len(b) < 5 {
			return errors.New("truncated record header")
		}
		tag, n := b[0], binary.LittleEndian.Uint32(b[1:5])
		if uint64(len(b)-5) < uint64(n) {
			return fmt.Errorf("record %q: %d bytes announced, %d left", tag, n, len(b)-5)
		}
		if tag == 'Z' {
			return nil
		}
		if err := f(tag, b[5:5+n]); err != nil {
			return err
		}
		b = b[5+n:]
	}
	return errors.New("no end record")
}
