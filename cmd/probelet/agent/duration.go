package agent

import (
	"encoding/json"
	"reflect"
	"strconv"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("90s",
// "5m") in config files.
type Duration struct{ time.Duration }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string. Errors are type errors so the
// decoder names the key they belong to.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeOf(d.Duration)}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: "duration " + strconv.Quote(s), Type: reflect.TypeOf(d.Duration)}
	}
	d.Duration = v
	return nil
}
